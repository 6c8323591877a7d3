"""The plotly figures built from plain dicts (viz.theme.figure, no per-property validation): what a user sees stays
as the validating graph_objects code drew it — trace kinds and counts, axis titles in English and Korean, ranges,
shared subplot axes, outlined cells and rows, escaped tokens — and every figure is valid plotly (from_json with
skip_invalid=False validates each attribute)."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from analysis import positional as ap
from analysis.atlas import LABELS, TOP_LABELS, Atlas
from analysis.decoding import DecodingRun, Step
from analysis.flow import FlowResult
from analysis.heads import DecoderEffect, DeltaMap, EffectGrid, EncoderEffect, LogitLens, MinimalPair, ValueNorms
from i18n import t
from viz import heads as vh
from viz import masks as vm
from viz import positional as vp
from viz import seq2seq as vs
from viz import tour as vt
from viz.theme import HIGHLIGHT, colour_scale, merge, subplot_grid

LANGS = ["en", "ko"]
TOKENS = ["[CLS]", "the", "<script>", "cat", "the", "sat", "[SEP]"]  # a hostile token and a repeated one
ESCAPED = "&lt;script&gt;"


def _rng():
    return np.random.default_rng(0)


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _valid(fig: go.Figure) -> None:
    """Serialisable, and every attribute is one plotly knows (skip_invalid=False raises on any other)."""
    pio.from_json(fig.to_json(), skip_invalid=False)
    assert "<script>" not in fig.to_json()  # user text reaches the browser escaped


def _layout(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))["layout"]


# ---- inputs: the frozen results the builders take, small and synthetic ---------------------------------------------
def _run(steps: int = 3) -> DecodingRun:
    rng = _rng()
    src = ["<copy>", *TOKENS[1:6], "<eos>"]
    outs = ["the", "<script>", "<eos>"][:steps]
    out = []
    for s in range(1, steps + 1):
        sa = _softmax(rng.normal(size=(2, 4, s, s))) * np.tril(np.ones((s, s)))
        sa = (sa / sa.sum(-1, keepdims=True)).astype(np.float32)
        out.append(Step(inputs=["<bos>", *outs[: s - 1]], self_attention=sa,
                        cross_row=_softmax(rng.normal(size=(2, 4, len(src)))).astype(np.float32),
                        top_tokens=[outs[s - 1], "<b>", "a", "b", "c"],
                        top_probs=np.array([0.6, 0.2, 0.1, 0.06, 0.04], dtype=np.float32), chosen=outs[s - 1]))
    return DecodingRun(task="copy", mode="greedy", source_tokens=src, steps=tuple(out), expected=outs)


def _pair(L: int = 3, H: int = 4, flips=((0, 1), (2, 3))) -> MinimalPair:
    rng = _rng()
    w = [(0.5 + rng.uniform(-0.1, 0.1, size=(L, H))).astype(np.float32) for _ in range(4)]  # no flip but `flips`
    for la, h in flips:  # A prefers c1, B prefers c2, both by a clear margin: a flip
        w[0][la, h], w[1][la, h], w[2][la, h], w[3][la, h] = 0.9, 0.1, 0.1, 0.9
    return MinimalPair(text_a="a", text_b="b", alignment=None, query=((1,), (1,)), candidates=(((2,), (2,)),) * 2,
                       labels=("it", "<script>", "mat"), attention_a=None, attention_b=None, w1_a=w[0], w2_a=w[1],
                       w1_b=w[2], w2_b=w[3], flip_margin=0.5)


def _norms() -> ValueNorms:
    rng = _rng()
    n = len(TOKENS)
    w = _softmax(rng.normal(size=(2, 3, n, n))).astype(np.float32)
    return ValueNorms(tokens=tuple(TOKENS), special=tuple(x.startswith("[") for x in TOKENS), weights=w,
                      norms=w * 2, value_norms=np.ones((2, 3, n), np.float32))


def _effect() -> EncoderEffect:
    n = len(TOKENS)
    att = _softmax(_rng().normal(size=(2, 3, n, n))).astype(np.float32)
    return EncoderEffect(tokens=tuple(TOKENS), heads=((0, 1),), mode="zero", token_cosine=np.linspace(0.9, 1, n),
                         sentence_cosine=0.98, attention_before=att, attention_after=att[::-1])


def _grid(L: int, H: int) -> EffectGrid:
    v = _rng().uniform(0, 0.01, size=(L, H)).astype(np.float32)
    return EffectGrid(tokens=tuple(TOKENS), mode="zero", sentence_change=v, token_change=v * 2, max_token_change=v,
                      most_changed_token=np.zeros((L, H), int))


def _atlas(L: int = 2, H: int = 3) -> Atlas:
    top = tuple(tuple(TOP_LABELS[(la * H + h) % len(TOP_LABELS)] for h in range(H)) for la in range(L))
    return Atlas(model="<script>", sentences=("a",), n_coref=0, per_sentence={}, top_label=top, seconds=0.0,
                 scores={k: np.full((L, H), 0.5) for k in (*LABELS, "coref_mass")})


def _flow() -> FlowResult:
    n = len(TOKENS)
    return FlowResult(tokens=tuple(TOKENS), token=2, rollout=np.full(n, 1 / n), flow=np.linspace(0, 1, n),
                      rollout_matrix=np.zeros((2, n, n)))


def _decoder_effect() -> DecoderEffect:
    return DecoderEffect(source_tokens=tuple(TOKENS), task="copy", heads=(("decoder", 0, 1),), mode="zero",
                         expected=None, output_before=("a",), output_after=("b",), text_before="a", text_after="b",
                         step=0, top_before=(("a", 0.5),), top_after=(("b", 0.4),),
                         compared=(("<script>", 0.5, 0.1), ("b", 0.2, 0.4)))


def _lens() -> LogitLens:
    return LogitLens(step=1, prefix=("<bos>",), answer="<script>", layers=(0, 1), answer_prob=np.ones(2),
                     top_tokens=(("<script>", "a", "b"), ("c", "d", "e")), answer_rank=np.zeros(2),
                     top_probs=np.array([[0.5, 0.3, 0.2], [0.6, 0.3, 0.1]], dtype=np.float32))


# every converted builder, on a realistic input: {name: lang -> figure}
FIGURES = {
    "pe_curves": lambda lg: vp.pe_curves(ap.sinusoidal(50, 64), vp.default_dims(64), lang=lg),
    "embedding_triptych": lambda lg: vp.embedding_triptych(
        {k: _rng().normal(size=(len(TOKENS), 32)).astype(np.float32) for k in ("token", "position", "sum")}, TOKENS,
        labels={"token": "X", "position": "PE", "sum": "X + PE"}, lang=lg),
    "cross_row_figure": lambda lg: vs.cross_row_figure(_run(), 2, 1, "mean", lang=lg),
    "topk_figure": lambda lg: vs.topk_figure(_run(), 2, lang=lg),
    "cross_figure": lambda lg: vs.cross_figure(_run(), 2, 0, 1, lang=lg)[0],
    "self_attention_full": lambda lg: vs.self_attention_figure(_run(), 2, 0, "mean", full=True, lang=lg)[0],
    "change_grid": lambda lg: vh.change_grid(_pair(), lang=lg),
    "effect_grid": lambda lg: vh.effect_grid(_grid(3, 4), chosen=[(1, 2)], lang=lg),
    "delta_heatmap": lambda lg: vh.delta_heatmap(_pair_delta(), lang=lg),
    "value_norms": lambda lg: vh.value_norm_heatmaps(_norms(), 1, 2, lang=lg)[1],
    "special_share_scatter": lambda lg: vh.special_share_scatter(_norms(), lang=lg),
    "flow_bars": lambda lg: vh.flow_bars(_flow(), lang=lg),
    "token_change_bars": lambda lg: vh.token_change_bars(_effect(), lang=lg),
    "before_after": lambda lg: vh.before_after_heatmaps(_effect(), 1, 1, lang=lg)[0],
    "top_k_bars": lambda lg: vh.top_k_bars(_decoder_effect(), lang=lg),
    "atlas_grid": lambda lg: vh.atlas_grid(_atlas(), chosen=[(0, 1)], lang=lg),
    "logit_lens": lambda lg: vh.logit_lens_heatmap(_lens(), lang=lg),
    "mask_heatmap": lambda lg: vm.mask_heatmap(np.tril(np.ones((7, 7), bool)), TOKENS, TOKENS, title="Causal", lang=lg),
    "neuron_view": lambda lg: vt.neuron_view(np.linspace(-1, 1, 8), np.ones(8), names=("q", "k", "q ∘ k"), lang=lg),
    "per_token_bars": lambda lg: vt.per_token_bars({"mean": np.zeros(7), "variance": np.ones(7)}, TOKENS),
    "per_dim_lines": lambda lg: vt.per_dim_lines({"γ <script>": np.ones(16), "β": np.zeros(16)}, xlabel="dim"),
    "ranked_bars": lambda lg: vt.ranked_bars(np.linspace(0.1, 0.3, 7), TOKENS, highlight=1, answer=6),
}


def _pair_delta() -> DeltaMap:
    n = len(TOKENS)
    d = _rng().normal(size=(n, n)).astype(np.float32) / 10
    d[3, :] = np.nan  # a token in one sentence only
    return DeltaMap(layer=1, head=2, labels=tuple(TOKENS), changed=tuple(i == 2 for i in range(n)), delta=d, a=d, b=d)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_is_valid_plotly_with_escaped_tokens(name, lang):
    _valid(FIGURES[name](lang))


# ---- positional ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_pe_curves(lang):
    dims = [0, 1, 16, 17, 62, 63, 64]  # 64 is outside d_model: skipped
    fig = vp.pe_curves(ap.sinusoidal(50, 64), dims, lang=lang)
    assert [tr.type for tr in fig.data] == ["scatter"] * 6 and {tr.mode for tr in fig.data} == {"lines"}
    assert len(fig.data[0].x) == 50 and "sin" in fig.data[0].name and "cos" in fig.data[1].name
    lay = fig.layout
    assert lay.xaxis.title.text == t("pe.axis.position", lang) and lay.yaxis.title.text == t("pe.axis.value", lang)
    assert tuple(lay.yaxis.range) == (-1.1, 1.1) and lay.legend.orientation == "h"
    assert lay.title.text == t("pe.fig.curves", lang, d=64) and lay.height == 380
    big = vp.pe_curves(ap.sinusoidal(2048, 64), [0], lecture=True, lang=lang)
    assert len(big.data[0].x) == 1024 and big.layout.height == int(380 * 1.35)  # at most ~1024 points per curve


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("keys", [("token", "position", "sum"), ("token", "position", "token_type", "sum")])
def test_embedding_triptych_shares_the_token_axis(keys, lang):
    parts = {k: _rng().normal(size=(len(TOKENS), 48)).astype(np.float32) for k in keys}
    names = {"token": "X", "position": "PE", "token_type": "type", "sum": "X + PE"}
    fig = vp.embedding_triptych(parts, TOKENS, labels=names, title="Embeddings", lang=lang)
    k = len(keys)
    assert [tr.type for tr in fig.data] == ["heatmap"] * k
    assert [(tr.xaxis, tr.yaxis) for tr in fig.data] == [("x", "y")] + [(f"x{i}", f"y{i}") for i in range(2, k + 1)]
    assert [tr.showscale for tr in fig.data] == [False] * (k - 1) + [True]  # one colour bar, one scale
    assert len({(tr.zmin, tr.zmax) for tr in fig.data}) == 1 and fig.data[0].zmin == -fig.data[0].zmax
    assert fig.data[0].colorscale[0][1] == "rgb(103,0,31)"  # plotly.py's RdBu (red low), as before
    assert ESCAPED in fig.data[0].y[2] and fig.data[0].y[1] != fig.data[0].y[4]  # escaped, repeats kept apart
    lay = _layout(fig)
    assert lay["yaxis"]["type"] == "category" and lay["yaxis"]["autorange"] == "reversed"
    for i in range(2, k + 1):
        assert lay[f"yaxis{i}"]["matches"] == "y" and lay[f"yaxis{i}"]["showticklabels"] is False
    titles = [lay["xaxis" + (str(i) if i > 1 else "")]["title"]["text"] for i in range(1, k + 1)]
    assert titles == [t("pe.axis.dim", lang)] * k
    ann = lay["annotations"]
    assert [a["text"] for a in ann] == [names[x] for x in keys]
    assert all(a["xref"] == a["yref"] == "paper" and a["y"] == 1.0 and a["showarrow"] is False for a in ann)
    doms = [lay["xaxis" + (str(i) if i > 1 else "")]["domain"] for i in range(1, k + 1)]
    assert [a["x"] for a in ann] == pytest.approx([sum(d) / 2 for d in doms])
    assert doms[0][0] == 0 and doms[-1][1] == pytest.approx(1)
    assert all(b[0] - a[1] == pytest.approx(0.02) for a, b in zip(doms, doms[1:]))
    assert lay["title"]["text"] == "Embeddings"


# ---- seq2seq ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_cross_row_and_topk_bars(lang):
    run = _run()
    fig = vs.cross_row_figure(run, 2, 1, 0, lang=lang)
    (bar,) = fig.data
    assert bar.type == "bar" and len(bar.x) == len(run.source_tokens) and bar.x[2].startswith(ESCAPED)
    row = run.steps[1].cross_row[1, 0]
    assert bar.marker.color[int(row.argmax())] == "#e63946"
    assert tuple(fig.layout.yaxis.range) == (0, 1) and fig.layout.yaxis.title.text == t("s2s.axis.weight", lang)
    assert fig.layout.xaxis.type == "category" and fig.layout.xaxis.tickangle == 0
    assert ESCAPED in fig.layout.title.text  # step 2 emits "<script>"
    top = vs.topk_figure(run, 2, lang=lang)
    (bar,) = top.data
    assert bar.type == "bar" and bar.orientation == "h" and bar.y[0].startswith(ESCAPED)
    assert list(bar.text) == [f"{p:.3f}" for p in run.steps[1].top_probs] and bar.marker.color[0] == "#2a9d8f"
    assert tuple(top.layout.xaxis.range) == (0, 1.12) and max(top.layout.xaxis.tickvals) == 1 and top.layout.xaxis.title.text == t("s2s.axis.probability", lang)
    assert top.layout.yaxis.autorange == "reversed" and top.layout.yaxis.type == "category"


@pytest.mark.parametrize("lang", LANGS)
def test_current_row_is_outlined(lang):
    run = _run()
    fig, m, _ = vs.cross_figure(run, 2, 0, 1, lang=lang)
    (shape,) = fig.layout.shapes
    assert (shape.type, shape.xref, shape.yref) == ("rect", "x", "y") and shape.line.color == "#e63946"
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (-0.5, m.shape[1] - 0.5, 0.5, 1.5)  # row of step 2
    assert fig.layout.xaxis.title.text == t("s2s.axis.source", lang)
    full = vs.self_attention_figure(run, 1, 0, 0, full=True, lang=lang)[0]
    assert len(full.layout.shapes) == 1 and (full.layout.shapes[0].y0, full.layout.shapes[0].y1) == (-0.5, 0.5)
    assert vs.self_attention_figure(run, 2, 0, 0, lang=lang)[0].layout.shapes == ()
    assert full.layout.yaxis.title.text == t("s2s.axis.query_input", lang)


# ---- Head lab --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_head_grid_marks_flips_and_chosen_heads(lang):
    fig = vh.change_grid(_pair(), lang=lang)
    heat = fig.data[0]
    assert heat.type == "heatmap" and heat.text[0][1] == "⇄ " and heat.text[0][0] == ""
    assert heat.texttemplate == "%{text}%{z:.2f}" and ESCAPED in fig.layout.title.text
    shapes = fig.layout.shapes
    assert len(shapes) == 2 and {s.line.dash for s in shapes} == {"dot"}
    assert (shapes[0].x0, shapes[0].y0) == (0.5, -0.5)  # head 1, layer 0
    assert fig.layout.xaxis.title.text == t("heads.viz.head", lang)
    assert fig.layout.yaxis.title.text == t("heads.viz.layer", lang)
    chosen = vh.head_grid(np.ones((3, 4)), chosen=[(2, 3)], lang=lang)
    assert [(s.line.color, s.line.dash) for s in chosen.layout.shapes] == [(HIGHLIGHT, "solid")]
    assert vh.head_grid(np.ones((3, 4)), lang=lang).layout.shapes == ()


def test_effect_grid_writes_three_decimals_only_when_cells_are_drawn():
    small = vh.effect_grid(_grid(3, 4))
    assert small.data[0].texttemplate == "%{z:.3f}" and small.data[0].colorscale == "Viridis"
    assert vh.effect_grid(_grid(12, 16)).data[0].texttemplate is None  # 192 cells: no numbers


@pytest.mark.parametrize("name", ["change_grid", "effect_grid", "delta_heatmap", "value_norms", "special_share_scatter",
                                  "flow_bars", "token_change_bars", "before_after", "top_k_bars", "atlas_grid",
                                  "logit_lens"])
def test_head_lab_figures_make_room_for_tick_labels(name):
    lay = FIGURES[name]("en").layout
    assert lay.xaxis.automargin is True and lay.yaxis.automargin is True


# ---- masks -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("n", [7, 21])  # 441 cells: no numbers from heatmap(), the 0 / 1 template still set
def test_mask_heatmap_colour_bar_names_both_states(lang, n):
    toks = (TOKENS * 3)[:n]
    fig = vm.mask_heatmap(np.tril(np.ones((n, n), bool)), toks, toks, title="Causal", lang=lang)
    (heat,) = fig.data
    assert heat.texttemplate == "%{z:.0f}" and tuple(heat.colorbar.tickvals) == (0.25, 0.75)
    assert tuple(heat.colorbar.ticktext) == (t("masks.blocked", lang), t("masks.may_attend", lang))
    assert heat.colorbar.thickness == 14  # merged into heatmap()'s colour bar, not replacing it
    assert fig.layout.xaxis.title.text == t("masks.axis.key", lang) and ESCAPED in heat.y[2]


# ---- tour ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_neuron_view_rows_share_the_dimension_axis(lang):
    q = np.array([1.0, -2.0, 0.5])
    fig = vt.neuron_view(q, np.ones(3), names=("q", "k", "q ∘ k"), title="Neuron", lang=lang)
    assert [tr.type for tr in fig.data] == ["bar"] * 3
    assert [(tr.xaxis, tr.yaxis) for tr in fig.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    assert list(fig.data[2].marker.color) == ["#59a14f", HIGHLIGHT, "#59a14f"]  # the product's sign
    assert t("tour.axis.dim", lang) in fig.data[0].hovertemplate
    lay = _layout(fig)
    for ax in ("xaxis", "xaxis2"):
        assert lay[ax]["matches"] == "x3" and lay[ax]["showticklabels"] is False
    assert lay["xaxis3"]["title"]["text"] == "d_k" and "matches" not in lay["xaxis3"]
    assert lay["yaxis"]["domain"][0] > lay["yaxis2"]["domain"][1] > lay["yaxis3"]["domain"][1]  # row 1 on top
    assert [a["text"] for a in lay["annotations"]] == ["q", "k", "q ∘ k"] and lay["bargap"] == 0.15


def test_per_token_bars_and_lines():
    long = [f"w{i}" for i in range(10)]
    fig = vt.per_token_bars({"mean <m>": np.zeros(10), "var": np.ones(10)}, long, title="Stats")
    lay = _layout(fig)
    assert [tr.type for tr in fig.data] == ["bar", "bar"] and fig.data[0].x[3] == "3: w3"
    assert lay["xaxis"]["matches"] == "x2" and lay["xaxis"]["showticklabels"] is False
    assert all(lay[a]["type"] == "category" and lay[a]["tickangle"] == -60 for a in ("xaxis", "xaxis2"))
    assert lay["annotations"][0]["text"] == "mean &lt;m&gt;" and lay["height"] == 500
    assert vt.per_token_bars({"m": np.zeros(7)}, TOKENS).data[0].x[2] == f"2: {ESCAPED}"
    lines = vt.per_dim_lines({"γ <g>": np.ones(16), "β": np.zeros(16)}, xlabel="dim <d>")
    assert [(tr.type, tr.mode) for tr in lines.data] == [("scatter", "lines")] * 2
    assert lines.data[0].name == "γ &lt;g&gt;"
    assert lines.layout.xaxis.title.text == "dim &lt;d&gt;" and lines.layout.legend.orientation == "h"


def test_ranked_bars():
    v = np.array([0.1, 0.5, 0.2, 0.2])
    fig = vt.ranked_bars(v, ["a", "<script>", "c", "d"], highlight=2, answer=1, ylabel="weight")
    (bar,) = fig.data
    assert bar.type == "bar" and bar.x[1].startswith(ESCAPED) and bar.textposition == "outside"
    assert list(bar.marker.color) == ["#bab0ac", "#59a14f", HIGHLIGHT, "#bab0ac"]
    assert tuple(fig.layout.yaxis.range) == pytest.approx((0, 0.6)) and fig.layout.yaxis.title.text == "weight"
    assert fig.layout.xaxis.type == "category"


# ---- the helpers that replace graph_objects' validating calls -------------------------------------------------------
@pytest.mark.parametrize("rows,cols,kw", [(1, 3, {"horizontal_spacing": 0.02, "shared_yaxes": True}),
                                          (1, 4, {"horizontal_spacing": 0.02, "shared_yaxes": True}),
                                          (3, 1, {"vertical_spacing": 0.09, "shared_xaxes": True}),
                                          (2, 1, {"vertical_spacing": 0.12, "shared_xaxes": True}),
                                          (2, 3, {"shared_xaxes": True, "shared_yaxes": True})])
def test_subplot_grid_is_make_subplots_layout(rows, cols, kw):
    titles = [f"t{i}" for i in range(rows * cols)]
    titles[-1] = ""  # an empty title gets no annotation
    ref = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **kw).to_dict()["layout"]
    ref.pop("template", None)
    assert subplot_grid(rows, cols, titles, **kw) == ref


def test_colour_scale_and_merge():
    for name in ("RdBu", "RdBu_r", "Viridis"):
        assert colour_scale(name) == go.Heatmap(colorscale=name).to_plotly_json()["colorscale"]
    base = {"xaxis": {"title": {"text": "a"}, "type": "category"}, "shapes": [1]}
    assert merge(base, {"xaxis": {"title": {"font": {"size": 3}}}, "shapes": [2]}) == {
        "xaxis": {"title": {"text": "a", "font": {"size": 3}}, "type": "category"}, "shapes": [2]}
    assert merge({"a": 1}, None) == {"a": 1}


# ---- serialisation (viz.theme.Figure: built when read, to_dict without plotly's copies; issue 39) -----------------
def _explorer_builders() -> dict:
    from viz.attention import HEAD_HOVER, grid_figure, token_view
    from viz.heatmap import heatmap

    n = len(TOKENS)
    att = _softmax(_rng().normal(size=(2, 3, n, n))).astype(np.float32)
    blocked = ~np.tril(np.ones((n, n), bool))
    big = _rng().normal(size=(700, 300)).astype(np.float32)  # pooled to the heatmap's cell budget
    return {
        "one_head": lambda: heatmap(att[1, 2], TOKENS, TOKENS, title="L1 H2", zmin=0.0, hover=HEAD_HOVER,
                                    masked=blocked, colorbar_title="weight", xlabel="key", ylabel="query",
                                    text_auto=False, highlight_row=3),
        "one_head_text": lambda: heatmap(att[0, 0], TOKENS, TOKENS, text_auto=True, lecture=True),
        "pooled": lambda: heatmap(big, None, None, title="big", colorscale="RdBu", zmid=0.0),
        "grid": lambda: grid_figure(att, (1, 2), title="all heads"),
        "token_view": lambda: token_view(att[1], 2, TOKENS, TOKENS, [0, 1, 2], title="tokens"),
    }


def _lazy_and_built():
    """(name, the figure as a builder returns it, never read; the same figure, built) for every builder whose figure
    is a viz.theme.Figure (make_subplots' are plotly's own)."""
    from viz.theme import Figure

    builders = {**{name: (lambda b=b: b("ko")) for name, b in FIGURES.items()}, **_explorer_builders()}
    out = []
    for name, build in builders.items():
        lazy, built = build(), build()
        if type(lazy) is Figure:
            assert "_lazy" in lazy.__dict__, name
            built.data  # noqa: B018 - reading it builds it
            assert "_lazy" not in built.__dict__, name
            out.append((name, lazy, built))
    assert len(out) >= 20
    return out


def test_figure_to_dict_is_plotlys_key_for_key_and_leaves_the_figure_unchanged():
    """What st.plotly_chart serialises (to_dict) is exactly plotly's own dict — keys in plotly's order, typed arrays
    included — whether the figure was built or not, and serialising changes nothing (a figure plotly would store
    otherwise, e.g. with a second x axis, is built first)."""
    for name, lazy, built in _lazy_and_built():
        want = pio.to_json(go.Figure.to_dict(built), validate=False)  # plotly's own, order kept
        assert pio.to_json(lazy.to_dict(), validate=False) == want, name
        if name.startswith(("one_head", "pooled")):  # a figure of one trace and plain axes: to_dict did not build it
            assert "_lazy" in lazy.__dict__, name
        assert pio.to_json(built.to_dict(), validate=False) == want, name
        assert lazy.to_json() == built.to_json() == go.Figure.to_json(built), name
        assert pio.to_json(go.Figure.to_dict(built), validate=False) == want, name  # unchanged by serialising
        for tr in built.data:
            if isinstance(getattr(tr, "z", None), np.ndarray):
                assert tr.z.flags.writeable, name
    z = dict(_lazy_and_built_by_name())["one_head"].to_dict()["data"][0]["z"]
    assert z["dtype"] == "f4" and z["shape"] == f"{len(TOKENS)}, {len(TOKENS)}"  # a typed array, not a list


def _lazy_and_built_by_name():
    return [(name, lazy) for name, lazy, _ in _lazy_and_built()]


def test_an_unbuilt_figure_behaves_as_the_built_one():
    """Reading or changing a figure that was not built yet (fig.data, fig.layout, update_layout, a deep copy,
    plotly.io) builds it first: the same traces and layout as the figure built at once."""
    import copy

    for name, lazy, built in _lazy_and_built()[:8]:
        assert lazy.layout.to_plotly_json() == built.layout.to_plotly_json(), name
        assert [t.type for t in lazy.data] == [t.type for t in built.data], name
        assert "_lazy" not in lazy.__dict__
        assert copy.deepcopy(lazy).to_json() == copy.deepcopy(built).to_json(), name
        lazy.update_layout(height=123)
        assert lazy.to_dict()["layout"]["height"] == 123 and built.layout.height != 123, name
    _, fresh, _ = _lazy_and_built()[0]
    fresh.update_layout(height=321)  # a method call on an unbuilt figure
    assert fresh.to_dict()["layout"]["height"] == 321
