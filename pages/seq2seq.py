"""Encoder-decoder decoding: the trained seq2seq-tiny on the sidebar's sentence, one greedy step at a time
(each output fed back in), or teacher forcing (the whole shifted target at once, as in training).
Per step: decoder self-attention with its look-ahead triangle, the new token's cross-attention over the source,
and the top-5 next tokens. Computations and figures: viz/seq2seq.py.
"""

import streamlit as st

from model.data import TASKS
from model.errors import HeadlightError
from ui.downloads import download_buttons
from ui.state import get_model, sidebar
from viz import seq2seq as vs
from viz.export import heatmap_figure

MODEL = "seq2seq-tiny"
TASK_HELP = {"copy": "copy: output = input tokens (cross-attention: a diagonal)",
             "reverse": "reverse: input tokens backwards (an anti-diagonal)",
             "swap": "swap: neighbours trade places, x2 x1 x4 x3 … (a zig-zag)"}


@st.cache_resource(max_entries=32, show_spinner="Decoding…")
def decoding(device: str, text: str, task: str, teacher: bool) -> vs.DecodingRun:
    """Shared across sessions and treated as immutable."""
    model = get_model(MODEL, device)
    return vs.teacher_forced_run(model, text, task) if teacher else vs.greedy_run(model, text, task)


view = sidebar()
st.title("Encoder-decoder decoding")
st.caption(f"This page always uses **{MODEL}**, a small encoder-decoder (2 + 2 layers × 4 heads, d_model 128) "
           "trained here on copy, reverse and swap; the sidebar's model choice applies to the other pages. "
           "Its tokenizer lowercases and knows about 4,000 English word pieces; anything else becomes `<unk>`.")
if not view.text.strip():
    st.stop()

c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
task = c1.radio("Task", TASKS, horizontal=True, key="task", format_func=str.capitalize,
                help="\n\n".join(TASK_HELP.values()))
teacher = c2.toggle("Teacher forcing (training view)", key="teacher_forcing",
                    help="Off: greedy decoding, each output fed back in (inference). On: the whole correct target, "
                         "shifted right, in one pass (training).")
try:
    model = get_model(MODEL, view.device)
    run = decoding(view.device, view.text, task, teacher)
except HeadlightError as exc:
    st.error(str(exc), icon="⚠️")
    st.stop()
n_layers, n_heads = model.config.n_decoder_layers, model.config.n_heads
layer = c3.selectbox("Decoder layer", range(n_layers), index=n_layers - 1, key="s2s_layer")
head = c4.selectbox("Head", ["mean", *range(n_heads)], key="s2s_head",
                    format_func=lambda h: "mean of heads" if h == "mean" else f"Head {h}")

if run.truncated:
    st.warning(f"The text has {run.n_tokens_untruncated - 2:,} tokens; {MODEL} reads only the first "
               f"{len(run.source_tokens) - 2} (its limit).", icon="⚠️")
n_unk = run.source_tokens.count("<unk>")
if n_unk:
    st.info(f"{n_unk} word(s) are unknown to this model's vocabulary and became `<unk>` (it still moves them).")

st.markdown("**Source** (the task token first, `<eos>` last)")
st.code(" ".join(run.source_tokens), language=None, wrap_lines=True)
label = "Teacher-forced target (correct tokens)" if teacher else "Greedy output"
st.markdown(f"**{label}**")
st.code(" ".join(run.output_tokens), language=None, wrap_lines=True)
if not teacher:
    if run.correct:
        st.success(f"Correct: the output is the {task} of the source tokens.", icon="✅")
    else:
        st.warning("Not the task's exact answer. Expected:", icon="✖️")
        st.code(" ".join(run.expected), language=None, wrap_lines=True)

n_steps = len(run.steps)
ss = st.session_state
if not isinstance(ss.get("step"), int) or not 1 <= ss["step"] <= n_steps:
    ss["step"] = min(max(ss.get("step", 1) if isinstance(ss.get("step"), int) else 1, 1), n_steps)
if n_steps > 1:
    step = st.slider("Decoding step", 1, n_steps, key="step",
                     help="Step t feeds the t tokens so far into the decoder and emits the next one.")
else:
    step = 1
    st.caption("One decoding step.")
s = run.steps[step - 1]
st.markdown(f"**Step {step} of {n_steps}**: decoder input ({len(s.inputs)} tokens)")
st.code(" ".join(s.inputs) + f"   →   {s.chosen}", language=None, wrap_lines=True)

title = f"{MODEL} · {task} · {vs.head_name(layer, head)}"
left, right = st.columns(2)
with left:
    fig, mat, blocked, labels = vs.self_attention_figure(run, step, layer, head, full=teacher, lecture=view.lecture)
    st.plotly_chart(fig, key="s2s_self")
    download_buttons("s2s-self", lambda: heatmap_figure(mat, labels, labels, title=f"Decoder self-attention · {title}",
                                                        subtitle=view.text, masked=blocked, vmin=0, vmax=1),
                     mat, labels, labels, f"seq2seq-{task}-decoder-self-step{step}")
with right:
    fig, cmat, rows = vs.cross_figure(run, step, layer, head, full=teacher, lecture=view.lecture)
    st.plotly_chart(fig, key="s2s_cross")
    download_buttons("s2s-cross", lambda: heatmap_figure(cmat, rows, run.source_tokens, title=f"Cross-attention · "
                                                         f"{title}", subtitle=view.text, vmin=0, vmax=1,
                                                         xlabel="source", ylabel="decoder input"),
                     cmat, rows, run.source_tokens, f"seq2seq-{task}-cross-step{step}")
left, right = st.columns(2)
with left:
    st.plotly_chart(vs.cross_row_figure(run, step, layer, head, lecture=view.lecture), key="s2s_row")
with right:
    st.plotly_chart(vs.topk_figure(run, step, lecture=view.lecture), key="s2s_topk")
    probs, prow, pcol = vs.topk_table(run)
    download_buttons("s2s-topk", lambda: heatmap_figure(probs, prow, pcol, title=f"Top-5 next tokens · {MODEL}",
                                                        subtitle=view.text, vmin=0, vmax=1),
                     probs, prow, pcol, f"seq2seq-{task}-top5")
st.caption("Grey ✕ cells are blocked by the look-ahead mask (a position may not see later ones). The red outline "
           "marks this step's row. In teacher forcing, every row is computed at once from the correct target; "
           "in greedy decoding each step runs the decoder again on its own earlier outputs.")
