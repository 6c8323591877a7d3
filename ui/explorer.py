"""Streamlit side of the Attention explorer: options, cached derived views, and the four sections
(one head, all heads, token view, head metrics). Figures come from `viz.attention`; numbers from `viz.metrics`.

Caching: derived views (mode x hide-specials x merge-words) and head metrics are st.cache_resource entries keyed by
(model, device, text, block, options); they call the cached trace, so changing layer, head or token re-runs
neither the model nor these transforms: a rerun only slices arrays and builds small figures.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
import streamlit as st

from model.trace import BLOCK_LABELS
from ui.downloads import download_buttons
from ui.state import K_HEAD, K_LAYER, View, get_trace, md_escape, safe_callback
from viz import metrics as vm
from viz.attention import grid_figure, grid_figure_mpl, head_heatmap, token_view, token_view_mpl
from viz.export import heatmap_figure, matrix_csv
from viz.theme import esc

MODES = {"head": "Per head", "mean": "Average of heads", "rollout": "Rollout across layers"}
K_MODE, K_HIDE, K_MERGE, K_COLOUR, K_HEADS, K_GRID, K_TOPK = (
    "ex_mode", "ex_hide_special", "ex_merge_words", "ex_grid_colour", "ex_heads", "ex_grid", "ex_topk")
JSON_MAX_TOKENS = 160  # the JSON trace grows as L*H*n^2 numbers in text; beyond this, offer NPZ only
THUMB = 24  # thumbnail side in the all-heads grid (pooled)


@dataclass(frozen=True)
class Derived:
    """One view of a block's attention after the options, plus the labels and the token -> row map."""

    att: np.ndarray  # (L, H', n', m'): H' = H per head, 1 for mean / rollout
    rows: list[str]  # n' labels (tokens, or words when merged)
    cols: list[str]  # m' labels
    row_of_token: dict[int, int]  # original query-token index -> row of `att` (absent when hidden)
    head_names: list[str]
    thumbs: tuple  # (mosaic image, t, u) for the all-heads grid


@st.cache_resource(max_entries=24, show_spinner=False)
def derived_view(model: str, device: str, text: str, block: str, mode: str, hide: bool, merge: bool) -> Derived:
    trace = get_trace(model, device, text)
    att = trace.attention(block)  # (L, H, n, m)
    rows_tok, cols_tok = trace.axis_tokens(block)
    rows_sp, cols_sp = trace.axis_special(block)
    H = att.shape[1]
    names = [f"Head {h}" for h in range(H)]
    if mode == "mean":
        att, names = vm.head_average(att), ["mean of heads"]
    elif mode == "rollout":
        att, names = vm.rollout(att)[:, None], ["rollout"]
    row_idx, col_idx = list(range(att.shape[-2])), list(range(att.shape[-1]))
    if hide:
        att, row_idx, col_idx = vm.drop_special(att, rows_sp, cols_sp)
    rows = [rows_tok[i] for i in row_idx]
    cols = [cols_tok[j] for j in col_idx]
    row_of = {i: k for k, i in enumerate(row_idx)}
    if merge and block == "encoder":
        words = trace.source_word_ids
        r_units = vm.word_units([words[i] for i in row_idx])
        c_units = vm.word_units([words[j] for j in col_idx])
        att = vm.merge_words(att, r_units, c_units)
        row_of = {row_idx[i]: u for u, unit in enumerate(r_units) for i in unit}
        rows, cols = vm.unit_labels(rows, r_units), vm.unit_labels(cols, c_units)
    att = np.ascontiguousarray(att, dtype=np.float32)
    return Derived(att, rows, cols, row_of, names, vm.mosaic(att, size=THUMB))


@st.cache_resource(max_entries=24, show_spinner=False)
def block_metrics(model: str, device: str, text: str, block: str) -> dict[str, np.ndarray]:
    """Metrics of the raw per-head attention (before any option), each (L, H)."""
    trace = get_trace(model, device, text)
    _, cols_sp = trace.axis_special(block)
    return vm.head_metrics(trace.attention(block), cols_sp, square=block != "cross")


def options(view: View) -> tuple[str, bool, bool]:
    """The explorer's option row; values persist across page switches."""
    for k in (K_MODE, K_HIDE, K_MERGE, K_COLOUR):  # re-assert, or a page switch would reset them
        if k in st.session_state:
            st.session_state[k] = st.session_state[k]
    c1, c2, c3 = st.columns([2.2, 1.3, 1.3])
    modes = list(MODES) if view.block != "cross" else ["head", "mean"]
    if st.session_state.get(K_MODE) not in modes:
        st.session_state[K_MODE] = "head"
    mode = c1.segmented_control("Show", modes, key=K_MODE, format_func=MODES.get, persist_state="session",
                                help="Rollout (Abnar & Zuidema 2020): per layer 0.5·mean-of-heads + 0.5·I, rows "
                                     "renormalised, multiplied through the layers.") or "head"
    hide = c2.toggle("Hide [CLS]/[SEP], renormalise", key=K_HIDE, persist_state="session",
                     help="In MiniLM about half of all attention goes to [CLS]/[SEP]; hiding them and rescaling "
                          "each row to sum to 1 shows the structure among the real tokens.")
    merge = c3.toggle("Merge subwords into words", key=K_MERGE, persist_state="session",
                      disabled=view.block != "encoder",
                      help="Attention TO a word = sum over its pieces; FROM a word = mean over its pieces.")
    return mode, hide, merge and view.block == "encoder"


def _title(view: View, mode: str, layer: int, head: int) -> str:
    what = {"head": f"Layer {layer} · Head {head}", "mean": f"Layer {layer} · mean of heads",
            "rollout": f"Rollout through layers 0-{layer}"}[mode]
    block = "" if view.block == "encoder" else f" · {BLOCK_LABELS[view.block]}"
    return f"{view.model_name}{block} · {what}"


def _mpl_text(s: str) -> str:
    return s.replace("$", r"\$")  # matplotlib would read $...$ as math


def head_from_selection(state) -> tuple[int, int] | None:
    """(layer, head) of the first clicked marker in a plotly_chart selection state, else None."""
    sel = state.get("selection") if isinstance(state, dict) else getattr(state, "selection", None)
    points = (sel.get("points") if isinstance(sel, dict) else getattr(sel, "points", None)) or []
    for p in points:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if isinstance(cd, dict):  # a typed-array slice arrives as {"0": layer, "1": head}
            cd = [cd.get("0", cd.get(0)), cd.get("1", cd.get(1))]
        try:
            return int(cd[0]), int(cd[1])
        except (TypeError, ValueError, IndexError, KeyError):
            continue
    return None


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


def one_head(view: View, d: Derived, mode: str) -> None:
    h = view.head if mode == "head" else 0
    mat = d.att[view.layer, h]  # (n', m')
    title = _title(view, mode, view.layer, view.head)
    blocked = None
    if view.block == "decoder_self" and mat.shape[0] == mat.shape[1]:
        blocked = np.triu(np.ones(mat.shape, dtype=bool), k=1)  # the look-ahead mask: future keys
    fig = head_heatmap(mat, d.rows, d.cols, title=esc(title, 120), lecture=view.lecture, blocked=blocked)
    st.plotly_chart(fig, key="ex_head_chart", config={"displaylogo": False})
    st.caption("Rows are queries (the token that looks), columns are keys (the tokens it looks at); each row sums "
               "to 1. Hover a cell for its weight.")
    download_buttons("ex_head_export", lambda: heatmap_figure(
        mat, d.rows, d.cols, title=_mpl_text(title), subtitle=_mpl_text(view.text), vmin=0.0,
        colorbar_label="attention weight", masked=blocked), mat, d.rows, d.cols, filename=title)


def all_heads(view: View, d: Derived, mode: str, metrics: dict[str, np.ndarray]) -> None:
    colours = {"thumbs": "Attention thumbnails", **vm.METRICS}
    colour = st.selectbox("Colour the grid by", list(colours), format_func=colours.get, key=K_COLOUR,
                          persist_state="session")
    metric = metrics[colour] if colour != "thumbs" else None
    L, H = (d.att.shape[0], d.att.shape[1]) if metric is None else metric.shape
    sel = (view.layer, view.head if (mode == "head" or metric is not None) else 0)
    names = d.head_names if metric is None and mode != "head" else None
    fig = grid_figure(d.att, sel, lecture=view.lecture, metric=metric, metric_label=colours[colour],
                      head_names=names, thumbs=d.thumbs if metric is None else None,
                      title=esc(f"{view.model_name} · all {L} layers x {H} heads", 120))
    st.plotly_chart(fig, key=K_GRID, on_select=_select_from_grid, selection_mode="points",
                    config={"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]})
    st.caption("Click a head to show it in detail (or use Layer / Head in the sidebar). Thumbnails are "
               f"block-averaged to at most {THUMB} x {THUMB} and scaled to their own maximum."
               if metric is None else "Metrics of the raw attention (before hiding specials or merging words).")
    title = f"{view.model_name} · all heads"
    if metric is not None:
        csv_matrix, csv_rows, csv_cols = metric, [f"Layer {i}" for i in range(L)], [f"Head {h}" for h in range(H)]
    else:  # thumbnails: export every metric per head (the pooled pixels are not worth a CSV)
        csv_matrix = np.stack([metrics[k].ravel() for k in vm.METRICS], axis=1)  # (L*H, 6)
        csv_rows = [f"Layer {i} Head {h}" for i in range(metrics["entropy"].shape[0])
                    for h in range(metrics["entropy"].shape[1])]
        csv_cols = list(vm.METRICS.values())
    download_buttons("ex_grid_export", lambda: grid_figure_mpl(
        d.att, title=_mpl_text(title), subtitle=_mpl_text(view.text), metric=metric, metric_label=colours[colour]),
        csv_matrix, csv_rows, csv_cols, filename=title)


def token_section(view: View, d: Derived, mode: str) -> None:
    row = d.row_of_token.get(view.token)
    rows_tok, _ = view.trace.axis_tokens(view.block)
    if row is None:
        st.info(f"The selected token {view.token} ({md_escape(rows_tok[view.token])}) is hidden by “Hide [CLS]/[SEP]”: "
                "pick another query token in the sidebar.")
        return
    H = d.att.shape[1]
    c1, c2 = st.columns([3, 1])
    heads = c1.multiselect("Heads", list(range(H)), default=list(range(H)), key=f"{K_HEADS}-{H}",
                           format_func=lambda h: d.head_names[h] if h < len(d.head_names) else f"Head {h}")
    long_input = max(d.att.shape[-2:]) > 60
    top_k = c2.number_input("Lines per head (top-k)", 1, 50, 20 if long_input else 50,
                            key=f"{K_TOPK}-{int(long_input)}")
    title = f"{view.model_name} · Layer {view.layer} · where “{d.rows[row]}” looks"
    layer_att = d.att[view.layer]  # (H', n', m')
    fig = token_view(layer_att, row, d.rows, d.cols, heads, lecture=view.lecture, top_k=int(top_k),
                     title=esc(title, 120))
    st.plotly_chart(fig, key="ex_token_chart", config={"displaylogo": False})
    st.caption("Left: the query token; right: the keys. One colour per head, line opacity = weight "
               "(lines under 0.01 are not drawn). Click a head in the legend to toggle it.")
    download_buttons("ex_token_export", lambda: token_view_mpl(
        layer_att, row, d.rows, d.cols, heads, top_k=int(top_k), title=_mpl_text(title),
        subtitle=_mpl_text(view.text)), layer_att[:, row, :], d.head_names if mode != "head" else
        [f"Head {h}" for h in range(H)], d.cols, filename=title)

    st.subheader(f"For “{md_escape(d.rows[row])}”: the most attended token in every layer and head")
    skip_self = st.toggle("Ignore the token itself", key="ex_skip_self", persist_state="session")
    same_axis = view.block != "cross"
    table = vm.top_attended(d.att, row, d.cols, exclude=row if skip_self and same_axis else None)
    if mode != "head":
        for r in table:
            r["Head"] = d.head_names[r["Head"]]
    st.dataframe(table, hide_index=True, key="ex_top_table", height=min(420, 36 * len(table) + 40))


def metrics_section(view: View, metrics: dict[str, np.ndarray]) -> None:
    rows = vm.metrics_rows(metrics)
    st.dataframe(rows, hide_index=True, key="ex_metrics_table", height=min(460, 36 * len(rows) + 40))
    st.caption("Per head, averaged over query rows: entropy of the row in bits (low = focused), the mass on "
               "special tokens, on the token itself / the previous / the next token, and the mean distance "
               "|i - j| weighted by attention. Click a column header to sort.")
    L, H = next(iter(metrics.values())).shape
    labels = list(vm.METRICS.values())
    table = np.stack([metrics[k].ravel() for k in vm.METRICS], axis=1)  # (L*H, 6)
    st.download_button("Download metrics CSV", matrix_csv(table, [f"L{i // H}H{i % H}" for i in range(L * H)], labels),
                       f"{view.model_name}-head-metrics.csv", "text/csv", key="ex_metrics_csv")


def trace_npz_bytes(trace) -> bytes:
    """The trace as a compressed .npz (readable with AttentionTrace.load_npz; no pickle)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **trace.to_npz_dict())
    return buf.getvalue()


def trace_json_bytes(trace) -> bytes:
    return json.dumps(trace.to_json_dict(), ensure_ascii=False).encode("utf-8")


def trace_downloads(view: View) -> None:
    """The whole trace as NPZ (compressed arrays) or JSON, generated only when clicked."""
    trace = view.trace
    name = f"headlight-{view.model_name}-trace"
    npz = lambda: trace_npz_bytes(trace)  # noqa: E731 - deferred: built only when the button is clicked
    as_json = lambda: trace_json_bytes(trace)  # noqa: E731

    c1, c2 = st.columns(2)
    c1.download_button("Trace as NPZ", npz, f"{name}.npz", "application/octet-stream", key="ex_trace_npz",
                       help="Every attention array, tokens, masks and hidden states (numpy .npz, no pickle).")
    too_big = len(trace.source_tokens) > JSON_MAX_TOKENS
    c2.download_button("Trace as JSON", as_json, f"{name}.json", "application/json", key="ex_trace_json",
                       disabled=too_big, help=f"Over {JSON_MAX_TOKENS} tokens the JSON is hundreds of MB: use NPZ."
                       if too_big else "Tokens, masks and every attention array as nested lists.")
