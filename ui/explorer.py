"""Streamlit side of the Attention explorer: the option row and the five sections (one head, all heads, token
view, head metrics, data). Numbers come from ui.cache (analysis package), figures from viz.attention / viz.heatmap.
Only the open tab is built and sent (lazy tabs), and downloads are made only when clicked.
"""

from __future__ import annotations

import io
import json

import numpy as np
import streamlit as st

from analysis import metrics as am
from analysis.explore import MODES, Derived
from model.trace import BLOCK_LABELS
from viz.attention import HEAD_HOVER, grid_figure, grid_figure_mpl, token_view, token_view_mpl
from viz.export import matrix_csv
from viz.heatmap import heatmap
from viz.theme import esc

from . import cache
from .state import K_HEAD, K_LAYER, View, md_escape, safe_callback
from .widgets import Export, chart

TABS = ["One head", "All heads", "Token view", "Head metrics", "Data"]
K_MODE, K_HIDE, K_MERGE, K_COLOUR, K_HEADS, K_GRID, K_TOPK, K_TAB = (
    "ex_mode", "ex_hide_special", "ex_merge_words", "ex_grid_colour", "ex_heads", "ex_grid", "ex_topk", "ex_tab")
JSON_MAX_TOKENS = 160  # the JSON trace grows as L*H*n^2 numbers in text; beyond this, offer NPZ only


def options(view: View) -> tuple[str, bool, bool]:
    """The explorer's option row; values persist across page switches."""
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


def title(view: View, mode: str) -> str:
    what = {"head": view.label, "mean": f"Layer {view.layer} · mean of heads",
            "rollout": f"Rollout through layers 0-{view.layer}"}[mode]
    block = "" if view.block == "encoder" else f" · {BLOCK_LABELS[view.block]}"
    return f"{view.model_name}{block} · {what}"


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


def sections(view: View, d: Derived, mode: str, opts: tuple) -> None:
    """The five tabs; only the open one runs."""
    tabs = st.tabs(TABS, key=K_TAB, on_change="rerun")
    for tab, draw in zip(tabs, (one_head, all_heads, token_section, metrics_section, data_section)):
        if tab.open:
            with tab:
                draw(view, d, mode, opts)


def one_head(view: View, d: Derived, mode: str, opts: tuple) -> None:
    mat = d.att[view.layer, view.head if mode == "head" else 0]  # (n', m')
    name = title(view, mode)
    blocked = None
    if view.block == "decoder_self" and mat.shape[0] == mat.shape[1]:
        blocked = np.triu(np.ones(mat.shape, dtype=bool), k=1)  # the look-ahead mask: future keys
    fig = heatmap(mat, d.rows, d.cols, title=esc(name, 120), lecture=view.lecture, masked=blocked, zmin=0.0,
                  hover=HEAD_HOVER, colorbar_title="weight", xlabel="key", ylabel="query", text_auto=False)
    chart(fig, "ex_head_chart", Export(mat, d.rows, d.cols, name, view.text, name, heatmap=dict(
        vmin=0.0, colorbar_label="attention weight", masked=blocked)))
    st.caption("Rows are queries (the token that looks), columns are keys (the tokens it looks at); each row sums "
               "to 1. Hover a cell for its weight.")


def all_heads(view: View, d: Derived, mode: str, opts: tuple) -> None:
    metrics = cache.block_metrics(view.model_name, view.device, view.text, view.block)
    colours = {"thumbs": "Attention thumbnails", **am.METRICS}
    colour = st.selectbox("Colour the grid by", list(colours), format_func=colours.get, key=K_COLOUR,
                          persist_state="session")
    metric = metrics[colour] if colour != "thumbs" else None
    L, H = (d.att.shape[0], d.att.shape[1]) if metric is None else metric.shape
    sel = (view.layer, view.head if (mode == "head" or metric is not None) else 0)
    thumbs = cache.thumbnails(view.model_name, view.device, view.text, view.block, mode, *opts) if metric is None \
        else None
    fig = grid_figure(d.att, sel, lecture=view.lecture, metric=metric, metric_label=colours[colour], thumbs=thumbs,
                      head_names=d.head_names if metric is None and mode != "head" else None,
                      title=esc(f"{view.model_name} · all {L} layers x {H} heads", 120))
    name = f"{view.model_name} · all heads"
    if metric is not None:
        table, rows, cols = metric, [f"Layer {i}" for i in range(L)], [f"Head {h}" for h in range(H)]
    else:  # thumbnails: export every metric per head (the pooled pixels are not worth a CSV)
        table, rows, cols = metrics_table(metrics)
    chart(fig, K_GRID, Export(table, rows, cols, name, filename=name, make_figure=lambda: grid_figure_mpl(
        d.att, title=name, subtitle=view.text, metric=metric, metric_label=colours[colour])),
        on_select=_select_from_grid, selection_mode="points",
        config={"modeBarButtonsToRemove": ["select2d", "lasso2d"]})
    st.caption("Click a head to show it in detail (or use Layer / Head in the sidebar). Thumbnails are "
               f"block-averaged to at most {cache.THUMB} x {cache.THUMB} and scaled to their own maximum."
               if metric is None else "Metrics of the raw attention (before hiding specials or merging words).")


def token_section(view: View, d: Derived, mode: str, opts: tuple) -> None:
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
    top_k = int(c2.number_input("Lines per head (top-k)", 1, 50, 20 if long_input else 50,
                                key=f"{K_TOPK}-{int(long_input)}"))
    name = f"{view.model_name} · Layer {view.layer} · where “{d.rows[row]}” looks"
    layer_att = d.att[view.layer]  # (H', n', m')
    fig = token_view(layer_att, row, d.rows, d.cols, heads, lecture=view.lecture, top_k=top_k, title=esc(name, 120))
    chart(fig, "ex_token_chart", Export(layer_att[:, row, :], d.head_names, d.cols, name, filename=name,
                                        make_figure=lambda: token_view_mpl(layer_att, row, d.rows, d.cols, heads,
                                                                           top_k=top_k, title=name,
                                                                           subtitle=view.text)))
    st.caption("Left: the query token; right: the keys. One colour per head, line opacity = weight "
               "(lines under 0.01 are not drawn). Click a head in the legend to toggle it.")
    st.subheader(f"For “{md_escape(d.rows[row])}”: the most attended token in every layer and head")
    skip_self = st.toggle("Ignore the token itself", key="ex_skip_self", persist_state="session")
    table = am.top_attended(d.att, row, d.cols, exclude=row if skip_self and view.block != "cross" else None)
    if mode != "head":
        for r in table:
            r["Head"] = d.head_names[r["Head"]]
    st.dataframe(table, hide_index=True, key="ex_top_table", height=min(420, 36 * len(table) + 40))


def metrics_table(metrics: dict[str, np.ndarray]) -> tuple[np.ndarray, list[str], list[str]]:
    """Every metric per head: ((L*H, 6) values, 'Layer i Head h' rows, metric names)."""
    L, H = next(iter(metrics.values())).shape
    table = np.stack([metrics[k].ravel() for k in am.METRICS], axis=1)  # (L*H, 6)
    return table, [f"Layer {i // H} Head {i % H}" for i in range(L * H)], list(am.METRICS.values())


def metrics_section(view: View, d: Derived, mode: str, opts: tuple) -> None:
    metrics = cache.block_metrics(view.model_name, view.device, view.text, view.block)
    rows = am.metrics_rows(metrics)
    st.dataframe(rows, hide_index=True, key="ex_metrics_table", height=min(460, 36 * len(rows) + 40))
    st.caption("Per head, averaged over query rows: entropy of the row in bits (low = focused), the mass on "
               "special tokens, on the token itself / the previous / the next token, and the mean distance "
               "|i - j| weighted by attention. Click a column header to sort.")
    st.download_button("Download metrics CSV", lambda: matrix_csv(*metrics_table(metrics)),
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
    st.write("Download the whole trace: tokens, ids, masks, every attention array and the hidden states.")
    trace, name = view.trace, f"headlight-{view.model_name}-trace"
    c1, c2 = st.columns(2)
    c1.download_button("Trace as NPZ", lambda: trace_npz_bytes(trace), f"{name}.npz", "application/octet-stream",
                       key="ex_trace_npz",
                       help="Every attention array, tokens, masks and hidden states (numpy .npz, no pickle).")
    too_big = len(trace.source_tokens) > JSON_MAX_TOKENS
    c2.download_button("Trace as JSON", lambda: trace_json_bytes(trace), f"{name}.json", "application/json",
                       key="ex_trace_json", disabled=too_big,
                       help=f"Over {JSON_MAX_TOKENS} tokens the JSON is hundreds of MB: use NPZ."
                       if too_big else "Tokens, masks and every attention array as nested lists.")
