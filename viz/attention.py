"""Plotly figures of the Attention explorer (and their matplotlib twins for slide export). No Streamlit here.

- one head:      viz.heatmap.heatmap with HEAD_HOVER ("query -> key: weight", 3 decimals).
- grid_figure:   every layer x head as a thumbnail: ONE heatmap of a mosaic of block-mean-pooled thumbnails
                 (at most `size` x `size` each, e.g. 6 x 12 heads of 24 x 24 for 512 tokens), plus one invisible
                 marker per head that carries (layer, head) for hover and click selection. Or, coloured by a metric,
                 one cell per head.
- token_view:    BertViz-style head view for one query token and one layer: two columns of tokens, a line from the
                 query to each key per head, opacity = weight, one colour per head. Long inputs draw only the top-k
                 keys per head.
Shapes: att (L, H, n, m); one layer (H, n, m); a head (n, m).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from i18n import t as tr

from .heatmap import block_mean
from .theme import (
    HIGHLIGHT,
    PAGE_WIDTH,
    PHONE_WIDTH,
    SLIDE_FONT,
    base_layout,
    esc,
    figure,
    font_size,
    fonts,
    head_colour,
    number_text,
    rgba,
    text_width,
    title_margin,
    title_on_top,
)

COLORSCALE = "Viridis"
ALL_TOKENS_MAX = 60  # the token view lists every token up to this length, else only the keys it draws lines to
HEAD_HOVER = "%{y} -> %{x}: %{z:.3f}<extra></extra>"  # the one-head heatmap's hover: "query -> key: weight"


# ---- thumbnails of the all-heads grid ---------------------------------------------------------------------------------------------------
def pool(matrix: np.ndarray, size: int) -> np.ndarray:
    """Block-mean pooling of a 2-D matrix to at most size x size (uneven blocks when n is not a multiple)."""
    n, m = matrix.shape
    return block_mean(matrix, np.linspace(0, n, min(n, size) + 1).astype(int)[:-1],
                      np.linspace(0, m, min(m, size) + 1).astype(int)[:-1])


def mosaic(att: np.ndarray, size: int = 24, gap: int = 1, normalise: bool = True) -> tuple[np.ndarray, int, int]:
    """(L, H, n, m) -> one (L*(t+gap), H*(u+gap)) image of pooled thumbnails with NaN gaps; returns (img, t, u).
    With `normalise`, each thumbnail is divided by its own maximum so diffuse heads stay visible."""
    L, H, n, m = att.shape
    t, u = min(n, size), min(m, size)
    img = np.full((L * (t + gap), H * (u + gap)), np.nan, dtype=np.float32)
    for layer in range(L):
        for head in range(H):
            th = pool(att[layer, head], size)
            if normalise:
                mx = float(th.max())
                th = th / mx if mx > 0 else th
            y, x = layer * (t + gap), head * (u + gap)
            img[y:y + t, x:x + u] = th
    return img, t, u


# ---- all heads -------------------------------------------------------------------------------------------------------
def grid_figure(att: np.ndarray, selected: tuple[int, int] | None = None, *, lecture: bool = False,
                size: int = 24, metric: np.ndarray | None = None, metric_label: str = "",
                head_names: list[str] | None = None, title: str = "", thumbs: tuple | None = None,
                lang: str = "en") -> go.Figure:
    """All layers x heads in one figure: pooled thumbnails (`thumbs` = a precomputed `mosaic(att, size)`), or one
    cell per head coloured by `metric` (L, H)."""
    L, H = att.shape[:2] if metric is None else np.shape(metric)
    if metric is None:
        img, t, u = thumbs if thumbs is not None else mosaic(att, size=size)
        cy, cx = (t + 1) / 2 - 0.5, (u + 1) / 2 - 0.5  # centre offset of a thumbnail within its cell
        sy, sx = t + 1, u + 1
        heat = dict(type="heatmap", z=img, colorscale=COLORSCALE, zmin=0.0, zmax=1.0, showscale=False,
                    hoverinfo="skip")
    else:
        metric = np.asarray(metric, dtype=np.float32)
        cy = cx = 0.0
        sy = sx = 1
        heat = dict(type="heatmap", z=metric, colorscale="Magma", texttemplate="%{z:.2f}", hoverinfo="skip",
                    colorbar=dict(title=dict(text=esc(metric_label))))
    heads = head_names or [tr("ex.head_n", lang, i=h) for h in range(H)]
    ll, hh = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")  # (L, H) each
    # customdata as plain lists (not a typed array): a clicked point then reports [layer, head, (value)] as a list
    custom = [[int(layer), int(h)] for layer, h in zip(ll.ravel(), hh.ravel())]
    hover = (tr("col.layer", lang) + " %{customdata[0]} · "
             + ("%{text}" if head_names else tr("col.head", lang) + " %{customdata[1]}"))
    if metric is not None:
        for row, v in zip(custom, metric.ravel()):
            row.append(round(float(v), 4) if np.isfinite(v) else None)
        hover += f"<br>{esc(metric_label)}: " + "%{customdata[2]:.3f}"
    markers = dict(type="scatter", x=hh.ravel() * sx + cx, y=ll.ravel() * sy + cy, mode="markers",
                   customdata=custom,
                   marker=dict(size=max(10, 700 // max(H, 1) // 2), opacity=0.0, color="#000000", symbol="square"),
                   hovertemplate=hover + "<extra></extra>", showlegend=False, name="heads")
    if head_names:
        markers["text"] = [esc(heads[h]) for h in hh.ravel()]
    fs = font_size(lecture)
    tick, axis_title = max(9, fs - 2), fonts(lecture)["axis_title"]
    layout = base_layout(lecture, max(260, 70 * L + 90), title)
    layout.update(clickmode="event+select", dragmode=False, hovermode="closest")
    if title:  # the heads' numbers and their axis title sit on top, under the title: room for all three
        title_on_top(layout, lecture)
        layout["margin"]["t"] = title_margin(lecture, below=1.6 * tick + 1.6 * axis_title)
    # the plot spans exactly the cells: left to autorange, the invisible click markers padded both axes by their
    # size (38 px on 9 heads: a blank band of ~130 px under the head names of SmolLM2's 30 layers on a projector)
    width, height = (H * sx - (1 if metric is None else 0), L * sy - (1 if metric is None else 0))
    # the heads by number under one axis title ("Head"): "Head 10" in every column turned on a phone, into the title
    layout["xaxis"] = dict(tickvals=[h * sx + cx for h in range(H)], ticktext=[str(h) for h in range(H)], side="top",
                           showgrid=False, zeroline=False, tickfont=dict(size=tick), tickangle=0,
                           range=[-0.5, width - 0.5], title=dict(text=tr("col.head", lang)))
    layout["yaxis"] = dict(tickvals=[layer * sy + cy for layer in range(L)],
                           ticktext=[tr("ex.layer_n", lang, i=i) for i in range(L)], range=[height - 0.5, -0.5],
                           showgrid=False, zeroline=False)
    if selected is not None:
        sl, sh = selected
        if 0 <= sl < L and 0 <= sh < H:
            x0, y0 = sh * sx - 0.5, sl * sy - 0.5
            x1 = x0 + (sx - 1 if metric is None else 1)
            y1 = y0 + (sy - 1 if metric is None else 1)
            layout["shapes"] = [dict(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=HIGHLIGHT, width=3))]
    return figure([heat, markers], layout)


# ---- token view ------------------------------------------------------------------------------------------------------
def token_view_lines(layer_att: np.ndarray, query: int, heads: list[int], *, top_k: int | None = None,
                     min_weight: float = 0.0) -> dict[int, list[tuple[int, float]]]:
    """Per head: the (key, weight) pairs to draw for the query row (weights >= min_weight, at most top_k)."""
    out = {}
    for h in heads:
        w = layer_att[h, query]  # (m,)
        order = np.argsort(-w, kind="stable")
        if top_k is not None:
            order = order[:top_k]
        out[h] = [(int(j), float(w[j])) for j in order if w[j] >= min_weight]
    return out


@dataclass
class TokenViewLayout:
    """Where the token view draws things: the lines per head and the y position of each row / key token."""

    lines: dict[int, list[tuple[int, float]]]  # head -> [(key index, weight)]
    rows: list[int]  # query-side tokens drawn (all, or only the query on long inputs)
    keys: list[int]  # key-side tokens drawn (all, or only those some line reaches)
    span: int  # height of the taller column, in token slots
    sparse: bool  # long input: only the tokens that lines reach are drawn, labelled with their positions
    y_row: dict[int, float]
    y_key: dict[int, float]


def token_view_layout(layer_att: np.ndarray, query: int, heads: list[int], *, top_k: int | None = None,
                      min_weight: float = 0.01) -> TokenViewLayout:
    """Shared by the browser (plotly) and the export (matplotlib) token views. layer_att (H, n, m)."""
    _, n, m = layer_att.shape
    if not 0 <= query < n:
        raise ValueError(f"query token {query} is outside 0-{n - 1}")
    long_input = max(n, m) > ALL_TOKENS_MAX
    lines = token_view_lines(layer_att, query, heads, top_k=top_k if top_k else (20 if long_input else None),
                             min_weight=min_weight)
    keys = list(range(m)) if not long_input else sorted({j for pairs in lines.values() for j, _ in pairs})
    rows = list(range(n)) if not long_input else [query]
    span = max(len(keys), len(rows), 2) - 1
    return TokenViewLayout(lines, rows, keys, span, long_input,
                           y_row={i: -k * span / max(len(rows) - 1, 1) for k, i in enumerate(rows)},
                           y_key={j: -i * span / max(len(keys) - 1, 1) for i, j in enumerate(keys)})


def token_view(layer_att: np.ndarray, query: int, row_tokens: list[str], col_tokens: list[str], heads: list[int],
               *, lecture: bool = False, top_k: int | None = None, min_weight: float = 0.01,
               title: str = "", lang: str = "en") -> go.Figure:
    """Two columns of tokens; per head, lines from the query (left) to the keys (right) with opacity = weight.
    Lines are grouped per head into opacity buckets of 0.1 (one trace each), so a head is one legend entry."""
    lay = token_view_layout(layer_att, query, heads, top_k=top_k, min_weight=min_weight)
    lines, keys, rows, span, ypos_k, ypos_r = lay.lines, lay.keys, lay.rows, lay.span, lay.y_key, lay.y_row
    long_input = lay.sparse
    data: list[dict] = []
    for h in heads:
        colour, head_name = head_colour(h), tr("ex.head_n", lang, i=h)
        buckets: dict[float, tuple[list, list]] = {}
        for j, w in lines[h]:
            alpha = max(0.05, round(min(1.0, w) * 10) / 10)
            xs, ys = buckets.setdefault(alpha, ([], []))
            xs += [0.0, 1.0, None]
            ys += [ypos_r[query], ypos_k[j], None]
        for alpha, (xs, ys) in sorted(buckets.items()):
            data.append(dict(type="scatter", x=xs, y=ys, mode="lines", line=dict(color=rgba(colour, alpha), width=3),
                             hoverinfo="skip", legendgroup=f"h{h}", name=head_name, showlegend=False))
        # the legend entry: the head's full colour (clicking it toggles all of the head's lines)
        data.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=rgba(colour, 1.0), width=4),
                         legendgroup=f"h{h}", name=head_name, showlegend=True, hoverinfo="skip"))
    fs = font_size(lecture)
    hover_k = []  # right column: each key's hover lists the weight from every shown head
    for j in keys:
        parts = [f"{tr('ex.head_n', lang, i=h)}: {layer_att[h, query, j]:.3f}" for h in heads]
        hover_k.append(f"{esc(row_tokens[query])} -> {esc(col_tokens[j])}<br>" + "<br>".join(parts))
    key_text = [(f"{j}: " if long_input else "") + esc(col_tokens[j], 24) for j in keys]  # positions when sparse
    data.append(dict(type="scatter", x=[1.0] * len(keys), y=[ypos_k[j] for j in keys], mode="text+markers",
                     text=key_text, textposition="middle right",
                     marker=dict(size=6, color="#999999"), hovertext=hover_k, hoverinfo="text",
                     showlegend=False, textfont=dict(size=fs)))
    data.append(dict(type="scatter", x=[0.0] * len(rows), y=[ypos_r[i] for i in rows], mode="text+markers",
                     text=[(f"{i}: " if long_input else "") + esc(row_tokens[i], 24) for i in rows],
                     textposition="middle left",
                     marker=dict(size=[12 if i == query else 6 for i in rows],
                                 color=[HIGHLIGHT if i == query else "#999999" for i in rows]),
                     textfont=dict(size=fs, color=[HIGHLIGHT if i == query else "#333333" for i in rows]),
                     hoverinfo="skip", showlegend=False))
    height = int(min(1400, max(360, (span + 1) * (30 if lecture else 24) + 120)))
    # the title in lines as wide as a phone's page: plotly cuts a title at the figure's edge
    layout = base_layout(lecture, height, title, width=PHONE_WIDTH)
    # the legend in rows above the lines (plotly wraps them to the width), not beside them: on a phone a column of
    # 12 heads at the right covered the keys; the title at the top of the margin, the legend's rows under it, each
    # entry as wide as the longest head name (plotly cut the last one); the caption says a click toggles a head.
    # The legend hangs from just under the title (container coordinates): on a page narrower than a projector's it
    # has more rows, and plotly pushes the lines down for them, where a legend standing on the lines grew up into
    # the title (a phone)
    entry = max((text_width(tr("ex.head_n", lang, i=h), fs) for h in heads), default=0.0) + 12
    per_row = max(1, int((PAGE_WIDTH - 40) // (entry + 45)))  # 45 px: the line symbol and its gap
    rows_px = -(-len(heads) // per_row) * fs * 1.7  # the legend's rows on a projector-wide page
    top = layout["margin"]["t"] if title else 10  # the title's lines
    if title:
        title_on_top(layout, lecture)
    layout["margin"]["t"] = top + int(rows_px)
    layout.update(hovermode="closest", dragmode=False,
                  legend=dict(orientation="h", x=0.0, xanchor="left", yref="container", y=1 - top / layout["height"],
                              yanchor="top", entrywidth=int(entry)),
                  xaxis=dict(range=[-0.6, 1.6], visible=False, fixedrange=True),
                  yaxis=dict(visible=False, fixedrange=True, range=[-span - 0.8, 0.8]))
    return figure(data, layout)


# ---- matplotlib twins for slide export -------------------------------------------------------------------------------
def grid_figure_mpl(att: np.ndarray, *, size: int = 32, title: str = "", subtitle: str = "",
                    metric: np.ndarray | None = None, metric_label: str = "", lang: str = "en"):
    """All heads as one matplotlib figure (pooled thumbnails, or the metric per head)."""
    from .export import font_family, pyplot, short_label

    plt = pyplot()

    L, H = att.shape[:2]
    plt.rcParams["font.family"] = font_family()
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * H + 2), max(5, 1.1 * L + 1.5)), dpi=150)
    if metric is None:
        img, t, u = mosaic(att, size=size)
        im = ax.imshow(np.ma.masked_invalid(img), cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([h * (u + 1) + u / 2 - 0.5 for h in range(H)], [f"H{h}" for h in range(H)])
        ax.set_yticks([layer * (t + 1) + t / 2 - 0.5 for layer in range(L)],
                      [tr("ex.layer_n", lang, i=i) for i in range(L)])
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label=tr("ex.viz.thumb_scale", lang))
    else:
        im = ax.imshow(metric, cmap="magma", interpolation="nearest", aspect="auto")
        for (i, j), v in np.ndenumerate(metric):
            if np.isfinite(v):
                ax.text(j, i, number_text(v), ha="center", va="center", fontsize=SLIDE_FONT["cell"], color="#7f7f7f")
        ax.set_xticks(range(H), [f"H{h}" for h in range(H)])
        ax.set_yticks(range(L), [tr("ex.layer_n", lang, i=i) for i in range(L)])
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label=metric_label)
    ax.xaxis.tick_top()
    ax.set_title(title + (f"\n“{short_label(subtitle, 90)}”" if subtitle else ""), fontsize=SLIDE_FONT["title"])
    fig.tight_layout()
    return fig


def token_view_mpl(layer_att: np.ndarray, query: int, row_tokens: list[str], col_tokens: list[str],
                   heads: list[int], *, top_k: int | None = None, min_weight: float = 0.01, title: str = "",
                   subtitle: str = "", lang: str = "en"):
    """The token view drawn with matplotlib: same lines, opacity = weight, one colour per head."""
    from .export import font_family, pyplot, short_label

    plt = pyplot()
    from matplotlib.lines import Line2D

    lay = token_view_layout(layer_att, query, heads, top_k=top_k, min_weight=min_weight)
    lines, keys, rows, span, yk, yr = lay.lines, lay.keys, lay.rows, lay.span, lay.y_key, lay.y_row
    plt.rcParams["font.family"] = font_family()
    fig, ax = plt.subplots(figsize=(8, max(4, 0.32 * (span + 1) + 1.5)), dpi=150)
    for h in heads:
        for j, w in lines[h]:
            ax.plot([0, 1], [yr[query], yk[j]], color=head_colour(h), alpha=max(0.05, min(1.0, w)), lw=2.5)
    for i in rows:
        ax.text(-0.03, yr[i], short_label(row_tokens[i]), ha="right", va="center", fontsize=SLIDE_FONT["token"],
                color=HIGHLIGHT if i == query else "#222222", fontweight="bold" if i == query else "normal")
    for j in keys:
        ax.text(1.03, yk[j], short_label(col_tokens[j]), ha="left", va="center", fontsize=SLIDE_FONT["token"])
    ax.legend(handles=[Line2D([0], [0], color=head_colour(h), lw=3, label=tr("ex.head_n", lang, i=h)) for h in heads],
              loc="upper left", bbox_to_anchor=(1.25, 1.0), fontsize=SLIDE_FONT["legend"], frameon=False)
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(-span - 0.8, 0.8)
    ax.axis("off")
    ax.set_title(title + (f"\n“{short_label(subtitle, 90)}”" if subtitle else ""), fontsize=SLIDE_FONT["title"])
    fig.tight_layout()
    return fig
