"""Plotly figures and table rows of the Head lab (no Streamlit; results come from analysis.heads / flow / atlas).

- head_grid:            a layer x head grid of one value per head (diverging around 0 or sequential), with flipped
                        heads marked ⇄ and chosen heads outlined;
- delta_heatmap:        B - A for one head on the aligned tokens;
- value_norm_heatmaps:  raw weights and value-weighted norms (row shares) side by side (two figures);
- special_share_scatter: per head, share of weight vs share of norm on [CLS]/[SEP];
- flow_bars:            rollout vs attention flow into one token;
- effect_grid, token_change_bars, before_after_heatmaps, top_k_bars: head surgery;
- atlas_grid:           the head atlas coloured by top label (categorical), scores on hover;
- logit_lens_heatmap:   top-k next tokens per decoder layer;
- sink_grid, induction_grid: the first token's share of each head's attention, induction and previous-token scores.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import head_name
from i18n import t as tr

from .export_spec import ExportSpec, attach
from .heatmap import axis_labels, heatmap
from .theme import HIGHLIGHT, base_layout, esc, figure, merge, number_text

FLIP_MARK = "⇄"
ATLAS_COLOURS = {  # one colour per top label (analysis.atlas.TOP_LABELS)
    "prev": "#4e79a7", "next": "#76b7b2", "self": "#59a14f", "sink": "#bab0ac", "punct": "#edc948",
    "broad": "#f28e2b", "same_word": "#b07aa1", "coref": "#e15759", "mixed": "#ffffff",
}


def _head_axes(L: int, H: int, lang: str = "en") -> tuple[list[str], list[str]]:
    return [tr("ex.layer_n", lang, i=la) for la in range(L)], [tr("ex.head_n", lang, i=h) for h in range(H)]


def _mode(mode: str, lang: str) -> str:
    """An ablation mode (zero / mean / keep) as the figure titles write it."""
    return tr(f"heads.mode.{mode}", lang)


def _lh(layer: int, head: int, lang: str) -> str:
    return head_name(layer, head, lang)


def head_grid(values: np.ndarray, *, title: str = "", colorbar_title: str = "", diverging: bool = True,
              flipped: np.ndarray | None = None, chosen: list[tuple[int, int]] | None = None,
              zmax: float | None = None, texttemplate: str | None = None, lecture: bool = False,
              lang: str = "en", width: int | None = None, wide: bool = False,
              export_title: str | None = None) -> go.Figure:
    """(L, H) values as a layer x head grid (Layer 0 at the top). Diverging: red/blue around 0, symmetric range.
    `flipped` (L, H) bool: ⇄ in those cells; `chosen`: (layer, head) cells outlined; `texttemplate` replaces the
    cells' number format; `wide`: the layers along x and the heads down y (a deep model's 30 layers fit a screen's
    width, not its height). It exports `values` as given, one row per layer, under `export_title` (default `title`),
    the twin in the data's own colour range."""
    v = np.asarray(values, dtype=np.float32)
    L, H = v.shape
    rows, cols = _head_axes(L, H, lang)
    spec = ExportSpec(values, rows, cols, title if export_title is None else export_title)
    if diverging:
        m = zmax or (float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 1.0) or 1.0
        kw = dict(colorscale="RdBu", zmin=-m, zmax=m, zmid=0.0)
    else:
        kw = dict(colorscale="Viridis", zmin=0.0, zmax=zmax)
    extra: dict = {}  # added to the heatmap trace
    shapes = []
    if flipped is not None and np.any(flipped):
        fl = np.asarray(flipped, dtype=bool)
        extra.update(text=[[f"{FLIP_MARK} " if fl[la, h] else "" for h in range(H)] for la in range(L)],
                     texttemplate="%{text}%{z:.2f}" if v.size <= 144 else "%{text}")
        shapes += [_cell_outline(la, h, "black", dash="dot") for la, h in zip(*np.nonzero(fl))]
    shapes += [_cell_outline(la, h, HIGHLIGHT) for la, h in (chosen or [])]
    if texttemplate is not None:
        extra["texttemplate"] = texttemplate
    if wide:
        if "text" in extra:
            extra["text"] = [list(r) for r in zip(*extra["text"])]
        for sh in shapes:  # x is the layer now, y the head
            sh["x0"], sh["x1"], sh["y0"], sh["y1"] = sh["y0"], sh["y1"], sh["x0"], sh["x1"]
        return heatmap(v.T, cols, rows, title=title, xlabel=tr("heads.viz.layer", lang),
                       ylabel=tr("heads.viz.head", lang), colorbar_title=colorbar_title, lecture=lecture, lang=lang,
                       height=max(260, 40 * H + 190), text_auto=v.size <= 144,
                       hover="%{x} · %{y}<br>%{z:.3f}<extra></extra>", extra_trace=extra,
                       extra_layout=_fit({"shapes": shapes} if shapes else {}), width=width, export=spec, **kw)
    return heatmap(v, rows, cols, title=title, xlabel=tr("heads.viz.head", lang), ylabel=tr("heads.viz.layer", lang),
                   colorbar_title=colorbar_title, lecture=lecture, lang=lang, height=max(260, 40 * L + 150),
                   text_auto=v.size <= 144, hover="%{y} · %{x}<br>%{z:.3f}<extra></extra>", extra_trace=extra,
                   extra_layout=_fit({"shapes": shapes} if shapes else {}), width=width, export=spec, **kw)


def _cell_outline(layer: int, head: int, colour: str, dash: str = "solid") -> dict:
    """A rectangle around one cell of a categorical layer x head grid (categories sit at 0, 1, 2 ...)."""
    return dict(type="rect", xref="x", yref="y", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                line=dict(color=colour, width=3, dash=dash), fillcolor="rgba(0,0,0,0)")


def _fit(layout: dict) -> dict:
    """Room for the tick labels (token and head names) whatever the page's template: automargin on both axes of a
    layout dict (for heatmap(), its extra_layout). Returns `layout`."""
    return merge(layout, {"xaxis": {"automargin": True}, "yaxis": {"automargin": True}})


# ---- minimal pairs --------------------------------------------------------------------------------------------------
def change_grid(pair, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Layer x head grid of the change in w(c1) - w(c2) (B - A), flipped heads marked."""
    q, c1, c2 = (esc(x, 20) for x in pair.labels)
    return head_grid(pair.change, flipped=pair.flipped, lecture=lecture, colorbar_title="Δ", lang=lang,
                     title=tr("heads.viz.change", lang, c1=c1, c2=c2, q=q, flip=FLIP_MARK),
                     export_title=tr("heads.pairs.export", lang))


def delta_heatmap(dmap, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """B − A attention of one head on the aligned tokens; tokens that differ are marked with *; NaN (a token in one
    sentence only) shows as a grey ✕."""
    labels = [f"*{t}" if ch else t for t, ch in zip(dmap.labels, dmap.changed)]
    d = np.asarray(dmap.delta, dtype=np.float32)
    m = float(np.nanmax(np.abs(d))) if np.isfinite(d).any() else 1.0
    return heatmap(d, labels, labels, title=tr("heads.viz.delta", lang, where=_lh(dmap.layer, dmap.head, lang)),
                   colorscale="RdBu", zmin=-(m or 1.0), zmax=m or 1.0, zmid=0.0, masked=~np.isfinite(d),
                   xlabel=tr("ex.axis.key", lang), ylabel=tr("ex.axis.query", lang),
                   colorbar_title=tr("heads.viz.delta_weight", lang), lecture=lecture, lang=lang,
                   extra_layout=_fit({}),  # it exports the delta as computed (NaN kept), by the tokens' own labels
                   export=ExportSpec(dmap.delta, list(dmap.labels), list(dmap.labels),
                                     f"B − A · {_lh(dmap.layer, dmap.head, lang)}"))


# ---- value-weighted norms, flow -------------------------------------------------------------------------------------
def value_norm_heatmaps(vn, layer: int, head: int, *, lecture: bool = False,
                        lang: str = "en") -> tuple[go.Figure, go.Figure]:
    """(weights, norm shares) of one head, same tokens and colour range, to be laid out side by side. They export
    the weights and the value norms (not the shares)."""
    w = vn.weights[layer, head]
    s = vn.norm_share[layer, head]
    hi = float(max(w.max(), s.max())) or 1.0
    kw = dict(zmin=0.0, zmax=hi, xlabel=tr("ex.axis.key", lang), ylabel=tr("ex.axis.query", lang), lecture=lecture,
              lang=lang)
    where = _lh(layer, head, lang)
    tokens = list(vn.tokens)
    out = {name: ExportSpec(m[layer, head], tokens, tokens, f"{tr(f'heads.beyond.{name}', lang)} · {where}")
           for name, m in (("weights", vn.weights), ("norms", vn.norms))}
    return (heatmap(w, vn.tokens, vn.tokens, title=tr("heads.viz.weights", lang, where=where),
                    colorbar_title="α", extra_layout=_fit({}), export=out["weights"], **kw),
            heatmap(s, vn.tokens, vn.tokens, title=tr("heads.viz.norms", lang, where=where),
                    colorbar_title=tr("heads.viz.norm_share", lang), extra_layout=_fit({}), export=out["norms"], **kw))


def special_share_scatter(vn, *, lecture: bool = False, lang: str = "en", specials: str = "") -> go.Figure:
    """Per head: share of the weight (x) vs share of the norm (y) on special tokens; below the diagonal = the
    head looks at the special tokens ([CLS]/[SEP], <s>/</s>: `specials`, the model's own) but takes little from
    them. It exports both shares, one row per head."""
    w, s = vn.special_weight_share, vn.special_norm_share
    L, H = w.shape
    names = [head_name(la, h, lang) for la in range(L) for h in range(H)]  # hover text: room for the full name
    spec = ExportSpec(np.stack([w.ravel(), s.ravel()], axis=1), names,
                      [tr("heads.beyond.weight_share", lang), tr("heads.beyond.norm_share", lang)],
                      tr("heads.beyond.specials", lang))
    data = [
        dict(type="scatter", x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dot"),
             hoverinfo="skip", showlegend=False),
        dict(type="scatter", x=w.ravel().tolist(), y=s.ravel().tolist(), mode="markers", text=names,
             marker=dict(size=9 if not lecture else 13, color=[la for la in range(L) for _ in range(H)],
                         colorscale="Viridis", colorbar=dict(title=dict(text=tr("heads.viz.layer", lang)),
                                                             thickness=12)),
             hovertemplate=f"%{{text}}<br>{tr('heads.viz.weight_on_specials', lang)} %{{x:.2f}}<br>"
                           f"{tr('heads.viz.norm_on_specials', lang)} %{{y:.2f}}<extra></extra>", showlegend=False),
    ]
    layout = base_layout(lecture, 420, tr("heads.viz.special_title", lang,
                                                specials=esc(specials or tr("notes.specials.none", lang))))
    layout.update(xaxis=dict(title=dict(text=tr("heads.viz.share_weight", lang)), range=[0, 1.02]),
                  yaxis=dict(title=dict(text=tr("heads.viz.share_norm", lang)), range=[0, 1.02]))
    return attach(figure(data, _fit(layout)), spec)


def flow_bars(fr, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Rollout and attention flow (normalised to sum to 1) into output token `fr.token`, per input token. It exports
    the rollout and the flow as computed (not the flow's shares), one row each."""
    x = axis_labels(list(fr.tokens))
    share = np.asarray(fr.flow) / max(float(np.sum(fr.flow)), 1e-12)
    rollout, flow = tr("heads.viz.rollout", lang), tr("heads.viz.flow", lang)
    data = [dict(type="bar", x=x, y=np.asarray(fr.rollout).tolist(), name=rollout, marker=dict(color="#4e79a7"),
                 hovertemplate=f"%{{x}}: {rollout} %{{y:.3f}}<extra></extra>"),
            dict(type="bar", x=x, y=share.tolist(), name=tr("heads.viz.flow_share", lang),
                 marker=dict(color="#f28e2b"), customdata=np.asarray(fr.flow).tolist(),
                 hovertemplate=f"%{{x}}: {flow} %{{customdata:.3f}}, {tr('heads.viz.share', lang)} %{{y:.3f}}"
                               "<extra></extra>")]
    layout = base_layout(lecture, 380, tr("heads.viz.flow_title", lang, token=esc(fr.tokens[fr.token], 20)))
    layout.update(barmode="group", xaxis=dict(type="category", title=dict(text=tr("heads.viz.input_token", lang))),
                  yaxis=dict(title=dict(text=tr("heads.viz.share", lang))), legend=dict(orientation="h", y=1.08))
    return attach(figure(data, _fit(layout)), ExportSpec(np.stack([fr.rollout, fr.flow]), [rollout, flow],
                                                          list(fr.tokens), tr("heads.beyond.flow", lang)))


# ---- head surgery ---------------------------------------------------------------------------------------------------
def effect_grid(grid, *, by: str = "sentence", chosen=None, lecture: bool = False, lang: str = "en") -> go.Figure:
    v = grid.sentence_change if by == "sentence" else grid.token_change
    what = tr("heads.viz.what_sentence" if by == "sentence" else "heads.viz.what_token", lang)
    return head_grid(v, diverging=False, chosen=chosen, lecture=lecture, colorbar_title="1 − cos", lang=lang,
                     title=tr("heads.viz.effect", lang, mode=_mode(grid.mode, lang), what=what),
                     export_title=tr("heads.surgery.effect", lang),
                     texttemplate="%{z:.3f}" if v.size <= 144 else None)  # effects are small: 0.00 would hide them


def token_change_bars(effect, *, lecture: bool = False, lang: str = "en", model: str = "") -> go.Figure:
    """Each token's change (1 − cos) after the ablation; it exports them as one row, titled with `model`."""
    compact = len(effect.heads) > 2  # a title names a few heads in full, more in the compact form
    heads = ", ".join(head_name(r[-2], r[-1], lang, block=r[0] if len(r) > 2 else None, compact=compact)
                      for r in effect.heads) or tr("heads.viz.none", lang)
    data = [dict(type="bar", x=axis_labels(list(effect.tokens)), y=np.asarray(effect.token_change).tolist(),
                 marker=dict(color="#e15759"), hovertemplate="%{x}: 1 − cos %{y:.4f}<extra></extra>")]
    layout = base_layout(lecture, 340, tr("heads.viz.token_change", lang, mode=_mode(effect.mode, lang), heads=heads,
                                          value=effect.sentence_change))
    layout.update(xaxis=dict(type="category"), yaxis=dict(title=dict(text="1 − cos")))
    return attach(figure(data, _fit(layout)), ExportSpec(effect.token_change[None], ["1 - cos"], list(effect.tokens),
                                                          tr("heads.surgery.token_change", lang, model=model)))


def before_after_heatmaps(effect, layer: int, head: int, *, lecture: bool = False,
                          lang: str = "en") -> tuple[go.Figure, go.Figure]:
    b, a = effect.attention_before[layer, head], effect.attention_after[layer, head]
    kw = dict(zmin=0.0, zmax=1.0, xlabel=tr("ex.axis.key", lang), ylabel=tr("ex.axis.query", lang), lecture=lecture,
              lang=lang)
    where = _lh(layer, head, lang)
    tokens = list(effect.tokens)  # each exports its matrix in the data's own colour range
    out = {name: ExportSpec(m, tokens, tokens, f"{tr(f'heads.viz.{name}_word', lang)} · {where}")
           for name, m in (("before", b), ("after", a))}
    return (heatmap(b, effect.tokens, effect.tokens, title=tr("heads.viz.before", lang, where=where),
                    extra_layout=_fit({}), export=out["before"], **kw),
            heatmap(a, effect.tokens, effect.tokens, title=tr("heads.viz.after", lang, where=where),
                    extra_layout=_fit({}), export=out["after"], **kw))


def ablation_delta_heatmap(effect, layer: int, head: int, *, lecture: bool = False,
                           lang: str = "en") -> go.Figure:
    """After − before attention of one head (a layer after the removed heads), on a symmetric diverging scale."""
    d = effect.attention_after[layer, head] - effect.attention_before[layer, head]
    m = float(np.abs(d).max())
    title = tr("heads.viz.ablation_delta", lang, where=_lh(layer, head, lang))
    return heatmap(d, effect.tokens, effect.tokens, title=title,
                   colorscale="RdBu", zmin=-(m or 1.0), zmax=m or 1.0, zmid=0.0, xlabel=tr("ex.axis.key", lang),
                   ylabel=tr("ex.axis.query", lang), colorbar_title=tr("heads.viz.delta_weight", lang), lecture=lecture,
                   lang=lang, extra_layout=_fit({}),
                   export=ExportSpec(d, list(effect.tokens), list(effect.tokens), title))  # its own colour range


def top_k_bars(deff, *, lecture: bool = False, lang: str = "en", model: str = "") -> go.Figure:
    """Top-k next-token probabilities at the chosen step, before and after (same prefix); it exports them (a row per
    token), titled with `model`."""
    rows = deff.top_rows()
    x = axis_labels([r["token"] for r in rows])
    before, after = tr("heads.viz.before_word", lang), tr("heads.viz.after_word", lang)
    data = [dict(type="bar", x=x, y=[r["before"] for r in rows], name=before, marker=dict(color="#4e79a7"),
                 hovertemplate=f"%{{x}}: %{{y:.4f}} {before}<extra></extra>"),
            dict(type="bar", x=x, y=[r["after"] for r in rows], name=after, marker=dict(color="#e15759"),
                 hovertemplate=f"%{{x}}: %{{y:.4f}} {after}<extra></extra>")]
    layout = base_layout(lecture, 340, tr("heads.viz.top_k", lang, step=deff.step))
    layout.update(barmode="group", xaxis=dict(type="category"),
                  yaxis=dict(title=dict(text=tr("heads.viz.probability", lang)),
                                                                           range=[0, 1]))
    spec = ExportSpec(np.array([[r["before"], r["after"]] for r in rows]), [r["token"] for r in rows],
                      [before, after], tr("heads.surgery.top5", lang, model=model))
    return attach(figure(data, _fit(layout)), spec)


# ---- atlas, logit lens ---------------------------------------------------------------------------------------------
def atlas_grid(atlas, *, chosen=None, lecture: bool = False, lang: str = "en", specials: str = "") -> go.Figure:
    """Layer x head grid coloured by each head's top label; hover shows every score. `specials` names the model's
    special tokens in the sink label ("[CLS]/[SEP]", "<s>/</s>"; default "special tokens"). It exports each head's
    top label as its index into the labels."""
    names = atlas.label_names
    sp = specials or tr("notes.specials.none", lang)
    titles = {k: tr(f"heads.atlas.{k}", lang, specials=sp) for k in (*names, *atlas.scores)}
    idx = atlas.top_label_index()
    L, H = idx.shape
    rows, cols = _head_axes(L, H, lang)
    k = len(names)
    scale = []
    for i, lab in enumerate(names):  # a stepwise (categorical) colour scale over 0..k-1
        scale += [[i / k, ATLAS_COLOURS[lab]], [(i + 1) / k, ATLAS_COLOURS[lab]]]
    cell = {lab: esc(tr(f"heads.atlas.cell.{lab}", lang)) for lab in names}  # short labels drawn in the cells
    text = [[cell.get(lab, esc(lab)) for lab in row] for row in atlas.top_label]  # (L, H)
    hover = [[("<b>" + text[la][h] + "</b><br>" +
               "<br>".join(f"{esc(titles.get(name, name))}: {number_text(v[la, h])}" for name, v in atlas.scores.items()))
              for h in range(H)] for la in range(L)]
    data = [dict(type="heatmap", z=(idx + 0.5).tolist(), x=cols, y=rows, zmin=0, zmax=k, colorscale=scale,
                 text=text, customdata=hover, texttemplate="%{text}", xgap=2, ygap=2,
                 hovertemplate="%{y} · %{x}<br>%{customdata}<extra></extra>", showscale=False)]
    for lab in names:  # legend entries for the categories
        data.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=esc(titles.get(lab, "mixed")),
                         marker=dict(symbol="square", size=12, color=ATLAS_COLOURS[lab],
                                     line=dict(color="#666", width=1))))
    layout = base_layout(lecture, 40 * L + 220, tr("heads.viz.atlas", lang, model=esc(atlas.model),
                                                   n=len(atlas.sentences)))
    layout.update(xaxis=dict(type="category", showgrid=False), showlegend=True,
                  yaxis=dict(type="category", autorange="reversed", showgrid=False),
                  legend=dict(orientation="h", y=-0.12),
                  shapes=[_cell_outline(la, h, "black") for la, h in (chosen or [])])
    return attach(figure(data, _fit(layout)), ExportSpec(idx.astype(float), rows, cols,
                                                          tr("heads.atlas.export", lang)))


def logit_lens_heatmap(lens, *, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Rows = decoder layers, columns = rank 1..k; each cell shows the token and its probability. It exports the
    probabilities (ranks named "top 1" ..)."""
    p = np.asarray(lens.top_probs, dtype=np.float32)
    L, k = p.shape
    text = [[esc(t, 16) for t in row] for row in lens.top_tokens]
    data = [dict(type="heatmap", z=p.tolist(), x=[f"#{r + 1}" for r in range(k)], y=[tr("heads.viz.dec_layer", lang, i=la) for la in lens.layers], text=text,
                 zmin=0, zmax=1, colorscale="Blues", reversescale=True, texttemplate="%{text}<br>%{z:.2f}", xgap=2, ygap=2,
                 hovertemplate="%{y}, %{x}: %{text} (%{z:.3f})<extra></extra>",
                 colorbar=dict(title=dict(text="p"), thickness=14))]
    layout = base_layout(lecture, 60 * L + 160, tr("heads.viz.lens", lang, step=lens.step,
                                                   answer=esc(lens.answer, 20)))
    layout.update(xaxis=dict(type="category", side="top"), yaxis=dict(type="category", autorange="reversed"))
    spec = ExportSpec(lens.top_probs, [tr("heads.viz.dec_layer", lang, i=la) for la in lens.layers],
                      [f"top {r + 1}" for r in range(k)], tr("heads.beyond.lens", lang))
    return attach(figure(data, _fit(layout)), spec)


# ---- attention sinks and induction heads ---------------------------------------------------------------------------
def sink_grid(sink, *, chosen=None, lecture: bool = False, lang: str = "en") -> go.Figure:
    """Layer x head grid (layers along x) of each head's mean weight on the first token (queries 1 .. N-1), 0 to 1."""
    first = esc(sink.tokens[0], 20) if sink.tokens else ""
    return head_grid(sink.scores, diverging=False, zmax=1.0, chosen=chosen, lecture=lecture, lang=lang, wide=True,
                     colorbar_title=tr("heads.viz.sink_bar", lang),
                     title=tr("heads.viz.sink", lang, first=first), export_title=tr("heads.sink.export", lang))


def induction_grid(ind, which: str = "induction", *, chosen=None, lecture: bool = False,
                   lang: str = "en") -> go.Figure:
    """Layer x head grid of the induction score (which="induction": the weight on i - R + 1) or the previous-token
    score (which="previous": on i - 1), on the repeated random sequence, 0 to 1."""
    grid = ind.induction if which == "induction" else ind.previous
    return head_grid(grid, diverging=False, zmax=1.0, chosen=chosen, lecture=lecture, lang=lang, wide=True,
                     colorbar_title=tr(f"heads.viz.{which}_bar", lang),
                     title=tr(f"heads.viz.{which}", lang, r=ind.repeat),
                     export_title=tr(f"heads.{which}.export", lang, r=ind.repeat))
