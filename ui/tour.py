"""The guided tour: the Transformer in the lecture's order, one step per screen, on the sidebar's sentence, with the
model's own numbers (Streamlit; the page app_pages/tour.py only calls `render`).

    tokens -> embedding -> Positional Encoding -> Q, K, V -> Q Kᵀ / √d_k (+ neuron view) -> mask -> Softmax -> × V
    -> Concat and W_O -> Add & Norm -> Feed Forward -> decoder masked self-attention -> cross-attention
    -> output probabilities -> generation over the KV cache -> what changed since 2017

Steps 1-11 use the sidebar's model (its encoder, or a decoder-only model's one causal stack); steps 12-14 are
ui/tour_decoder.py's (the sidebar model's own decoder where it has one, else seq2seq-tiny, and each says which); step
15 lets the sidebar's language model write over its KV cache (ui/generation.py); step 16 puts the sidebar's model's
design choices beside the paper's (viz.since: from its config and tokenizer, no text needed). Every caption and formula comes from the model's config (viz.model_notes) or from the numbers of its own
forward (analysis.stages says which biases it has); every number from ui.runs (analysis.stages.attention_steps /
sublayer_steps, analysis.decoding, the embedding parts); every figure from the existing builders (viz.steps,
viz.positional, viz.seq2seq, viz.heatmap) plus the tour's small ones (viz.tour), whose tables say which stages a step
draws (STEP_STAGES, and on a rotary model step 3's q and k before and after RoPE: step_stages). The step is in the
URL (`?step=6`, counted from 1): read once per session on the tour's first run, validated (a bad value falls back to
step 1 with a notice), and written back on every run. The language is the sidebar's `lang` (or the URL's
`lang=ko`), English by default.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from i18n import t
from model.trace import AttentionTrace
from viz import tour as vt
from viz.heatmap import heatmap
from viz.model_notes import ModelFacts, step_notes, tour_formula
from viz.positional import embedding_triptych
from viz.since import since_formulas, since_rows, since_summary, since_table
from viz.steps import AXIS_KEYS, build_stages, stage_figure

from . import generation, quiz, runs
from . import tour_decoder as dec
from .layer_view import draw_figures, output_check
from .pages import page_file
from .view import TOUR_STEP, TOUR_URL_DONE, View, show_value
from .widgets import ARROWS_TAKEN, NO_FOCUS_FRAME_CSS, Export, chart, model_facts, presenting, session_lang, table

STEPS = vt.STEPS
N_STEPS = len(STEPS)
DECODER_STEPS = set(vt.DECODER_STEPS)
URL_KEY = "step"  # ?step=6, counted from 1
STEP, URL_DONE = TOUR_STEP, TOUR_URL_DONE  # session keys the present mode resets too (ui/view.py)
JUMP, NOTICE = "tour_jump", "_tour_notice"
# on a phone (narrower than 640 px) a long formula breaks into lines at its top-level "=", "+" and arrows (KaTeX
# splits every formula there; display mode only keeps it on one line with nowrap) and is drawn a little smaller
# (KaTeX's display size is 1.21em); what still cannot break scrolls inside its own box (a constant: no user text)
CSS = """<style>
[data-testid="stMain"] .katex-display { overflow-x: auto; overflow-y: hidden; padding-bottom: 0.3rem; }
@media (max-width: 640px) {
  [data-testid="stMain"] .katex-display > .katex { font-size: 1em; white-space: normal; } }
</style>"""


def lang() -> str:
    """The interface language (ui.widgets.session_lang)."""
    return session_lang()


# ---- the step and its URL ---------------------------------------------------------------------------------------
def current_step() -> int:
    """The step (1..N_STEPS): from the URL on the tour's first run in this session, then from session state."""
    ss = st.session_state
    if not ss.get(URL_DONE):
        ss[URL_DONE] = True
        raw = st.query_params.get(URL_KEY)
        if raw is not None:
            try:
                val = int(str(raw).strip())
            except ValueError:
                val = None
            if val is None or not 1 <= val <= N_STEPS:
                ss[NOTICE] = t("tour.bad_step", lang(), value=show_value(raw), n=N_STEPS)
                val = 1
            ss[STEP] = val
    step = ss.get(STEP)
    if not isinstance(step, int) or not 1 <= step <= N_STEPS:
        ss[STEP] = step = 1
    return step


def _go(delta: int | None = None) -> None:
    ss = st.session_state
    ss[NOTICE] = None
    if delta is None:  # the jump selectbox
        ss[STEP] = ss[JUMP]
    else:
        ss[STEP] = min(max(ss.get(STEP, 1) + delta, 1), N_STEPS)


def navigation(step: int, lg: str, where: str) -> None:
    """Back / Next (and, at the top, a jump to any step)."""
    c1, c2, c3 = st.columns([1, 4, 1])
    arrows = where == "top" and not st.session_state.get(ARROWS_TAKEN)  # a presented deck's bar owns the arrows
    left, right = ("Left", "Right") if arrows else (None, None)  # the arrow keys drive the top pair
    c1.button(t("tour.back", lg), key=f"tour_back_{where}", on_click=_go, args=(-1,), disabled=step == 1,
              width="stretch", shortcut=left, help=t("tour.keys", lg))
    c3.button(t("tour.next", lg), key=f"tour_next_{where}", on_click=_go, args=(1,), disabled=step == N_STEPS,
              type="primary", width="stretch", shortcut=right, help=t("tour.keys", lg))
    if where == "top":
        st.html(NO_FOCUS_FRAME_CSS)  # a constant: the arrow keys leave no frame
        st.session_state[JUMP] = step
        c2.selectbox(t("tour.jump", lg), range(1, N_STEPS + 1), key=JUMP, on_change=_go, label_visibility="collapsed",
                     format_func=lambda i: t("tour.step_title", lg, i=i, n=N_STEPS,
                                             title=t(f"tour.{STEPS[i - 1]}.title", lg)))
    else:
        c2.progress(step / N_STEPS, text=t("tour.step_of", lg, i=step, n=N_STEPS))


def render(view: View) -> None:
    lg = lang()
    step = current_step()
    if st.query_params.get(URL_KEY) != str(step):
        st.query_params[URL_KEY] = str(step)
    key = STEPS[step - 1]
    st.title(t("tour.title", lg))
    if st.session_state.get(NOTICE):
        st.warning(st.session_state[NOTICE], icon=":material/warning:")
    if not presenting():  # a presented deck's bar is the one Back / Next (and it owns the arrow keys)
        navigation(step, lg, "top")
    st.html(CSS)
    st.subheader(t("tour.step_title", lg, i=step, n=N_STEPS, title=t(f"tour.{key}.title", lg)))
    quiz_on = st.toggle(t("quiz.toggle", lg), key="quiz_on", help=t("quiz.toggle_help", lg))
    quiz.score_line(lg)
    if key in DECODER_STEPS:  # the model whose decoder the step shows: its kind and abilities say which
        st.markdown(t(dec.body_key(view, key), lg))
        st.latex(dec.formula(view, key, lg))
        dec.render(view, key, lg, quiz_on)
    else:
        facts = model_facts(view.model)
        st.markdown(t(body_key(key, facts), lg, norm=t(f"notes.norm.{facts.norm}", lg)))
        tr = view.trace if view.trace is not None and view.text.strip() else None
        notes = step_notes(key, facts, lg, tokens=tr.source_tokens if tr else None,
                           special=tr.source_special if tr else None)
        if notes:  # what this model does at this step, from its config and tokenizer (viz.model_notes)
            st.info(" ".join(notes), icon=":material/memory:")
        for formula in since_formulas(facts) if key == "since" else [tour_formula(key, facts, lg)]:
            st.latex(formula)
        if key == "since":
            _since_step(facts, lg)
        elif key == "generate":
            generation.tour_step(view, lg)
        elif tr is None:
            st.info(t("tour.need_text", lg), icon=":material/edit:")
        else:
            _encoder_step(view, key, lg, quiz_on)
    if key == "output":  # how these weights were learned: the Training page
        st.page_link(page_file("training"), label=t("train.tour_link", lg), icon=":material/model_training:")
    if not presenting():
        st.divider()
        navigation(step, lg, "bottom")


def body_key(key: str, facts: ModelFacts) -> str:
    """The catalogue key of a step's explanation: the Add & Norm and Feed Forward steps follow the model's norm
    placement and kind (post-LN LayerNorm as in the paper; post-LN RMSNorm; pre-LN, whose layer output is a plain
    residual sum), the rest are the lecture's."""
    if key == "add_norm":
        if facts.norm_placement == "pre":
            return "tour.add_norm.body_pre"
        return "tour.add_norm.body" if facts.norm == "layernorm" else "tour.add_norm.body_post_rms"
    if key == "ffn" and facts.norm_placement == "pre":
        return "tour.ffn.body_pre"
    return f"tour.{key}.body"


# ---- encoder steps (the sidebar's model) ----------------------------------------------------------------------------
@dataclasses.dataclass
class _Ctx:
    view: View
    lg: str
    trace: AttentionTrace
    layer: int
    head: int
    tokens: list[str]
    block: str = "encoder"  # "decoder_self" for a decoder-only model (GPT-2): its one causal stack

    @property
    def where(self) -> str:
        key = "tour.where_present" if presenting() else "tour.where"  # no sidebar to point to while presenting
        return t(key, self.lg, model=self.view.model_name, layer=self.layer, head=self.head)


def sublayer_steps(name: str, device: str, text: str, block: str, layer: int) -> dict:
    """analysis.stages.sublayer_steps through the shared byte-bounded store."""
    return runs.sublayer_steps(name, device, text, block, layer)


def _encoder_step(view: View, key: str, lg: str, quiz_on: bool) -> None:
    block = view.model.main_block
    layer = min(view.layer, view.model.n_layers(block) - 1)
    head = min(view.head, view.model.n_heads(block) - 1)
    rows, _ = view.trace.axis_tokens(block)
    ctx = _Ctx(view, lg, view.trace, layer, head, rows, block)
    st.caption(ctx.where + ("" if view.model.trained else " · " + t("tour.untrained", lg)))
    {"tokens": _tokens, "embedding": _embedding, "positional": _embedding}.get(key, _attention)(ctx, key, quiz_on)


def _tokens(ctx: _Ctx, key: str, quiz_on: bool) -> None:
    tr, lg = ctx.trace, ctx.lg
    n_special = sum(tr.source_special)
    st.markdown(t("tour.tokens.count", lg, n=len(tr.source_tokens), special=n_special))
    table({t("tour.col.position", lg): list(range(len(tr.source_tokens))),
           t("tour.col.token", lg): list(tr.source_tokens),
           t("tour.col.id", lg): list(tr.source_ids),
           t("tour.col.special", lg): ["✓" if s else "" for s in tr.source_special]}, ctx.view.lecture)


def _embedding(ctx: _Ctx, key: str, quiz_on: bool) -> None:
    view, lg = ctx.view, ctx.lg
    tokens, parts = runs.embedding_parts(view.model_name, view.device, view.text)
    if key == "embedding":
        x = parts["token"]
        fig = heatmap(x, tokens, None, title=t("tour.embedding.fig", lg, n=x.shape[0], d=x.shape[1]),
                      colorscale="RdBu_r", zmid=0.0, xlabel=t("tour.axis.dim", lg), ylabel=t("tour.axis.token", lg),
                      lecture=view.lecture, max_side=256)
        chart(fig, "tour_embedding", Export(x, list(tokens), None, t("tour.embedding.title", lg), view.text,
                                            f"{view.model_name}-embedding"))
        return
    if view.model.config.positional == "rotary":  # RoPE adds nothing to X: what it does instead, q and k turned
        return _rope(ctx)
    labels = {k: t(f"tour.positional.part.{k}", lg) for k in ("token", "position", "token_type", "sum")}
    fig = embedding_triptych(parts, list(tokens), labels=labels, lecture=view.lecture, title=t("tour.positional.fig", lg),
                              lang=lg, xlabel=t("tour.axis.dim", lg))  # its axes named as the tour names them
    st.plotly_chart(fig, key="tour_positional")


def _stage_chart(ctx: _Ctx, stage, name: str) -> None:
    view = ctx.view
    if stage.trivial and stage.key == "mask":
        st.info(t("tour.mask.none", ctx.lg))
    chart(stage_figure(stage, lecture=view.lecture, lang=ctx.lg), f"tour_{name}_{stage.key}",
          context=f"{view.model_name} · {ctx.where}", subtitle=view.text,
          filename=f"{view.model_name}-L{ctx.layer}-H{ctx.head}-{stage.key}")


AXES = AXIS_KEYS  # stage axis labels -> catalogue keys (viz.steps)


def localise(stage, lg: str, head: int, rotary: bool = False):
    """A viz.steps Stage (already in `lg`) titled as the tour names it: Q, K and V with their role too; on a rotary
    model Q and K keep viz.steps' title, which says they are turned by RoPE ("Q = RoPE(X W_Q)")."""
    if rotary and stage.key in ("Q", "K"):
        return stage
    return dataclasses.replace(stage, title=t(f"stage.{stage.key}", lg, head=head))


def _attention(ctx: _Ctx, key: str, quiz_on: bool) -> None:
    view, lg = ctx.view, ctx.lg
    if key in ("add_norm", "ffn"):
        return _sublayers(ctx, key)
    steps = runs.attention_steps(view.model_name, view.device, view.text, ctx.block, ctx.layer, ctx.head)
    rows, cols = ctx.trace.axis_tokens(ctx.block)
    rotary = "Q_proj" in steps  # rotary positions (llama family): q and k before and after the RoPE turn
    by_key = {s.key: localise(s, lg, ctx.head, rotary)
              for s in build_stages(steps, rows, cols, head=ctx.head, n_heads=view.n_heads, block=ctx.block, lang=lg)}
    show = vt.step_stages(key, positional=view.model.config.positional, kind=view.model.config.kind)
    if key == "softmax" and quiz_on:
        if not quiz.attend_question(view, ctx.layer, ctx.head, steps["weights"], rows, cols, lg):
            return
    if key == "concat" and quiz_on:
        quiz.prev_head_question(view, ctx.layer, lg, ctx.block)
    _stage_row(ctx, by_key, show, key)
    if key == "scores":
        _neuron_view(ctx, steps, rows, cols)
    if key == "concat":
        st.caption(t("tour.concat.shapes", lg, h=view.n_heads, k=steps["Z"].shape[1], d=steps["W_O"].shape[1]))


def _stage_row(ctx: _Ctx, by_key: dict, names: tuple[str, ...], key: str) -> None:
    """Stages side by side, each chart (titled with its stage and shape) above its caption: the charts of a row
    start at one height whatever their captions' lengths (on a phone each caption stays under its own chart)."""
    cols_ui = st.columns(len(names)) if len(names) > 1 else [st.container()]
    captions = [by_key[name].caption for name in names]
    once = len(set(captions)) == 1  # one caption for the row (Q, K and V of a model with biases say the same)
    for col, name in zip(cols_ui, names):
        with col:
            _stage_chart(ctx, by_key[name], key)
            if not once:
                st.caption(by_key[name].caption)
    if once:
        st.caption(captions[0])


def _rope(ctx: _Ctx) -> None:
    """Step 3 on a rotary model (SmolLM2): RoPE adds no vector to X; it turns each head's q and k by their positions.
    The sidebar's layer and head: q and k as the projections make them, then turned (the stages of
    viz.tour.step_stages), the largest change and the lengths kept, and one pair of dimensions of k turning."""
    view, lg = ctx.view, ctx.lg
    steps = runs.attention_steps(view.model_name, view.device, view.text, ctx.block, ctx.layer, ctx.head)
    rows, cols = ctx.trace.axis_tokens(ctx.block)
    by_key = {s.key: localise(s, lg, ctx.head, True)
              for s in build_stages(steps, rows, cols, head=ctx.head, n_heads=view.n_heads, block=ctx.block, lang=lg)}
    names = vt.step_stages("positional", positional="rotary", kind=view.model.config.kind)
    st.markdown(t("tour.qkv.rope_before", lg))
    _stage_row(ctx, by_key, names[:2], "positional")
    st.markdown(t("tour.qkv.rope_after", lg, **vt.rope_check(steps)))
    _stage_row(ctx, by_key, names[2:], "positional")
    before, after = steps["K_proj"], steps["K"]
    half, n = before.shape[1] // 2, min(len(cols), ROPE_TOKENS)
    fig = vt.rope_pair_figure(before[:n], after[:n], list(cols[:n]), pair=0, lecture=view.lecture,
                              title=t("tour.rope.pair_fig", lg, a=0, b=half),
                              names=(t("tour.rope.before", lg), t("tour.rope.after", lg)),
                              axes=(t("tour.rope.dim", lg, j=0), t("tour.rope.dim", lg, j=half)))
    st.plotly_chart(fig, key="tour_rope_pair")
    theta = float(steps["rope_theta"])
    st.caption(t("tour.rope.pair_caption", lg, n=n, half=half, slow=theta ** (-(half - 1) / half)))


ROPE_TOKENS = 12  # tokens drawn in the pair figure (more would hide each other's labels)


def _neuron_view(ctx: _Ctx, steps: dict, rows: list[str], cols: list[str]) -> None:
    """One query-key pair: q, k, q ∘ k and its sum, which is the model's score S_ij."""
    view, lg = ctx.view, ctx.lg
    st.markdown(f"**{t('tour.neuron.title', lg)}**")
    c1, c2 = st.columns(2)
    i = min(view.token, len(rows) - 1)
    i = c1.selectbox(t("tour.neuron.query", lg), range(len(rows)), index=i, key="tour_nv_q",
                     format_func=lambda r: f"{r}: {rows[r]}")
    j = c2.selectbox(t("tour.neuron.key", lg), range(len(cols)), key="tour_nv_k",
                     format_func=lambda r: f"{r}: {cols[r]}")
    q, k = steps["Q"][i], steps["K"][j]
    total, score, root = float(np.dot(q, k)), float(steps["scores"][i, j]), float(steps["scalar"])  # d_k or Gemma's
    names = (t("tour.neuron.q", lg), t("tour.neuron.k", lg), t("tour.neuron.prod", lg))
    st.plotly_chart(vt.neuron_view(q, k, names=names, lecture=view.lecture, lang=lg, title=t(
        "tour.neuron.fig", lg, sum=total, scaled=total / np.sqrt(root), dk=f"{root:g}")),
                    key="tour_neuron")
    st.caption(t("tour.neuron.check", lg, sum=total, score=score, scaled=float(steps["scaled"][i, j]),
                 diff=abs(total - score)))


def _sublayers(ctx: _Ctx, key: str) -> None:
    """Steps 10 and 11: the Add & Norm after attention and the Feed Forward with the layer output, titled as the
    model's norm placement and kind make them (pre-LN: the residual sum, then norm_2, and a layer output with no
    norm after it; RMSNorm_1 / RMSNorm_2 or LN_1 / LN_2)."""
    view, lg, tokens = ctx.view, ctx.lg, ctx.tokens
    cfg = view.model.config
    pre_ln = cfg.norm_placement == "pre"  # x + Sublayer(Norm(x)) (GPT-2, SmolLM2): said by the step's notes
    norm = "RMSNorm" if cfg.norm == "rmsnorm" else "LN"
    sub = sublayer_steps(view.model_name, view.device, view.text, ctx.block, ctx.layer)
    d = sub["x"].shape[1]
    if key == "add_norm":
        name, title = ("norm2", "steps.pre_sum_fig") if pre_ln else ("norm1", "tour.add_norm.sum_fig")
        figs = vt.add_norm_figures(sub, name, tokens, sum_title=t(title, lg, n=len(tokens), d=d, norm=norm), lang=lg,
                                   lecture=view.lecture)
    else:
        act = model_facts(view.model).act_name
        st.markdown(t("tour.ffn.shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
        figs = vt.ffn_figures(sub, tokens, layer=ctx.layer, act=act, lang=lg, lecture=view.lecture,
                              norm=norm if pre_ln else None)
    draw_figures(view, figs, f"tour_{key}", tokens, ctx.layer)  # as Step by step draws them
    if key == "ffn":
        hidden = ctx.trace.encoder_hidden_states if ctx.block == "encoder" else ctx.trace.decoder_hidden_states
        output_check(sub, hidden, ctx.layer, lg)


# ---- what changed since 2017 (the sidebar's model beside the paper) ------------------------------------------------
CHANGED_CSS = "background-color: rgba(255, 170, 0, 0.16)"  # the cells of a choice that differs from the paper


def _since_step(facts: ModelFacts, lg: str) -> None:
    """The design choices of the sidebar's model beside the paper's, one row each, and why each changed."""
    rows = since_rows(facts, lg)
    summary = since_summary(rows, facts, lg)
    if all(r.same for r in rows):
        st.success(summary, icon=":material/check_circle:")
    else:
        st.info(summary, icon=":material/history:")
    table = pd.DataFrame(since_table(rows, facts, lg))
    table = table.set_index(table.columns[0])  # the choice names head the rows
    paper = table.columns[0]
    st.html(card_css(list(table.columns)))  # on a phone: one card per choice, each cell under its column's name
    with st.container(key=SINCE_KEY):
        st.table(table.style.apply(lambda col: ["" if col.name == paper or r.same else CHANGED_CSS for r in rows]))


SINCE_KEY = "tour_since"  # the table's container (its CSS class: st-key-tour_since)


def css_string(text: str) -> str:
    """`text` as a CSS string literal: every character but letters, digits and spaces as a hex escape (a model's
    name from a local folder may hold quotes or backslashes)."""
    return '"' + "".join(c if c.isalnum() or c == " " else f"\\{ord(c):x} " for c in text) + '"'


def card_css(columns: list[str]) -> str:
    """Step 15's table on a screen narrower than 640 px (a phone): its rows as cards, each cell on its own line
    after its column's name (the paper, this model, why it changed), instead of four columns cut at the right."""
    k = f".st-key-{SINCE_KEY}"
    labels = "\n".join(f"  {k} td.col{i}::before {{ content: {css_string(name)} \": \"; font-weight: 600; }}"
                       for i, name in enumerate(columns))
    return f"""<style>
@media (max-width: 640px) {{
  {k} table, {k} tbody, {k} tr, {k} th, {k} td {{ display: block; width: 100% !important; white-space: normal !important;
    box-sizing: border-box; }}
  {k} thead {{ display: none; }}
  {k} tr {{ border-bottom: 2px solid rgba(49, 51, 63, 0.2); padding: 0.3rem 0; }}
  {k} th.row_heading {{ font-weight: 700; border: none; }}
  {k} td {{ border: none; }}
{labels}
}}
</style>"""
