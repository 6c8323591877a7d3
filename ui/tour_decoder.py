"""The guided tour's decoder steps (12 masked self-attention, 13 cross-attention, 14 output probabilities), on the
model the sidebar model's kind calls for (viz.tour.decoder_source: its config, never its name):

    encoder (MiniLM, multilingual-e5-small)     seq2seq-tiny for all three: the sidebar's model has no decoder
    decoder-only (SmolLM2, a GPT-2 folder)      12: its own masked self-attention (the sidebar's layer and head),
                                                13: seq2seq-tiny's cross-attention (it has no encoder to attend to),
                                                14: its own next-token probabilities after the sentence
    encoder-decoder (seq2seq-tiny, a translator, a BART / Marian folder, paper-base)   its own decoder, greedy
                                                decoding on the sentence (a translator's SSRU: its forget gate)

Each step says, above its figure, whose decoder it shows and why. Numbers: ui.runs (analysis.decoding,
analysis.stages, the trace's next-token distribution); figures: viz.seq2seq, viz.steps, viz.alignment, viz.tour.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from i18n import t
from model import models_with
from model.data import TASKS
from viz import alignment as va
from viz import seq2seq as vs
from viz import tour as vt
from viz.model_notes import tour_formula
from viz.steps import build_stages, stage_figure
from viz.theme import column_width, esc

from . import quiz, runs, store
from .readable import translator_notice
from .view import View, md_escape
from .widgets import Export, chart, model_facts

FALLBACK = models_with(tasks=True)[0]  # the small encoder-decoder trained here (copy / reverse / swap)
SSRU_FORMULA = (r"f_t = \sigma(W_f x_t + b_f),\quad c_t = f_t \odot c_{t-1} + (1 - f_t) \odot W x_t,\quad "
                r"h_t = \operatorname{ReLU}(c_t)")


def decoder_model(view: View, key: str) -> str:
    """The model whose decoder step `key` shows: the sidebar's own (viz.tour.decoder_source "own"), or seq2seq-tiny."""
    return view.model_name if vt.decoder_source(key, view.model.config.kind) == "own" else FALLBACK


def _loaded(view: View, name: str):
    return view.model if name == view.model_name else store.get_model(name, view.device)


def ssru(loaded) -> bool:
    """Whether an encoder-decoder's decoder has an SSRU in place of masked self-attention (a Bergamot translator)."""
    return loaded.config.kind == "encoder-decoder" and loaded.config.decoder_mixer == "ssru"


def formula(view: View, key: str, lg: str) -> str:
    """The step's formula for the model it shows (its output bias, its kind; an SSRU's recurrence)."""
    loaded = _loaded(view, decoder_model(view, key))
    if key == "decoder_self" and ssru(loaded):  # no look-ahead softmax to write: the SSRU's recurrence
        return SSRU_FORMULA
    return tour_formula(key, model_facts(loaded), lg)


def body_key(view: View, key: str) -> str:
    """The step's explanation: the cross-attention's "a diagonal for copy" only where the model shown has those
    tasks (seq2seq-tiny); a translator's or a folder's in general words."""
    if key == "cross" and not _loaded(view, decoder_model(view, key)).abilities.tasks:
        return "tour.cross.body_plain"
    return f"tour.{key}.body"


def note(view: View, key: str, name: str, lg: str) -> None:
    """Whose decoder this step shows, and why (the sidebar model's kind)."""
    kind, own = view.model.config.kind, name == view.model_name
    if kind == "encoder":
        st.info(t("tour.dec.note.encoder", lg, model=view.model_name, fallback=name), icon=":material/sync_alt:")
    elif kind == "decoder":
        msg = {"decoder_self": "tour.dec.note.self_own", "cross": "tour.dec.note.cross_none",
               "output": "tour.dec.note.output_own"}[key]
        st.info(t(msg, lg, model=view.model_name, fallback=name, last=vt.STEPS.index("ffn") + 1),
                icon=":material/sync_alt:")
    elif own and (tr := view.model.abilities.translation):  # a translator: the languages it reads and writes
        st.info(t("trpages.tour.translator_note", lg, model=name, source=t(f"s2s.lang.{tr.source}", lg),
                  target=t(f"s2s.lang.{tr.target}", lg)), icon=":material/translate:")
    else:  # seq2seq-tiny, a BART / Marian folder, paper-base: its own decoder
        trained = "" if view.model.trained else " " + t("tour.dec.note.untrained", lg)
        st.info(t("tour.dec.note.own", lg, model=name) + trained, icon=":material/sync_alt:")


def render(view: View, key: str, lg: str, quiz_on: bool) -> None:
    name = decoder_model(view, key)
    note(view, key, name, lg)
    if not view.text.strip():
        st.info(t("tour.need_text", lg), icon=":material/edit:")
        return
    if name == view.model_name and view.model.config.kind == "decoder":
        if view.trace is None:
            st.info(t("tour.need_text", lg), icon=":material/edit:")
            return
        return _own_self(view, lg) if key == "decoder_self" else _own_output(view, lg)
    _decoding(view, key, name, lg, quiz_on)


# ---- a decoder-only model's own steps (12, 14) -----------------------------------------------------------------------
def _own_self(view: View, lg: str) -> None:
    """Step 12 on a decoder-only model: its masked self-attention on the sidebar's layer and head, as steps 6-7 drew
    it (viz.tour.step_stages): the masked scores (blocked cells grey) and the weights."""
    block = view.model.main_block
    layer, head = min(view.layer, view.model.n_layers(block) - 1), min(view.head, view.model.n_heads(block) - 1)
    steps = runs.attention_steps(view.model_name, view.device, view.text, block, layer, head)
    rows, cols = view.trace.axis_tokens(block)
    by_key = {s.key: s for s in build_stages(steps, rows, cols, head=head, n_heads=view.model.n_heads(block),
                                             block=block, lang=lg)}
    st.caption(t("tour.where", lg, model=view.model_name, layer=layer, head=head))
    names = vt.step_stages("decoder_self", positional=view.model.config.positional, kind="decoder")
    blocked = ~steps["mask"].astype(bool)
    for col, name in zip(st.columns(len(names)), names):
        stage = by_key[name]
        if name == "weights":  # the blocked cells of A are exactly 0: drawn grey, as the masked scores
            stage = dataclasses.replace(stage, masked=blocked)
        with col:
            chart(stage_figure(stage, lecture=view.lecture, lang=lg, width=column_width(len(names))),
                  f"tour_own_{name}", Export(stage.matrix, stage.rows, stage.cols,
                                             f"{view.model_name} · L{layer} H{head} · {stage.title} ({stage.shape})",
                                             view.text, f"{view.model_name}-L{layer}-H{head}-{name}",
                                             heatmap=dict(masked=stage.masked)))
            st.caption(stage.caption)


def _own_output(view: View, lg: str) -> None:
    """Step 14 on a decoder-only model: its own next-token probabilities after the sentence (the trace's top 5),
    each token as the text it adds (a space ␣, a line break ↵), not its byte-level spelling."""
    meta = view.trace.meta
    tokens, probs = list(meta.get("next_tokens", [])), [float(p) for p in meta.get("next_probs", [])]
    if not tokens:
        return
    tok = view.model.tokenizer
    shown = [vt.shown_token(tok.decode([i], skip_special_tokens=False)) if (i := tok.token_to_id(x)) is not None
             else x for x in tokens]
    title = t("tour.dec.fig.next", lg, model=view.model_name, k=len(tokens))
    fig = vt.ranked_bars(probs, shown, answer=0, title=esc(title, 200), ylabel=t("tour.axis.probability", lg),
                         lecture=view.lecture, export_title=title)
    chart(fig, "tour_own_next", subtitle=view.text, filename=f"{view.model_name}-next-token")
    st.markdown(t("tour.dec.next_emits", lg, model=view.model_name, token=md_escape(shown[0]), p=probs[0]))


# ---- an encoder-decoder's greedy decoding (the sidebar's own, or seq2seq-tiny) ------------------------------------
def _pick(key: str, options: list) -> None:
    """Keep a decoder picker's session value among this model's options (seq2seq-tiny and a translator differ)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def _decoding(view: View, key: str, name: str, lg: str, quiz_on: bool) -> None:
    loaded = _loaded(view, name)
    if loaded.abilities.translation and (unknown := loaded.unknown_words(view.text)):  # Korean: en / pt only
        translator_notice(loaded, unknown, lg)
    gate = key == "decoder_self" and ssru(loaded)
    tasks = bool(loaded.abilities.tasks)  # seq2seq-tiny: copy / reverse / swap; a translator or a folder: none
    c1, c2, c3 = st.columns([2, 1, 1])
    task = c1.radio(t("tour.task", lg), TASKS, horizontal=True, key="tour_task",
                    format_func=lambda x: t(f"tour.task.{x}", lg)) if tasks else None
    run = runs.decoding_run(view.device, view.text, task, False, name=name)
    n_layers, n_heads = loaded.config.n_decoder_layers, loaded.n_heads("cross")
    _pick("tour_dec_layer", list(range(n_layers)))
    _pick("tour_dec_head", ["mean", *range(n_heads)])
    layer = c2.selectbox(t("tour.dec_layer", lg), range(n_layers), index=n_layers - 1, key="tour_dec_layer",
                         format_func=lambda i: t("tour.layer_n", lg, i=i))
    head = "mean" if gate else c3.selectbox(
        t("tour.dec_head", lg), ["mean", *range(n_heads)], key="tour_dec_head",
        format_func=lambda h: t("tour.head_mean", lg) if h == "mean" else t("tour.head_n", lg, i=h))
    n = len(run.steps)
    ss = st.session_state
    if not isinstance(ss.get("tour_dec_step"), int) or not 1 <= ss["tour_dec_step"] <= n:
        ss["tour_dec_step"] = 1  # every decoder step opens at decoding step 1 (the first new token)
    step = st.slider(t("tour.dec_step", lg), 1, n, key="tour_dec_step") if n > 1 else 1
    s = run.steps[step - 1]
    where = t("tour.layer_n", lg, i=layer) + " · " + (t("tour.head_mean", lg) if head == "mean"
                                                      else t("tour.head_n", lg, i=head))
    st.code(" ".join(run.source_tokens), language=None, wrap_lines=True)
    st.caption(t("tour.dec_inputs", lg, step=step, n=n))
    st.code(" ".join(s.inputs), language=None, wrap_lines=True)
    if key == "decoder_self" and not run.has_self_attention:  # an SSRU: its forget gate, not an empty triangle
        _forget_gate(view, run, step, layer, name, lg)
    elif key == "decoder_self":
        fig, mat, blocked, labels = vs.self_attention_figure(  # titled (and its axes) as the tour names them
            run, step, layer, head, lecture=view.lecture, lang=lg, title=t("tour.fig.dec_self", lg, where=where, step=step),
            xlabel=t("tour.axis.key_earlier", lg), ylabel=t("tour.axis.dec_input", lg))
        title = f"{name} · " + t("tour.fig.dec_self", lg, where=where, step=step)
        chart(fig, "tour_dec_self", Export(mat, labels, labels, title,
                                           view.text, f"{name}-decoder-self", heatmap=dict(masked=blocked)))
    elif key == "cross":
        fig, mat, rows = vs.cross_figure(run, step, layer, head, lecture=view.lecture, lang=lg,
                                         title=t("tour.fig.cross", lg, where=where), xlabel=t("tour.axis.source", lg),
                                         ylabel=t("tour.axis.dec_input", lg))
        title = f"{name} · " + t("tour.fig.cross", lg, where=where)
        chart(fig, "tour_cross", Export(mat, rows, list(run.source_tokens), title,
                                        view.text, f"{name}-cross"))
        st.plotly_chart(vs.cross_row_figure(run, step, layer, head, lecture=view.lecture, lang=lg, title=t(
            "tour.fig.cross_row", lg, step=step, token=esc(s.inputs[-1], 16), out=esc(s.chosen, 16)),
            ylabel=t("quiz.weight", lg)), key="tour_cross_row")
    else:
        if quiz_on and not quiz.next_token_question(view, run, step, lg):
            return
        st.plotly_chart(vs.topk_figure(run, step, lecture=view.lecture, lang=lg,
                                       title=t("tour.fig.topk", lg, step=step, k=len(s.top_tokens)),
                                       xlabel=t("tour.axis.probability", lg)), key="tour_topk")
        st.markdown(t("tour.output.emits", lg, token=md_escape(s.chosen)))
    if run.output_text and key == "output":  # a translator: where greedy decoding ends, detokenized
        st.markdown(t("s2s.translation", lg) + f"\n\n> {md_escape(run.output_text)}")


def _forget_gate(view: View, run, step: int, layer: int, name: str, lg: str) -> None:
    """The SSRU that stands where masked self-attention would: the note, and its forget gate over the inputs so far
    (viz.alignment), one figure per decoder layer picked above."""
    st.info(t("trpages.tour.ssru", lg, model=name), icon=":material/info:")
    s = run.steps[step - 1]
    gates = run.forget_gates[layer, :step]  # (t, d): the decoder inputs so far
    title = t("trpages.tour.fig.forget", lg, layer=layer, step=step)
    fig = va.forget_gate_figure(s.inputs, gates, lang=lg, lecture=view.lecture,
                                title=f"{esc(title, 120)}<br><sup>{va.FORMULA}</sup>", export_title=title)
    chart(fig, "tour_forget", subtitle=view.text, filename=f"{name}-forget-gate-L{layer}-step{step}", context=name)
    st.caption(va.forget_gate_caption(lg))
