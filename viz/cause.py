"""Plotly figures of the Head lab's cause views (no Streamlit, no torch; results from analysis/cause.py):

- generation replay: one step's query rows (every layer for one head, or every head of one layer) over the keys so
  far, the keys and values the step appended, which query heads read which key/value head, the costs per step (the
  cache's size, multiply-adds and time with and without it), the attention sink per step;
- direct logit attribution: the layer x head grid, each layer's heads and MLP beside the embeddings;
- activation patching: the head grid and the residual grid (layer x position), raw or normalised;
- one head side by side: its attention map on the clean prompt.

Head grids carry invisible markers with [layer, head] as customdata, so a click picks the head (ui/cause.py).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import head_name
from i18n import t as tr

from .export_spec import ExportSpec, attach
from .heads import head_grid
from .heatmap import heatmap
from .theme import HIGHLIGHT, base_layout, esc, figure, merge

WIDE_FROM = 13  # layers: a deeper model's grid lies with its layers along x


def _fit(layout: dict) -> dict:
    return merge(layout, {"xaxis": {"automargin": True}, "yaxis": {"automargin": True}})


def pickable(fig: go.Figure, values: np.ndarray, lang: str, wide: bool) -> go.Figure:
    """Invisible square markers over a head grid's cells with [layer, head, value] as customdata: a click picks the
    head (plotly reports a clicked point only where it has hover, so the markers carry the cell's hover)."""
    L, H = values.shape
    layers = [tr("ex.layer_n", lang, i=la) for la in range(L)]
    heads = [tr("ex.head_n", lang, i=h) for h in range(H)]
    ll, hh = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    xs, ys = ([layers[i] for i in ll.ravel()], [heads[h] for h in hh.ravel()]) if wide else \
        ([heads[h] for h in hh.ravel()], [layers[i] for i in ll.ravel()])
    v = np.asarray(values, dtype=np.float64)
    custom = [[int(a), int(b), float(v[a, b]) if np.isfinite(v[a, b]) else None]
              for a, b in zip(ll.ravel(), hh.ravel())]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", customdata=custom,
                             marker=dict(size=18, opacity=0.0, color="#000000", symbol="square"),
                             hovertemplate="%{x} · %{y}<br>%{customdata[2]:.3f}<extra></extra>", showlegend=False,
                             name="heads"))
    return fig


def grid(values: np.ndarray, *, title: str, colorbar: str, chosen, lecture: bool, lang: str,
         zmax: float | None = None, diverging: bool = True) -> go.Figure:
    """A clickable layer x head grid (layers along x for a deep model)."""
    L, H = values.shape
    wide = L >= WIDE_FROM
    fig = head_grid(values, title=title, colorbar_title=colorbar, diverging=diverging, chosen=chosen, zmax=zmax,
                    lecture=lecture, lang=lang, wide=wide)
    return pickable(fig, values, lang, wide)


# ---- generation replay ------------------------------------------------------------------------------------------
def step_rows(rows: np.ndarray, tokens: list[str], labels: list[str], *, title: str, lecture: bool = False,
              lang: str = "en", highlight: int | None = None) -> go.Figure:
    """(R, P + N) query rows over the final sequence's keys; NaN past the keys the step could see (drawn blocked; 0
    in its export)."""
    return heatmap(rows, labels, list(tokens), title=title, zmin=0.0, zmax=None, lecture=lecture, lang=lang,
                   masked=~np.isfinite(rows), xlabel=tr("ex.axis.key", lang), colorbar_title=tr("ex.axis.weight", lang),
                   text_auto=False, highlight_row=highlight, extra_layout=_fit({}),
                   export=ExportSpec(np.nan_to_num(rows), labels, list(tokens), title))


def kv_rows(values: np.ndarray, labels: list[str], *, title: str, lecture: bool = False,
            lang: str = "en") -> go.Figure:
    """(rows, d_k) the keys or values a step appended, one row per key/value head and position fed."""
    m = float(np.abs(values).max()) if values.size else 1.0
    dims = [str(i) for i in range(values.shape[1])]
    return heatmap(values, labels, dims, title=title, colorscale="RdBu",
                   zmin=-(m or 1.0), zmax=m or 1.0, zmid=0.0, lecture=lecture, lang=lang, text_auto=False,
                   xlabel=tr("cause.gen.dim", lang), colorbar_title="", extra_layout=_fit({}),
                   height=max(220, 26 * values.shape[0] + 160),
                   export=ExportSpec(values, labels, dims, title))  # the twin in the data's own range


def kv_groups(kv_map: np.ndarray, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """(H, G): which key/value head (a cache) each query head reads."""
    H, G = kv_map.shape
    rows = [tr("ex.head_n", lang, i=h) for h in range(H)]
    cols = [tr("cause.gen.kv_n", lang, g=g) for g in range(G)]
    text = [["●" if kv_map[h, g] else "" for g in range(G)] for h in range(H)]
    title = tr("cause.gen.groups_title", lang, h=H, g=G)
    return heatmap(kv_map, rows, cols, title=title, export=ExportSpec(kv_map, rows, cols, title),  # its own range
                   colorscale=[[0.0, "#f2f2f2"], [1.0, "#4e79a7"]],
                   zmin=0.0, zmax=1.0, lecture=lecture, lang=lang, text_auto=False, xlabel=tr("cause.gen.cache", lang),
                   ylabel=tr("cause.gen.query_heads", lang), extra_trace=dict(text=text, texttemplate="%{text}",
                                                                              showscale=False),
                   hover="%{y} → %{x}<extra></extra>", height=max(260, 30 * H + 140), extra_layout=_fit({}))


def costs(c: dict, *, which: str, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Per step: which="cache" the cache's KiB (bars); "macs" multiply-adds with and without the cache (log scale);
    "time" measured milliseconds with and without it. It exports those series, a row each (named by their keys)."""
    steps = list(range(len(c["cache_kib"])))
    if which == "cache":
        data = [dict(type="bar", x=steps, y=c["cache_kib"].tolist(), marker=dict(color="#4e79a7"),
                     name=tr("cause.gen.cache_kib", lang), hovertemplate="%{x}: %{y:.1f} KiB<extra></extra>")]
        ytitle = "KiB"
    else:
        a, b = ("macs_cached", "macs_full") if which == "macs" else ("ms_cached", "ms_full")
        data = [dict(type="scatter", mode="lines+markers", x=steps, y=np.asarray(c[k], dtype=float).tolist(),
                     name=tr(f"cause.gen.{name}", lang), line=dict(color=col))
                for k, name, col in ((a, "with_cache", "#4e79a7"), (b, "without_cache", "#e15759"))
                if np.isfinite(np.asarray(c[k], dtype=float)).any()]
        ytitle = tr("cause.gen.macs" if which == "macs" else "cause.gen.ms", lang)
    layout = base_layout(lecture, 300, tr(f"cause.gen.cost_{which}", lang))
    layout.update(xaxis=dict(title=dict(text=tr("cause.gen.step", lang)), dtick=max(1, len(steps) // 10)),
                  yaxis=dict(title=dict(text=ytitle), **({"type": "log"} if which == "macs" else {})),
                  legend=dict(orientation="h", y=-0.3))
    keys = {"cache": ("cache_kib",), "macs": ("macs_cached", "macs_full"), "time": ("ms_cached", "ms_full")}[which]
    mat = np.stack([np.asarray(c[k], dtype=float) for k in keys])
    return attach(figure(data, _fit(layout)), ExportSpec(mat, list(keys), [str(i) for i in range(mat.shape[1])],
                                                          tr(f"cause.gen.cost_{which}", lang)))


def sink(by_layer: np.ndarray, *, lecture: bool = False, lang: str = "en", step: int | None = None) -> go.Figure:
    """(L, N) each step's mean weight on the first token per layer, the chosen step outlined."""
    L, N = by_layer.shape
    rows, cols, title = [tr("ex.layer_n", lang, i=i) for i in range(L)], [str(k) for k in range(N)], tr(
        "cause.gen.sink_title", lang)
    fig = heatmap(by_layer, rows, cols, title=title, zmin=0.0, zmax=1.0, lecture=lecture, lang=lang,
                  text_auto=False, xlabel=tr("cause.gen.step", lang), colorbar_title=tr("ex.axis.weight", lang),
                  extra_layout=_fit({}), export=ExportSpec(by_layer, rows, cols, title))  # its own range
    if step is not None and 0 <= step < N:
        fig.add_shape(type="rect", xref="x", yref="paper", x0=step - 0.5, x1=step + 0.5, y0=0, y1=1,
                      line=dict(color=HIGHLIGHT, width=3))
    return fig


# ---- attribution and patching -------------------------------------------------------------------------------------
def dla_parts(head: np.ndarray, mlp: np.ndarray, attn_bias: np.ndarray, embed: float, *, title: str,
              lecture: bool = False, lang: str = "en") -> go.Figure:
    """Each layer's heads (their sum, b_O included) and MLP, beside the embeddings, as bars; it exports the heads'
    and the MLPs' rows (a column per layer) under `title` (plain text)."""
    L = len(mlp)
    x = [tr("cause.dla.embed_short", lang)] + [str(i) for i in range(L)]
    data = [dict(type="bar", x=x, y=[embed] + [None] * L, name=tr("cause.dla.embed", lang),
                 marker=dict(color="#9c9c9c")),
            dict(type="bar", x=x, y=[None] + (head.sum(1) + attn_bias).tolist(), name=tr("cause.dla.heads", lang),
                 marker=dict(color="#4e79a7")),
            dict(type="bar", x=x, y=[None] + mlp.tolist(), name=tr("cause.dla.mlps", lang),
                 marker=dict(color="#f28e2b"))]
    layout = base_layout(lecture, 340, title)
    layout.update(barmode="group", xaxis=dict(type="category", title=dict(text=tr("heads.viz.layer", lang))),
                  yaxis=dict(title=dict(text=tr("cause.dla.part", lang))), legend=dict(orientation="h", y=-0.3))
    per_layer = np.stack([head.sum(1) + attn_bias, mlp])
    return attach(figure(data, _fit(layout)), ExportSpec(per_layer, [tr("cause.dla.heads", lang), tr(
        "cause.dla.mlps", lang)], [str(i) for i in range(per_layer.shape[1])], title))


def residual_grid(values: np.ndarray, clean: list[str], corrupt: list[str], *, title: str, colorbar: str,
                  lecture: bool = False, lang: str = "en", zmax: float | None = None) -> go.Figure:
    """(L, n) the residual stream patched per layer and position; a position whose tokens differ is starred. It
    exports `values` as given by the clean tokens (no stars), under `title` (plain text), in its own range."""
    cols = [f"*{c}" if c != x else c for c, x in zip(clean, corrupt)]  # heatmap() escapes and tells twins apart
    v = np.asarray(values, dtype=np.float32)
    m = zmax or (float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 1.0) or 1.0
    rows = [tr("ex.layer_n", lang, i=i) for i in range(v.shape[0])]
    return heatmap(v, rows, cols, title=title, colorscale="RdBu",
                   zmin=-m, zmax=m, zmid=0.0, lecture=lecture, lang=lang, text_auto=False,
                   xlabel=tr("cause.patch.position", lang), colorbar_title=colorbar, extra_layout=_fit({}),
                   height=max(300, 16 * v.shape[0] + 170), export=ExportSpec(values, rows, list(clean), title))


def head_map(att: np.ndarray, tokens: list[str], layer: int, head: int, *, lecture: bool = False,
             lang: str = "en", kv: int | None = None) -> go.Figure:
    """One head's attention on the clean prompt, the last query (the one that predicts) outlined."""
    n = att.shape[0]
    return heatmap(att, list(tokens), list(tokens), title=esc(head_name(layer, head, lang, kv=kv), 80), zmin=0.0,
                   masked=np.triu(np.ones((n, n), dtype=bool), k=1), xlabel=tr("ex.axis.key", lang),
                   ylabel=tr("ex.axis.query", lang), colorbar_title=tr("ex.axis.weight", lang), lecture=lecture,
                   lang=lang, text_auto=False, highlight_row=n - 1, extra_layout=_fit({}),
                   export=ExportSpec(att, list(tokens), list(tokens), head_name(layer, head, lang, kv=kv)))


def head_bars(values: dict[str, float], *, title: str, lecture: bool = False) -> go.Figure:
    """A few numbers of one head as horizontal bars (its DLA, its patching effect raw and normalised); it exports
    them as one row named `title` (plain text)."""
    names = list(values)
    data = [dict(type="bar", orientation="h", y=names, x=[values[k] for k in names], marker=dict(
        color=["#e15759" if (values[k] or 0) < 0 else "#4e79a7" for k in names]),
        text=[f"{values[k]:.3f}" for k in names], textposition="auto", hovertemplate="%{y}: %{x:.4f}<extra></extra>")]
    layout = base_layout(lecture, 260, title)
    layout.update(yaxis=dict(type="category", autorange="reversed"), xaxis=dict(zeroline=True))
    return attach(figure(data, _fit(layout)), ExportSpec(np.array([list(values.values())]), [title], names, title))
