"""Figure builders for the positional-encoding lab (no Streamlit here).

Sinusoidal encoding of Vaswani et al. 2017, section 3.5 (the table and the similarity matrix come from
`analysis.positional`, which reads `model.positional.sinusoidal_table`):
    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
It is *added* to the token embeddings X. The similarity matrix is S = PE PE^T
(dot products of position vectors), or its cosine version. MiniLM instead
learns one vector per position (BERT); both are shown side by side.

Shapes: n positions, d d_model.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t

from .heatmap import axis_labels, budget_factors, heatmap, pool_by
from .theme import SLIDE_FONT, base_layout, colour_scale, esc, figure, subplot_axes, subplot_grid


def robust_limit(m: np.ndarray) -> float:
    """Symmetric colour limit that a few outliers cannot wash out (99.5th percentile of |m|)."""
    return float(np.percentile(np.abs(m), 99.5)) or 1.0


def pe_heatmap(pe: np.ndarray, *, title: str = "", lecture: bool = False, max_side: int = 384,
               lim: float = 1.0, lang: str = "en") -> go.Figure:
    """A position table: positions down, dimensions across, colours over [-lim, lim] (sinusoidal: [-1, 1])."""
    n, d = pe.shape
    return heatmap(pe, [str(i) for i in range(n)], [str(j) for j in range(d)],
                   title=title or t("pe.fig.table", lang, n=n, d=d), colorscale="RdBu", zmin=-lim, zmax=lim,
                   xlabel=t("pe.axis.dim", lang), ylabel=t("pe.axis.position", lang), height=560, text_auto=False, lecture=lecture,
                   max_side=max_side, lang=lang)


def default_dims(d: int) -> list[int]:
    """A fast sine/cosine pair, a middle pair and a slow pair."""
    mid = (d // 4) // 2 * 2
    picks = [0, 1, mid, mid + 1, d - 2, d - 1]
    return sorted({min(max(p, 0), d - 1) for p in picks})


def pe_curves(pe: np.ndarray, dims: list[int], *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Selected columns of PE against position: even dims are sines, odd dims cosines."""
    n, d = pe.shape
    step = max(1, n // 1024)  # at most ~1024 points per curve
    x = np.arange(0, n, step)
    data = []
    for j in dims:
        if 0 <= j < d:
            kind = "sin" if j % 2 == 0 else "cos"
            wavelength = 2 * np.pi * 10000 ** ((j - j % 2) / d)
            data.append(dict(type="scatter", x=x, y=pe[::step, j], mode="lines",
                             name=t("pe.curve", lang, j=j, kind=kind, wl=wavelength)))
    layout = base_layout(lecture, 380, t("pe.fig.curves", lang, d=d))
    layout.update(xaxis=dict(title=dict(text=t("pe.axis.position", lang))),
                  yaxis=dict(title=dict(text=t("pe.axis.value", lang)), range=[-1.1, 1.1]),
                  legend={"orientation": "h", "y": -0.25})
    return figure(data, layout)


def similarity_heatmap(sim: np.ndarray, *, title: str, cosine: bool, lecture: bool = False,
                       max_side: int = 256, lang: str = "en") -> go.Figure:
    n = sim.shape[0]
    labels = [str(i) for i in range(n)]
    kw = {"zmin": -1.0, "zmax": 1.0, "colorscale": "RdBu"} if cosine else {"colorscale": "Viridis"}
    pos = t("pe.axis.position", lang)
    return heatmap(sim, labels, labels, title=title, xlabel=pos, ylabel=pos, height=520, text_auto=False,
                   lecture=lecture, colorbar_title=t("pe.colorbar.cosine" if cosine else "pe.colorbar.dot", lang),
                   max_side=max_side, lang=lang, **kw)


def embedding_triptych(parts: dict[str, np.ndarray], tokens: list[str], *, labels: dict[str, str] | None = None,
                       title: str = "", lecture: bool = False, lang: str = "en", xlabel: str | None = None) -> go.Figure:
    """X, PE and X + PE (and the token-type rows when the model has them) side by side, one row per token,
    on one symmetric colour scale so the addition can be read cell by cell. `xlabel`: the dimension axes' title
    (default the lab's, "pe.axis.dim")."""
    keys = [k for k in ("token", "position", "token_type", "sum") if k in parts]
    labels = labels or {}
    names = [labels.get(k, k) for k in keys]
    fr, fc = budget_factors(parts[keys[0]].shape, 256)
    mats = [pool_by(parts[k], fr, fc) for k in keys]  # (n', d') each
    lim = max(robust_limit(m) for m in mats)
    rows = axis_labels(tokens)
    rows = rows[::fr]
    # one row of subplots, their y axes (the tokens) shared: the layout make_subplots would build, without validation
    layout = subplot_grid(1, len(keys), names, horizontal_spacing=0.02, shared_yaxes=True)
    hover = "%{y}<br>" + esc(t("pe.axis.dim", lang)) + " %{x}<br>%{z:.4f}<extra></extra>"
    data = []
    for c, m in enumerate(mats, start=1):
        xa, ya = subplot_axes(1, c, len(keys))
        data.append(dict(type="heatmap", z=m, y=rows, colorscale=colour_scale("RdBu"), zmin=-lim, zmax=lim, zmid=0,
                         showscale=c == len(mats), hovertemplate=hover, xaxis=xa, yaxis=ya))
        layout["xaxis" + xa[1:]]["title"] = {"text": t("pe.axis.dim", lang) if xlabel is None else xlabel}
    layout["yaxis"].update(type="category", autorange="reversed")
    layout.update(base_layout(lecture, int(min(760, max(300, 22 * len(rows) + 160))), title))
    return figure(data, layout)


# ---- matplotlib figures for export (slides) ----------------------------------------------------------------


def curves_figure(pe: np.ndarray, dims: list[int], *, title: str = "", lang: str = "en"):
    """Matplotlib version of `pe_curves`, for PNG / SVG / PDF export."""
    from viz.export import pyplot

    plt = pyplot()

    n, d = pe.shape
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=150)
    for j in dims:
        if 0 <= j < d:
            ax.plot(np.arange(n), pe[:, j], label=t("pe.curve_short", lang, j=j, kind="sin" if j % 2 == 0 else "cos"),
                    linewidth=2)
    ax.set_xlabel(t("pe.axis.position", lang), fontsize=SLIDE_FONT["label"])
    ax.set_ylabel(t("pe.axis.value", lang), fontsize=SLIDE_FONT["label"])
    ax.set_ylim(-1.1, 1.1)
    ax.legend(fontsize=SLIDE_FONT["token"], ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    ax.set_title(title or t("pe.fig.curves_export", lang, d=d), fontsize=SLIDE_FONT["title"])
    fig.tight_layout()
    return fig


def triptych_figure(parts: dict[str, np.ndarray], tokens: list[str], *, labels: dict[str, str] | None = None,
                    title: str = "", subtitle: str = "", lang: str = "en"):
    """Matplotlib version of `embedding_triptych`: X, PE, (token type), X + PE on one colour scale."""
    from viz.export import font_family, pyplot, short_label

    plt = pyplot()

    keys = [k for k in ("token", "position", "token_type", "sum") if k in parts]
    labels = labels or {}
    lim = max(robust_limit(parts[k]) for k in keys)
    n = parts[keys[0]].shape[0]
    plt.rcParams["font.family"] = font_family()
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), min(14, max(4.5, 0.3 * n + 2))), dpi=150,
                             sharey=True)
    step = max(1, -(-n // 60))
    for ax, k in zip(np.atleast_1d(axes), keys):
        im = ax.imshow(parts[k], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        ax.set_title(labels.get(k, k), fontsize=SLIDE_FONT["label"])
        ax.set_xlabel(t("pe.axis.dim", lang), fontsize=SLIDE_FONT["label"])
    first = np.atleast_1d(axes)[0]
    first.set_yticks(range(0, n, step), [short_label(tokens[i]) for i in range(0, n, step)],
                     fontsize=max(6, min(12, 300 / max(n // step, 1))))
    fig.colorbar(im, ax=axes, fraction=0.025, pad=0.02)
    fig.suptitle(title + (f"\n“{short_label(subtitle, 90)}”" if subtitle else ""), fontsize=SLIDE_FONT["title"])
    return fig


# ---- rotary positions (RoPE) ----------------------------------------------------------------------------------------
OFFSET_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def rope_frequency_figure(rope: np.ndarray, sinus: np.ndarray, *, theta: float, lecture: bool = False,
                          lang: str = "en", local: tuple[float, np.ndarray] | None = None) -> go.Figure:
    """The angle per position of each pair j (left, log scale) and its wavelength in tokens 2 pi / omega (right):
    RoPE's theta^(-2j/k) beside the sinusoidal table's 1 / 10000^(2i/d) for the same number of pairs; `local`:
    (base, frequencies) of a model's sliding-window layers where their base differs (Gemma 3: 10,000 beside the
    global layers' 1,000,000), a third curve."""
    k = 2 * len(rope)
    layout = subplot_grid(1, 2, [t("rope.fig.freq_sub", lang), t("rope.fig.wave_sub", lang)], horizontal_spacing=0.1)
    data = []
    curves = [(rope, t("rope.trace.rope", lang, theta=theta, k=k), "#d62728", "solid", 3),
              (sinus, t("rope.trace.sinusoidal", lang, d=k), "#1f77b4", "dash", 2)]
    if local is not None:
        curves.insert(1, (local[1], t("rope.trace.local", lang, theta=local[0]), "#ff7f0e", "dot", 3))
    hover = (esc(t("rope.axis.pair", lang)) + " %{x}<br>%{y:.4g}<extra>%{fullData.name}</extra>")
    for c, values in enumerate((lambda f: f, lambda f: 2 * np.pi / f), start=1):
        xa, ya = subplot_axes(1, c, 2)
        for freqs, name, colour, dash, width in curves:
            data.append(dict(type="scatter", x=list(range(len(freqs))), y=values(np.asarray(freqs)).tolist(), mode="lines+markers",
                             name=name, legendgroup=name, showlegend=c == 1, xaxis=xa, yaxis=ya,
                             line=dict(color=colour, width=width, dash=dash), marker=dict(size=4),
                             hovertemplate=hover))
        layout["xaxis" + xa[1:]]["title"] = {"text": t("rope.axis.pair", lang)}
        layout["yaxis" + ya[1:]].update(type="log", exponentformat="power", title={"text": t(f"rope.axis.{'freq' if c == 1 else 'wave'}",
                                                                      lang)})
    layout.update(base_layout(lecture, 420, t("rope.fig.freq", lang, theta=theta, k=k)))
    layout["legend"] = {"orientation": "h", "y": -0.25}
    return figure(data, layout)


def relative_scores_figure(r: dict, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """q·k against the distance m - n, one curve per absolute position n of the key: they lie on top of each other."""
    data = []
    for i, (n, scores) in enumerate(zip(r["offsets"], r["scores"])):
        data.append(dict(type="scatter", x=r["distance"].tolist(), y=scores.tolist(), mode="lines",
                         name=t("rope.trace.offset", lang, n=int(n)),
                         line=dict(width=max(1.5, 6 - 1.5 * i), dash=OFFSET_DASHES[i % len(OFFSET_DASHES)]),
                         hovertemplate="m − n = %{x}<br>q·k = %{y:.6f}<extra>%{fullData.name}</extra>"))
    layout = base_layout(lecture, 400, t("rope.fig.relative", lang, diff=r["max_diff"]))
    layout.update(xaxis=dict(title=dict(text=t("rope.axis.distance", lang))),
                  yaxis=dict(title=dict(text=t("rope.axis.score", lang))), legend={"orientation": "h", "y": -0.25})
    return figure(data, layout)


def head_distance_figure(p: dict, tokens: list[str], query: str, *, title: str, top: int = 5, lecture: bool = False,
                         lang: str = "en") -> go.Figure:
    """One rotary head: the query's projection turned to every distance against each key's projection. The mean
    over the sentence's keys (thick), the `top` keys it weighs most at their real distance (thin), and the model's
    own scaled scores at the keys' real distances (markers: the curves pass through them)."""
    labels = axis_labels(tokens)
    shown = np.flatnonzero(p["shown"])
    best = shown[np.argsort(-p["model"][shown])][:top]  # the keys with the highest real scores
    data = [dict(type="scatter", x=p["distance"].tolist(), y=p["mean"].tolist(), mode="lines", name=t("rope.trace.mean", lang),
                 line=dict(width=4, color="#222222"),
                 hovertemplate=esc(t("rope.axis.distance", lang)) + " %{x}<br>%{y:.3f}<extra>%{fullData.name}</extra>")]
    for j in best:
        data.append(dict(type="scatter", x=p["distance"].tolist(), y=p["scores"][j].tolist(), mode="lines", line=dict(width=1.5),
                         name=t("rope.trace.key", lang, key=labels[j], j=int(j)),
                         hovertemplate=esc(t("rope.axis.distance", lang)) + " %{x}<br>%{y:.3f}<extra>%{fullData.name}"
                                       "</extra>"))
    data.append(dict(type="scatter", x=p["real"][shown].tolist(), y=p["model"][shown].tolist(), mode="markers",
                     name=t("rope.trace.model", lang), marker=dict(size=9, symbol="x", color="#d62728"),
                     customdata=[labels[j] for j in shown],
                     hovertemplate="%{customdata}<br>" + esc(t("rope.axis.distance", lang)) + " %{x}<br>%{y:.3f}"
                                   "<extra></extra>"))
    layout = base_layout(lecture, 440, title)
    layout.update(xaxis=dict(title=dict(text=t("rope.axis.distance_query", lang, query=esc(query))), rangemode="tozero"),
                  yaxis=dict(title=dict(text=t("rope.axis.scaled", lang))), legend={"orientation": "h", "y": -0.25})
    return figure(data, layout)


def lines_figure(x, series: dict[str, np.ndarray], *, title: str, xlabel: str, ylabel: str, logy: bool = False,
                 markers: tuple | None = None, lang: str = "en"):
    """Matplotlib twin of the RoPE tab's line charts, for PNG / SVG / PDF export: one line per named series over
    `x` (a log y axis for frequencies and wavelengths), and optional (name, xs, ys) points drawn as crosses."""
    from viz.export import font_family, pyplot

    plt = pyplot()
    plt.rcParams["font.family"] = font_family()
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=150)
    for i, (name, y) in enumerate(series.items()):
        ax.plot(x, y, label=name, linewidth=3 if i == 0 else 1.8, linestyle=("-", "--", ":", "-.")[i % 4])
    if markers is not None:
        name, xs, ys = markers
        ax.scatter(xs, ys, marker="x", s=60, color="#d62728", label=name, zorder=5)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel, fontsize=SLIDE_FONT["label"])
    ax.set_ylabel(ylabel, fontsize=SLIDE_FONT["label"])
    ax.legend(fontsize=SLIDE_FONT["token"], ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    ax.set_title(title, fontsize=SLIDE_FONT["title"])
    fig.tight_layout()
    return fig
