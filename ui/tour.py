"""The guided tour: the Transformer in the lecture's order, one step per screen, on the sidebar's sentence, with the
model's own numbers (Streamlit; the page app_pages/tour.py only calls `render`).

    tokens -> embedding -> Positional Encoding -> Q, K, V -> Q Kᵀ / √d_k (+ neuron view) -> mask -> Softmax -> × V
    -> Concat and W_O -> Add & Norm -> Feed Forward -> decoder masked self-attention -> cross-attention
    -> output probabilities -> what changed since 2017

Steps 1-11 use the sidebar's model (its encoder); steps 12-14 use seq2seq-tiny and say so, or the sidebar's model
when it is a translator (Bergamot: its SSRU's forget gate stands where masked self-attention would); step 15 puts the sidebar's
model's design choices beside the paper's (viz.since: from its config and tokenizer, no text needed). Every number comes from
ui.runs (analysis.stages.attention_steps / sublayer_steps, analysis.decoding, the embedding parts); every figure
from the existing builders (viz.steps, viz.positional, viz.seq2seq, viz.heatmap) plus the tour's small ones
(viz.tour). The step is in the URL (`?step=6`, counted from 1): read once per session on the tour's first run,
validated (a bad value falls back to step 1 with a notice), and written back on every run. The language is the
sidebar's `lang` (or the URL's `lang=ko`), English by default.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from i18n import t
from model.data import TASKS
from model.trace import AttentionTrace
from viz import alignment as va
from viz import seq2seq as vs
from viz import tour as vt
from viz.heatmap import heatmap
from viz.model_notes import ModelFacts, step_formula, step_notes
from viz.positional import embedding_triptych
from viz.since import since_formula, since_rows, since_summary, since_table
from viz.steps import AXIS_KEYS, build_stages, stage_figure
from viz.theme import esc

from . import quiz, runs, store
from .seq2seq import is_translator, translator_notice
from .steps_page import draw_figures, output_check
from .view import View, md_escape, show_value
from .widgets import ARROWS_TAKEN, Export, chart, model_facts, session_lang, table

STEPS = ("tokens", "embedding", "positional", "qkv", "scores", "mask", "softmax", "attend", "concat", "add_norm",
         "ffn", "decoder_self", "cross", "output", "since")
N_STEPS = len(STEPS)
DECODER_STEPS = {"decoder_self", "cross", "output"}
DECODER_MODEL = "seq2seq-tiny"
URL_KEY = "step"  # ?step=6, counted from 1
STEP, JUMP, URL_DONE, NOTICE = "_tour_step", "tour_jump", "_tour_url_done", "_tour_notice"
FORMULAS = {
    "tokens": r"\text{%(text)s} \;\longrightarrow\; (t_0, t_1, \dots, t_{n-1})",  # the text's name: the catalogue's
    "embedding": r"X = E[t] \in \mathbb{R}^{n \times d_{model}}",
    "positional": r"PE_{(pos, 2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\;"
                  r"PE_{(pos, 2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\; X' = X + PE",
    "qkv": r"Q = X W^{Q},\quad K = X W^{K},\quad V = X W^{V}",
    "scores": r"S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} = \frac{1}{\sqrt{d_k}} \sum_{r=1}^{d_k} q_{ir}\, k_{jr}",
    "mask": r"S' = \frac{Q K^{\top}}{\sqrt{d_k}} + M,\quad M_{ij} \in \{0, -\infty\}",
    "softmax": r"A_{ij} = \frac{\exp S'_{ij}}{\sum_{j'} \exp S'_{ij'}}",
    "attend": r"Z = A\,V",
    "concat": r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}",
    "add_norm": r"\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x)) = "
                r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta",
    "ffn": r"\operatorname{FFN}(x) = \operatorname{act}(x W_1 + b_1)\, W_2 + b_2",
    "decoder_self": r"\operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}} + M_{\text{look-ahead}}\right) V",
    "cross": r"\operatorname{softmax}\!\left(\frac{Q_{dec} (M W^{K})^{\top}}{\sqrt{d_k}}\right) M W^{V}",
    "output": r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab} + b)",
    "since": since_formula(ModelFacts(name="paper")),  # the paper's norm and positions (ModelFacts' defaults)
}


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
    navigation(step, lg, "top")
    st.subheader(t("tour.step_title", lg, i=step, n=N_STEPS, title=t(f"tour.{key}.title", lg)))
    quiz_on = st.toggle(t("quiz.toggle", lg), key="quiz_on", help=t("quiz.toggle_help", lg))
    quiz.score_line(lg)
    st.markdown(t(f"tour.{key}.body", lg))
    facts = None if key in DECODER_STEPS else model_facts(view.model)
    tr = view.trace if view.trace is not None and view.text.strip() else None
    notes = step_notes(key, facts, lg, tokens=tr.source_tokens if tr else None,
                       special=tr.source_special if tr else None) if facts else []
    if notes:  # what this model does at this step, from its config and tokenizer (viz.model_notes)
        st.info(" ".join(notes), icon=":material/memory:")
    formula = since_formula(facts) if key == "since" else (step_formula(key, facts) if facts else None)
    if key == "decoder_self" and ssru_decoder(view):  # no look-ahead softmax to write: the SSRU's recurrence
        formula = SSRU_FORMULA
    st.latex(formula or FORMULAS[key] % {"text": t("tour.tokens.formula_text", lg)})
    if key in DECODER_STEPS:
        _decoder_step(view, key, lg, quiz_on)
    elif key == "since":
        _since_step(facts, lg)
    elif view.trace is None or not view.text.strip():
        st.info(t("tour.need_text", lg), icon=":material/edit:")
    else:
        _encoder_step(view, key, lg, quiz_on)
    st.divider()
    navigation(step, lg, "bottom")


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
        return t("tour.where", self.lg, model=self.view.model_name, layer=self.layer, head=self.head)


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
    labels = {k: t(f"tour.positional.part.{k}", lg) for k in ("token", "position", "token_type", "sum")}
    fig = embedding_triptych(parts, list(tokens), labels=labels, lecture=view.lecture, title=t("tour.positional.fig", lg),
                              lang=lg)
    st.plotly_chart(fig.update_xaxes(title_text=t("tour.axis.dim", lg)), key="tour_positional")


def _stage_chart(ctx: _Ctx, stage, name: str) -> None:
    view = ctx.view
    if stage.trivial and stage.key == "mask":
        st.info(t("tour.mask.none", ctx.lg))
    chart(stage_figure(stage, lecture=view.lecture, lang=ctx.lg), f"tour_{name}_{stage.key}", Export(
        stage.matrix, stage.rows, stage.cols, f"{view.model_name} · {ctx.where} · {stage.title} ({stage.shape})",
        view.text, f"{view.model_name}-L{ctx.layer}-H{ctx.head}-{stage.key}",
        heatmap=dict(masked=stage.masked, cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
                     xlabel=stage.xlabel, ylabel=stage.ylabel)))


AXES = AXIS_KEYS  # stage axis labels -> catalogue keys (viz.steps)


def localise(stage, lg: str, head: int, rotary: bool = False):
    """A viz.steps Stage (already in `lg`) titled as the tour names it: Q, K and V with their role too; on a rotary
    model Q and K keep viz.steps' title, which says they are turned by RoPE ("Q = RoPE(X W_Q)")."""
    if rotary and stage.key in ("Q", "K"):
        return stage
    return dataclasses.replace(stage, title=t(f"stage.{stage.key}", lg, head=head))


def _retitle(fig, lg: str, title: str, x: str | None = None, y: str | None = None):
    """A viz.seq2seq figure titled (and its axes) as the tour names it, in `lg`."""
    fig.update_layout(title={"text": title})
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    return fig


def _attention(ctx: _Ctx, key: str, quiz_on: bool) -> None:
    view, lg = ctx.view, ctx.lg
    if key in ("add_norm", "ffn"):
        return _sublayers(ctx, key)
    steps = runs.attention_steps(view.model_name, view.device, view.text, ctx.block, ctx.layer, ctx.head)
    rows, cols = ctx.trace.axis_tokens(ctx.block)
    rotary = "Q_proj" in steps  # rotary positions (llama family): q and k before and after the RoPE turn
    by_key = {s.key: localise(s, lg, ctx.head, rotary)
              for s in build_stages(steps, rows, cols, head=ctx.head, n_heads=view.n_heads, block=ctx.block, lang=lg)}
    show = {"qkv": ("Q", "K", "V"), "scores": ("scaled",), "mask": ("mask",), "softmax": ("weights",),
            "attend": ("Z",), "concat": ("Z_all", "output")}[key]
    if key == "softmax" and quiz_on:
        if not quiz.attend_question(view, ctx.layer, ctx.head, steps["weights"], rows, cols, lg):
            return
    if key == "concat" and quiz_on:
        quiz.prev_head_question(view, ctx.layer, lg)
    if key == "qkv" and rotary:
        st.markdown(t("tour.qkv.rope_before", lg))
        _stage_row(ctx, by_key, ("Q_proj", "K_proj"), key)
        st.markdown(t("tour.qkv.rope_after", lg, **vt.rope_check(steps)))
    _stage_row(ctx, by_key, show, key)
    if key == "scores":
        _neuron_view(ctx, steps, rows, cols)
    if key == "concat":
        st.caption(t("tour.concat.shapes", lg, h=view.n_heads, k=steps["Z"].shape[1], d=steps["W_O"].shape[1]))


def _stage_row(ctx: _Ctx, by_key: dict, names: tuple[str, ...], key: str) -> None:
    """Stages side by side, each with its title, shape, caption and chart."""
    cols_ui = st.columns(len(names)) if len(names) > 1 else [st.container()]
    for col, name in zip(cols_ui, names):
        with col:
            stage = by_key[name]
            st.caption(f"**{stage.title}** · `{stage.shape}`" + f" — {stage.caption}")
            _stage_chart(ctx, stage, key)


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
    total, score, d_k = float(np.dot(q, k)), float(steps["scores"][i, j]), q.shape[0]
    names = (t("tour.neuron.q", lg), t("tour.neuron.k", lg), t("tour.neuron.prod", lg))
    st.plotly_chart(vt.neuron_view(q, k, names=names, lecture=view.lecture, lang=lg,
                                   title=t("tour.neuron.fig", lg, sum=total, scaled=total / np.sqrt(d_k), dk=d_k)),
                    key="tour_neuron")
    st.caption(t("tour.neuron.check", lg, sum=total, score=score, scaled=float(steps["scaled"][i, j]),
                 diff=abs(total - score)))


def _sublayers(ctx: _Ctx, key: str) -> None:
    view, lg, tokens = ctx.view, ctx.lg, ctx.tokens
    pre_ln = view.model.config.norm_placement == "pre"  # x + Sublayer(Norm(x)) (GPT-2): said by the step's notes
    sub = sublayer_steps(view.model_name, view.device, view.text, ctx.block, ctx.layer)
    d = sub["x"].shape[1]
    if key == "add_norm":
        norm, title = ("norm2", "steps.pre_sum_fig") if pre_ln else ("norm1", "tour.add_norm.sum_fig")
        figs = vt.add_norm_figures(sub, norm, tokens, sum_title=t(title, lg, n=len(tokens), d=d), lang=lg,
                                   lecture=view.lecture)
    else:
        act = model_facts(view.model).act_name
        st.markdown(t("tour.ffn.shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
        figs = vt.ffn_figures(sub, tokens, layer=ctx.layer, act=act, lang=lg, lecture=view.lecture)
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
    st.table(table.style.apply(lambda col: ["" if col.name == paper or r.same else CHANGED_CSS for r in rows]))


# ---- decoder steps (seq2seq-tiny, or the sidebar's translator) ---------------------------------------------------
SSRU_FORMULA = (r"f_t = \sigma(W_f x_t + b_f),\quad c_t = f_t \odot c_{t-1} + (1 - f_t) \odot W x_t,\quad "
                r"h_t = \operatorname{ReLU}(c_t)")


def decoder_model(view: View) -> str:
    """The model of the decoder steps: the sidebar's model when it is a translator (Bergamot), else seq2seq-tiny."""
    return view.model_name if is_translator(view.model_name) else DECODER_MODEL


def ssru_decoder(view: View) -> bool:
    """Whether the decoder steps run a decoder with an SSRU in place of masked self-attention (a translator)."""
    return decoder_model(view) != DECODER_MODEL and view.model.config.decoder_mixer == "ssru"


def _decoder_note(view: View, name: str, lg: str) -> None:
    if name == DECODER_MODEL:
        st.info(t("tour.decoder_note", lg, model=DECODER_MODEL), icon=":material/sync_alt:")
        return
    m = view.model
    st.info(t("trpages.tour.translator_note", lg, model=name, source=t(f"s2s.lang.{m.source_lang}", lg),
              target=t(f"s2s.lang.{m.target_lang}", lg)), icon=":material/translate:")


def _pick(key: str, options: list) -> None:
    """Keep a decoder picker's session value among this model's options (seq2seq-tiny and a translator differ)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def _decoder_step(view: View, key: str, lg: str, quiz_on: bool) -> None:
    name = decoder_model(view)
    _decoder_note(view, name, lg)
    if not view.text.strip():
        st.info(t("tour.need_text", lg), icon=":material/edit:")
        return
    loaded = store.get_model(name, view.device)
    if name != DECODER_MODEL and (unknown := loaded.unknown_words(view.text)):  # Korean, say: it reads en / pt
        translator_notice(loaded, unknown, lg)
    ssru = key == "decoder_self" and ssru_decoder(view)
    c1, c2, c3 = st.columns([2, 1, 1])
    task = c1.radio(t("tour.task", lg), TASKS, horizontal=True, key="tour_task",
                    format_func=lambda x: t(f"tour.task.{x}", lg)) if name == DECODER_MODEL else None
    run = runs.decoding_run(view.device, view.text, task, False, name=name)
    n_layers, n_heads = loaded.config.n_decoder_layers, loaded.n_heads("cross")
    _pick("tour_dec_layer", list(range(n_layers)))
    _pick("tour_dec_head", ["mean", *range(n_heads)])
    layer = c2.selectbox(t("tour.dec_layer", lg), range(n_layers), index=n_layers - 1, key="tour_dec_layer",
                         format_func=lambda i: t("tour.layer_n", lg, i=i))
    head = "mean" if ssru else c3.selectbox(
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
        fig, mat, blocked, labels = vs.self_attention_figure(run, step, layer, head, lecture=view.lecture, lang=lg)
        _retitle(fig, lg, t("tour.fig.dec_self", lg, where=where, step=step), t("tour.axis.key_earlier", lg),
                 t("tour.axis.dec_input", lg))
        title = f"{name} · " + t("tour.fig.dec_self", lg, where=where, step=step)
        chart(fig, "tour_dec_self", Export(mat, labels, labels, title,
                                           view.text, f"{name}-decoder-self", heatmap=dict(masked=blocked)))
    elif key == "cross":
        fig, mat, rows = vs.cross_figure(run, step, layer, head, lecture=view.lecture, lang=lg)
        _retitle(fig, lg, t("tour.fig.cross", lg, where=where), t("tour.axis.source", lg), t("tour.axis.dec_input", lg))
        title = f"{name} · " + t("tour.fig.cross", lg, where=where)
        chart(fig, "tour_cross", Export(mat, rows, list(run.source_tokens), title,
                                        view.text, f"{name}-cross"))
        fig = vs.cross_row_figure(run, step, layer, head, lecture=view.lecture, lang=lg)
        st.plotly_chart(_retitle(fig, lg, t("tour.fig.cross_row", lg, step=step, token=esc(s.inputs[-1], 16),
                                            out=esc(s.chosen, 16)), None, t("quiz.weight", lg)),
                        key="tour_cross_row")
    else:
        if quiz_on and not quiz.next_token_question(view, run, step, lg):
            return
        fig = vs.topk_figure(run, step, lecture=view.lecture, lang=lg)
        st.plotly_chart(_retitle(fig, lg, t("tour.fig.topk", lg, step=step, k=len(s.top_tokens)),
                                 t("tour.axis.probability", lg)), key="tour_topk")
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
                                title=f"{esc(title, 120)}<br><sup>{va.FORMULA}</sup>")
    chart(fig, "tour_forget", Export(gates.T, [f"c{i}" for i in range(gates.shape[1])], list(s.inputs),
                                     f"{name} · {title}", view.text, f"{name}-forget-gate-L{layer}-step{step}",
                                     heatmap=dict(vmin=0, vmax=1)))
    st.caption(va.forget_gate_caption(lg))
