"""Streamlit side of the Attention explorer: the option row and the five sections (one head, all heads, token
view, head metrics, data). Numbers come from ui.runs (analysis package), figures from viz.attention / viz.heatmap.
Only the open tab is built and sent (lazy tabs), and downloads are made only when clicked. Every string is in the
catalogue (i18n/*.explorer.json, keys ex.*) in English and Korean. The quiz switch ("predict, then reveal", ui/quiz.py,
shared with the tour) hides the One head heatmap behind "where will this token attend?" and the All heads grid
behind "which head is the previous-token head?".
"""

from __future__ import annotations

import io
import json

import numpy as np
import streamlit as st

from analysis import explore
from analysis import metrics as am
from analysis.explore import MODES, Derived
from i18n import head_name, t
from viz.attention import HEAD_HOVER, grid_figure, grid_figure_mpl, token_view, token_view_mpl
from viz.export import matrix_csv
from viz.heatmap import heatmap
from viz.next_token import next_token_figure
from viz.theme import esc

from . import quiz, runs, widgets
from .state import safe_callback
from .view import K_HEAD, K_LAYER, View, md_escape
from .widgets import (
    Export,
    chart,
    head_from_selection,
    layer_head,
    localised_tabs,
    model_specials,
    rename_columns,
    shared_kv,
)

TAB_KEYS = ["ex.tab.one", "ex.tab.all", "ex.tab.token", "ex.tab.metrics", "ex.tab.data"]
TABS = [t(k, "en") for k in TAB_KEYS]  # "One head", "All heads", "Token view", "Head metrics", "Data"
K_MODE, K_HIDE, K_MERGE, K_COLOUR, K_HEADS, K_GRID, K_TOPK, K_TAB = (
    "ex_mode", "ex_hide_special", "ex_merge_words", "ex_grid_colour", "ex_heads", "ex_grid", "ex_topk", "ex_tab")
K_QUIZ = "ex_quiz"
K_SPELL = "ex_spell_bytes"  # byte pieces shown as the characters they spell (on by default; off: the raw pieces)
JSON_MAX_TOKENS = 160  # the JSON trace grows as L*H*n^2 numbers in text; beyond this, offer NPZ only


def options(view: View) -> tuple[str, bool, bool, bool]:
    """The explorer's option row (mode, hide specials, merge words, spell byte pieces); values persist across page
    switches. The byte-piece switch appears where the text has pieces of characters (Hangul read as bytes)."""
    spellable = view.trace is not None and explore.spellable(view.trace, view.block)
    c1, c2, c3, *c4 = st.columns([2.2, 1.3, 1.3, 1.3] if spellable else [2.2, 1.3, 1.3])
    modes = list(MODES) if view.block != "cross" else ["head", "mean"]
    if st.session_state.get(K_MODE) not in modes:
        st.session_state[K_MODE] = "head"
    lg = view.lang
    mode = c1.segmented_control(t("ex.show", lg), modes, key=K_MODE, persist_state="session",
                                format_func=lambda m: t(f"ex.mode.{m}", lg),
                                help=t("ex.show_help", lg)) or "head"
    sp = model_specials(view)  # the model's own special tokens: "[CLS]/[SEP]", "<s>/</s>"
    hide = c2.toggle(t("ex.hide", lg, specials=sp), key=K_HIDE, persist_state="session",
                     help=t("ex.hide_help", lg, specials=sp))
    mergeable = view.trace is not None and explore.mergeable(view.trace, view.block)
    merge = c3.toggle(t("ex.merge", lg), key=K_MERGE, persist_state="session",
                      disabled=not mergeable, help=t("ex.merge_help", lg))
    spell = False
    if spellable:
        st.session_state.setdefault(K_SPELL, True)
        spell = c4[0].toggle(t("ex.spell", lg), key=K_SPELL, persist_state="session", help=t("ex.spell_help", lg))
    return mode, hide, merge and mergeable, spell


def title(view: View, mode: str) -> str:
    lg = view.lang
    what = {"head": layer_head(view.layer, view.head, lg, shared_kv(view.model, view.head, view.block)), "mean": t("ex.title.mean", lg, layer=view.layer),
            "rollout": t("ex.title.rollout", lg, layer=view.layer)}[mode]
    block = "" if view.block == "encoder" else f" · {t(f'ex.block.{view.block}', lg)}"
    return f"{view.model_name}{block} · {what}"


def head_names(d: Derived, mode: str, lang: str, model=None, block: str = "encoder") -> list[str]:
    """The heads of a Derived view as shown: 'Head 3' ('Head 4 (KV 1)' with grouped-query attention: the key/value
    head it shares), 'mean of heads' or 'rollout', in the interface language."""
    if mode == "head":
        kv = [shared_kv(model, h, block) for h in range(d.n_heads)]
        return [t("ex.head_n", lang, i=h) + ("" if k is None else " " + t("names.kv", lang, kv=k))
                for h, k in zip(range(d.n_heads), kv)]
    return [t(f"ex.head_name.{mode}", lang)] * d.n_heads


@safe_callback
def _select_from_grid() -> None:
    """Grid click -> layer/head (a callback, so it runs before the sidebar draws on the rerun)."""
    picked = head_from_selection(st.session_state.get(K_GRID))
    if picked is None:
        return
    ss = st.session_state
    ss[K_LAYER] = picked[0]
    if ss.get(K_MODE, "head") == "head" or ss.get(K_COLOUR, "thumbs") != "thumbs":
        ss[K_HEAD] = picked[1]


def sections(view: View, d: Derived, mode: str, opts: tuple) -> None:
    """The quiz switch, then the five tabs; only the open one runs."""
    c1, c2 = st.columns([1, 2])
    c1.toggle(t("ex.quiz", view.lang), key=K_QUIZ, help=t("ex.quiz_help", view.lang))
    with c2:
        quiz.score_line(view.lang)
    tabs = localised_tabs(TAB_KEYS, K_TAB, view.lang, url=True)
    for tab, draw in zip(tabs, (one_head, all_heads, token_section, metrics_section, data_section)):
        if tab.open:
            with tab:
                draw(view, d, mode, opts)


def quiz_on() -> bool:
    return bool(st.session_state.get(K_QUIZ))


def one_head(view: View, d: Derived, mode: str, opts: tuple) -> None:
    lg = view.lang
    mat = d.att[view.layer, view.head if mode == "head" else 0]  # (n', m')
    if quiz_on():
        row = d.row_of_token.get(view.token)
        if mode != "head":
            st.info(t("ex.quiz_per_head", lg))
        elif row is None:
            st.info(t("ex.hidden_token", lg, token=view.token, specials=model_specials(view),
                      text=md_escape(view.trace.axis_tokens(view.block)[0][view.token])))
        elif not quiz.attend_question(view, view.layer, view.head, mat, d.rows, d.cols, lg, row=row,
                                      tag=(view.block, *opts[:2]) + (("bytes",) if opts[2:] and opts[2] else ())):
            return
    name = title(view, mode)
    allowed = d.allowed_at(view.layer) if mode != "rollout" else d.allowed_at(0)
    blocked = None if allowed is None else ~allowed  # the mask the layer applied: look-ahead, a sliding window's band
    window = view.trace.meta.get("sliding_window")
    if mode != "rollout" and window and view.layer in view.trace.meta.get("local_layers", ()):
        st.caption(t("ex.window_layer", lg, layer=view.layer, w=window, w1=window - 1))
    key, query = t("ex.axis.key", lg), t("ex.axis.query", lg)
    fig = heatmap(mat, d.rows, d.cols, title=esc(name, 120), lecture=view.lecture, masked=blocked, zmin=0.0,
                  hover=HEAD_HOVER, colorbar_title=t("ex.axis.weight", lg), xlabel=key, ylabel=query,
                  text_auto=False, lang=lg, highlight_row=d.row_of_token.get(view.token))  # the sidebar's query
    chart(fig, "ex_head_chart", Export(mat, d.rows, d.cols, name, view.text, name, heatmap=dict(
        vmin=0.0, colorbar_label=t("ex.axis.attention_weight", lg), masked=blocked, xlabel=key, ylabel=query)))
    st.caption(t("ex.one_head.caption", lg))


def metric_labels(lang: str, specials: str) -> dict[str, str]:
    """analysis.metrics.METRICS in the interface language; `specials` names the model's special tokens."""
    return {k: t(f"ex.metric.{k}", lang, specials=specials) for k in am.METRICS}


def all_heads(view: View, d: Derived, mode: str, opts: tuple) -> None:
    lg = view.lang
    if quiz_on():
        if view.block != "encoder":
            st.info(t("ex.quiz_encoder", lg))
        elif not quiz.prev_head_question(view, view.layer, lg):
            return
    metrics = runs.block_metrics(view.model_name, view.device, view.text, view.block)
    colours = {"thumbs": t("ex.thumbs", lg), **metric_labels(lg, model_specials(view))}
    colour = st.selectbox(t("ex.colour_by", lg), list(colours), format_func=colours.get, key=K_COLOUR,
                          persist_state="session")
    metric = metrics[colour] if colour != "thumbs" else None
    L, H = (d.att.shape[0], d.att.shape[1]) if metric is None else metric.shape
    sel = (view.layer, view.head if (mode == "head" or metric is not None) else 0)
    thumbs = runs.thumbnails(view.model_name, view.device, view.text, view.block, mode, *opts) if metric is None \
        else None
    fig = grid_figure(d.att, sel, lecture=view.lecture, metric=metric, metric_label=colours[colour], thumbs=thumbs,
                      head_names=head_names(d, mode, lg) if metric is None and mode != "head" else None,
                      title=esc(t("ex.all.title", lg, model=view.model_name, layers=L, heads=H), 120), lang=lg)
    name = t("ex.all.name", lg, model=view.model_name)
    if metric is not None:
        table, rows, cols = (metric, [t("ex.layer_n", lg, i=i) for i in range(L)],
                             [t("ex.head_n", lg, i=h) for h in range(H)])
    else:  # thumbnails: export every metric per head (the pooled pixels are not worth a CSV)
        table, rows, cols = metrics_table(metrics, lg, model_specials(view))
    chart(fig, K_GRID, Export(table, rows, cols, name, filename=name, make_figure=lambda: grid_figure_mpl(
        d.att, title=name, subtitle=view.text, metric=metric, metric_label=colours[colour], lang=lg)),
        on_select=_select_from_grid, selection_mode="points",
        config={"modeBarButtonsToRemove": ["select2d", "lasso2d"]})
    st.caption(t("ex.all.caption_thumbs", lg, size=runs.THUMB) if metric is None else t("ex.all.caption_metric", lg))


def token_section(view: View, d: Derived, mode: str, opts: tuple) -> None:
    lg = view.lang
    row = d.row_of_token.get(view.token)
    rows_tok, _ = view.trace.axis_tokens(view.block)
    if row is None:
        st.info(t("ex.hidden_token", lg, token=view.token, text=md_escape(rows_tok[view.token]),
                  specials=model_specials(view)))
        return
    H = d.att.shape[1]
    names = head_names(d, mode, lg, view.model, view.block)
    c1, c2 = st.columns([3, 1])
    heads = c1.multiselect(t("ex.heads", lg), list(range(H)), default=list(range(H)), key=f"{K_HEADS}-{H}",
                           placeholder=t("widgets.pick_heads_shown", lg), select_all=False,
                           format_func=lambda h: names[h] if h < len(names) else t("ex.head_n", lg, i=h))
    long_input = max(d.att.shape[-2:]) > 60
    top_k = int(c2.number_input(t("ex.top_k", lg), 1, 50, 20 if long_input else 50,
                                key=f"{K_TOPK}-{int(long_input)}"))
    name = t("ex.token.title", lg, model=view.model_name, layer=view.layer, token=d.rows[row])
    layer_att = d.att[view.layer]  # (H', n', m')
    fig = token_view(layer_att, row, d.rows, d.cols, heads, lecture=view.lecture, top_k=top_k, title=esc(name, 120),
                     lang=lg)
    chart(fig, "ex_token_chart", Export(layer_att[:, row, :], names, d.cols, name, filename=name,
                                        make_figure=lambda: token_view_mpl(layer_att, row, d.rows, d.cols, heads,
                                                                           top_k=top_k, title=name,
                                                                           subtitle=view.text, lang=lg)))
    st.caption(t("ex.token.caption", lg))
    st.subheader(t("ex.token.top", lg, token=md_escape(d.rows[row])))
    skip_self = st.toggle(t("ex.skip_self", lg), key="ex_skip_self", persist_state="session")
    table = am.top_attended(d.att, row, d.cols, exclude=row if skip_self and view.block != "cross" else None)
    if mode != "head":
        for r in table:
            r["head"] = names[r["head"]]
    table = rename_columns(table, lg, specials=model_specials(view))
    widgets.table(table, view.lecture, key="ex_top_table", height=min(420, 36 * len(table) + 40))


def metrics_table(metrics: dict[str, np.ndarray], lang: str = "en",
                  specials: str = "") -> tuple[np.ndarray, list[str], list[str]]:
    """Every metric per head: ((L*H, 6) values, 'Layer i Head h' rows, metric names; `specials` names the model's
    special tokens, default "special tokens")."""
    specials = specials or t("notes.specials.none", lang)
    L, H = next(iter(metrics.values())).shape
    table = np.stack([metrics[k].ravel() for k in am.METRICS], axis=1)  # (L*H, 6)
    return (table, [head_name(i // H, i % H, lang) for i in range(L * H)],
            list(metric_labels(lang, specials).values()))


def metrics_section(view: View, d: Derived, mode: str, opts: tuple) -> None:
    lg = view.lang
    metrics = runs.block_metrics(view.model_name, view.device, view.text, view.block)
    rows = rename_columns(am.metrics_rows(metrics), lg, specials=model_specials(view))
    widgets.table(rows, view.lecture, key="ex_metrics_table", height=min(460, 36 * len(rows) + 40))
    st.caption(t("ex.metrics.caption", lg))
    st.download_button(t("ex.metrics.csv", lg), lambda: matrix_csv(*metrics_table(metrics, lg, model_specials(view))),
                       f"{view.model_name}-head-metrics.csv", "text/csv", key="ex_metrics_csv")


def trace_npz_bytes(trace) -> bytes:
    """The trace as a compressed .npz (readable with AttentionTrace.load_npz; no pickle)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **trace.to_npz_dict())
    return buf.getvalue()


def trace_json_bytes(trace) -> bytes:
    return json.dumps(trace.to_json_dict(), ensure_ascii=False).encode("utf-8")


def data_section(view: View, d: Derived, mode: str, opts: tuple) -> None:
    """The whole trace as NPZ (compressed arrays) or JSON, generated only when clicked."""
    lg = view.lang
    st.write(t("ex.data.intro", lg))
    trace, name = view.trace, f"headlight-{view.model_name}-trace"
    c1, c2 = st.columns(2)
    c1.download_button(t("ex.data.npz", lg), lambda: trace_npz_bytes(trace), f"{name}.npz",
                       "application/octet-stream", key="ex_trace_npz", help=t("ex.data.npz_help", lg))
    too_big = len(trace.source_tokens) > JSON_MAX_TOKENS
    c2.download_button(t("ex.data.json", lg), lambda: trace_json_bytes(trace), f"{name}.json", "application/json",
                       key="ex_trace_json", disabled=too_big,
                       help=t("ex.data.json_too_big", lg, n=JSON_MAX_TOKENS) if too_big
                       else t("ex.data.json_help", lg))


NEXT_MORE, NEXT_MAX = 8, 64  # greedy steps per "more" click; the longest continuation shown


def next_token_panel(view: View) -> None:
    """A decoder-only model (GPT-2 family): the next-token distribution after the sentence and a greedy
    continuation, one token per step with its probability and the runners-up."""
    lg = view.lang
    st.subheader(t("ex.next.title", lg))
    meta = view.trace.meta
    tokens, probs = list(meta.get("next_tokens", [])), [float(p) for p in meta.get("next_probs", [])]
    shown = view.shown
    if tokens:  # byte-level pieces as text ("ĊĠĠĠĠĠ" -> "↵␣␣␣␣␣"), at the theme's sizes (lecture mode too)
        fig = next_token_figure([shown(x) for x in tokens], probs, lecture=view.lecture, lang=lg)
        chart(fig, "ex_next", subtitle=view.text, filename=f"{view.model_name}-next-token")
    # the continuation grows on request, one step (one forward) per click: a new sentence costs one forward here,
    # not eight (see ui.runs.greedy_continuation)
    key, here = "_hl_next_n", (view.model_name, view.text)
    held = st.session_state.get(key)
    n = held[1] if isinstance(held, tuple) and held[0] == here else 0
    c1, c2, c3 = st.columns([1, 1, 3])
    if c1.button(t("ex.next.one", lg), key="ex_next_one", icon=":material/skip_next:"):
        n += 1
    if c2.button(t("ex.next.more", lg, k=NEXT_MORE), key="ex_next_more", icon=":material/fast_forward:"):
        n += NEXT_MORE
    if c3.button(t("ex.next.clear", lg), key="ex_next_clear", disabled=n == 0):
        n = 0
    steps = runs.greedy_continuation(view.model_name, view.device, view.text, min(n, NEXT_MAX))
    st.session_state[key] = (here, len(steps))
    if not steps:
        st.caption(t("ex.next.none_yet", lg))
        return
    # ids the tokenizer cannot spell (an embedding larger than the vocabulary) show as [id], as in the table
    said = view.model.tokenizer.decode([s.choice.id for s in steps]).strip() or " ".join(s.choice.token for s in steps)
    st.markdown(t("ex.next.continuation", lg) + " " + md_escape(view.text) + " **" + md_escape(said) + "**")
    rows = [{"step": i + 1, "token": shown(s.choice.token), "probability": round(s.choice.prob, 4),
             "alternatives": ", ".join(f"{shown(c.token)} {c.prob:.2f}" for c in s.top[1:])} for i, s in enumerate(steps)]
    widgets.table(rename_columns(rows, lg), view.lecture, key="ex_next_table")
    st.caption(t("ex.next.caption", lg))
