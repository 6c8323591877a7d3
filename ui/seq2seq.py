"""Streamlit pieces of the Encoder-decoder decoding page: the controls, the run's summary (source, output, the
"Correct" banner), the step slider and the four figures with their exports."""

from __future__ import annotations

import streamlit as st

from analysis.decoding import DecodingRun
from model.data import TASKS
from viz import seq2seq as vs

from .state import View, md_escape
from .widgets import Export, chart

MODEL = "seq2seq-tiny"
TASK_HELP = {"copy": "copy: output = input tokens (cross-attention: a diagonal)",
             "reverse": "reverse: input tokens backwards (an anti-diagonal)",
             "swap": "swap: neighbours trade places, x2 x1 x4 x3 … (a zig-zag)"}


def controls(model) -> tuple[str, bool, int, int | str]:
    """Task, teacher forcing, decoder layer and head ("mean" = mean of heads)."""
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    task = c1.radio("Task", TASKS, horizontal=True, key="task", format_func=str.capitalize,
                    help="\n\n".join(TASK_HELP.values()))
    teacher = c2.toggle("Teacher forcing (training view)", key="teacher_forcing",
                        help="Off: greedy decoding, each output fed back in (inference). On: the whole correct "
                             "target, shifted right, in one pass (training).")
    n_layers, n_heads = model.config.n_decoder_layers, model.config.n_heads
    layer = c3.selectbox("Decoder layer", range(n_layers), index=n_layers - 1, key="s2s_layer")
    head = c4.selectbox("Head", ["mean", *range(n_heads)], key="s2s_head",
                        format_func=lambda h: "mean of heads" if h == "mean" else f"Head {h}")
    return task, teacher, layer, head


def summary(run: DecodingRun, task: str, teacher: bool, unknown_words: list[str]) -> None:
    if run.truncated:
        st.warning(f"The text has {run.n_tokens_untruncated - 2:,} tokens; {MODEL} reads only the first "
                   f"{len(run.source_tokens) - 2} (its limit).", icon="⚠️")
    if unknown_words:
        st.info(f"Unknown to this model's vocabulary, so shown as `<unk>` (it still moves them): "
                f"{', '.join(md_escape(w) for w in unknown_words)}")
    st.markdown("**Source** (the task token first, `<eos>` last)")
    st.code(" ".join(run.source_tokens), language=None, wrap_lines=True)
    st.markdown(f"**{'Teacher-forced target (correct tokens)' if teacher else 'Greedy output'}**")
    st.code(" ".join(run.output_tokens), language=None, wrap_lines=True)
    if teacher:
        return
    if run.correct:
        st.success(f"Correct: the output is the {task} of the source tokens.", icon="✅")
    else:
        st.warning("Not the task's exact answer. Expected:", icon="✖️")
        st.code(" ".join(run.expected), language=None, wrap_lines=True)


def step_slider(run: DecodingRun) -> int:
    n_steps, ss = len(run.steps), st.session_state
    if not isinstance(ss.get("step"), int) or not 1 <= ss["step"] <= n_steps:
        ss["step"] = min(max(ss.get("step", 1) if isinstance(ss.get("step"), int) else 1, 1), n_steps)
    if n_steps == 1:
        st.caption("One decoding step.")
        return 1
    return st.slider("Decoding step", 1, n_steps, key="step",
                     help="Step t feeds the t tokens so far into the decoder and emits the next one.")


def figures(view: View, run: DecodingRun, step: int, layer: int, head: int | str, teacher: bool) -> None:
    s = run.steps[step - 1]
    st.markdown(f"**Step {step} of {len(run.steps)}**: decoder input ({len(s.inputs)} tokens)")
    st.code(" ".join(s.inputs) + f"   →   {s.chosen}", language=None, wrap_lines=True)
    title = f"{MODEL} · {run.task} · {vs.head_name(layer, head)}"
    name = f"seq2seq-{run.task}"
    left, right = st.columns(2)
    with left:
        fig, mat, blocked, labels = vs.self_attention_figure(run, step, layer, head, full=teacher,
                                                             lecture=view.lecture)
        chart(fig, "s2s_self", Export(mat, labels, labels, f"Decoder self-attention · {title}", view.text,
                                      f"{name}-decoder-self-step{step}", heatmap=dict(masked=blocked, vmin=0, vmax=1)))
    with right:
        fig, cmat, rows = vs.cross_figure(run, step, layer, head, full=teacher, lecture=view.lecture)
        chart(fig, "s2s_cross", Export(cmat, rows, run.source_tokens, f"Cross-attention · {title}", view.text,
                                       f"{name}-cross-step{step}", heatmap=dict(
                                           vmin=0, vmax=1, xlabel="source", ylabel="decoder input")))
    left, right = st.columns(2)
    left.plotly_chart(vs.cross_row_figure(run, step, layer, head, lecture=view.lecture), key="s2s_row")
    with right:
        probs, prow, pcol = vs.topk_table(run)
        chart(vs.topk_figure(run, step, lecture=view.lecture), "s2s_topk", Export(
            probs, prow, pcol, f"Top-5 next tokens · {MODEL}", view.text, f"{name}-top5", heatmap=dict(vmin=0, vmax=1)))
    st.caption("Grey ✕ cells are blocked by the look-ahead mask (a position may not see later ones). The red outline "
               "marks this step's row. In teacher forcing, every row is computed at once from the correct target; "
               "in greedy decoding each step runs the decoder again on its own earlier outputs.")
