"""Plotly builders of the Attention explorer (viz.attention): labels, hover, safety, and what they would send."""

import json

import numpy as np
import pytest

from viz.attention import (
    HEAD_HOVER,
    grid_figure,
    grid_figure_mpl,
    token_view,
    token_view_lines,
    token_view_mpl,
)
from viz.export import figure_bytes
from viz.heatmap import axis_labels, heatmap


def head_heatmap(m, rows, cols, blocked=None, **kw):
    """The explorer's one-head heatmap: the shared builder with the attention hover."""
    return heatmap(m, rows, cols, zmin=0.0, hover=HEAD_HOVER, masked=blocked, **kw)


def _att(shape, seed=0):
    a = np.random.default_rng(seed).random(shape).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def test_axis_labels_unique_and_escaped():
    labels = axis_labels(["the", "<script>", "the", "the", "a\x07"])
    assert len(set(labels)) == 5
    assert labels[0] == "the" and labels[2] == "the\u200c" and labels[3] == "the\u200c\u200b"  # repeat k in binary
    assert max(len(x) for x in axis_labels(["w"] * 512)) <= 1 + 9  # a few invisible characters, not 511
    assert labels[1] == "&lt;script&gt;" and "<" not in "".join(labels)
    assert labels[4] == "a\\x07"


def test_head_heatmap_hover_and_axes():
    m = np.array([[0.25, 0.75], [0.5, 0.5]], dtype=np.float32)
    fig = head_heatmap(m, ["it", "was"], ["animal", "it"], title="t")
    trace = fig.data[0]
    assert trace.hovertemplate == "%{y} -> %{x}: %{z:.3f}<extra></extra>"
    assert list(trace.x) == ["animal", "it"] and list(trace.y) == ["it", "was"]
    np.testing.assert_allclose(np.asarray(trace.z), m)
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top


def test_head_heatmap_rejects_wrong_labels():
    with pytest.raises(ValueError, match="shape"):
        head_heatmap(np.zeros((2, 3)), ["a", "b"], ["a", "b"])


def test_head_heatmap_blocked_cells_are_gaps():
    m = np.tril(np.ones((3, 3), dtype=np.float32))
    blocked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    z = np.asarray(head_heatmap(m, list("abc"), list("abc"), blocked=blocked).data[0].z, dtype=float)
    assert np.isnan(z[blocked]).all() and np.isfinite(z[~blocked]).all()


def test_head_heatmap_json_at_512_tokens_is_compact():
    m = _att((512, 512))[...]
    toks = [f"tok{i % 40}" for i in range(512)]
    size = len(head_heatmap(m, toks, toks).to_json())
    assert size < 2_000_000, size  # one float32 typed array (~1.4 MB base64), no per-cell strings
    assert size > 512 * 512 * 4  # and it does carry every cell


def test_grid_figure_at_512_tokens_sends_thumbnails_not_matrices():
    att = _att((6, 12, 512, 512), seed=1)
    fig = grid_figure(att, (2, 5))
    spec = json.loads(fig.to_json())
    size = len(fig.to_json())
    assert size < 600_000, size  # 72 full matrices would be ~100 MB
    heat, heads = fig.data
    assert np.asarray(heat.z).shape == (6 * 25, 12 * 25)
    assert np.asarray(heads.customdata).shape == (72, 2)
    assert np.asarray(heads.customdata)[2 * 12 + 5].tolist() == [2, 5]
    rect = spec["layout"]["shapes"][0]
    assert rect["x0"] == 5 * 25 - 0.5 and rect["y0"] == 2 * 25 - 0.5  # the selected head is outlined


def test_grid_figure_coloured_by_metric():
    att = _att((2, 3, 4, 4))
    metric = np.arange(6, dtype=np.float32).reshape(2, 3)
    fig = grid_figure(att, (1, 2), metric=metric, metric_label="Entropy")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), metric)
    cd = np.asarray(fig.data[1].customdata)
    assert cd.shape == (6, 3) and cd[5].tolist() == [1, 2, 5]


def test_token_view_lines_threshold_and_top_k():
    layer = np.zeros((2, 2, 4), dtype=np.float32)
    layer[0, 1] = [0.6, 0.3, 0.095, 0.005]
    layer[1, 1] = [0.0, 0.0, 0.0, 1.0]
    lines = token_view_lines(layer, 1, [0, 1], min_weight=0.01)
    assert lines[0] == [(0, pytest.approx(0.6)), (1, pytest.approx(0.3)), (2, pytest.approx(0.095))]
    assert lines[1] == [(3, 1.0)]
    assert token_view_lines(layer, 1, [0], top_k=1)[0] == [(0, pytest.approx(0.6))]


def test_token_view_one_colour_per_head_and_opacity_from_weight():
    layer = np.zeros((2, 3, 3), dtype=np.float32)
    layer[0, 2] = [0.9, 0.1, 0.0]
    layer[1, 2] = [0.0, 0.0, 1.0]
    fig = token_view(layer, 2, ["the", "animal", "it"], ["the", "animal", "it"], [0, 1])
    lines = [t for t in fig.data if t.mode == "lines" and t.x[0] is not None]  # not the legend-only entries
    colours = {t.legendgroup: set() for t in lines}
    for t in lines:
        colours[t.legendgroup].add(t.line.color.rsplit(",", 1)[0])
    assert set(colours) == {"h0", "h1"} and all(len(c) == 1 for c in colours.values())
    assert colours["h0"] != colours["h1"]
    alphas = sorted(float(t.line.color.rsplit(",", 1)[1].rstrip(")")) for t in lines if t.legendgroup == "h0")
    assert alphas == [0.1, 0.9]
    # only head 1 toggled on: no head-0 lines
    fig1 = token_view(layer, 2, ["the", "animal", "it"], ["the", "animal", "it"], [1])
    assert {t.legendgroup for t in fig1.data if t.mode == "lines"} == {"h1"}
    assert [t.name for t in fig.data if t.showlegend] == ["Head 0", "Head 1"]  # one legend entry per head


def test_token_view_long_input_draws_only_top_keys():
    layer = _att((12, 512, 512), seed=4)
    toks = [f"t{i}" for i in range(512)]
    fig = token_view(layer, 100, toks, toks, list(range(12)), top_k=5)
    keys = [t for t in fig.data if t.mode == "text+markers"][0]
    assert len(keys.x) <= 12 * 5
    assert len(fig.to_json()) < 200_000


def test_token_view_rejects_bad_query():
    with pytest.raises(ValueError, match="outside"):
        token_view(_att((1, 2, 2)), 5, ["a", "b"], ["a", "b"], [0])


def test_matplotlib_twins_render_png_and_svg():
    att = _att((2, 3, 5, 5))
    png = figure_bytes(grid_figure_mpl(att, title="minilm · all heads", subtitle="a $5 sentence"), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = figure_bytes(token_view_mpl(att[0], 1, list("abcde"), list("abcde"), [0, 1], title="t"), "svg")
    assert b"<svg" in svg[:400]
    korean = figure_bytes(token_view_mpl(att[0], 1, ["그", "동물", "은", "너무", "피곤"], ["그", "동물", "은", "너무", "피곤"],
                                         [0], title="ko"), "png")
    assert len(korean) > 1000


def test_long_numbered_axes_label_every_kth_index():
    """A 384-dimension axis labels at most 16 indices (0, 32, 64, ...); word axes and short axes keep plotly's own."""
    from viz.heatmap import heatmap, sparse_ticks

    fig = heatmap(np.zeros((384, 32)), [str(i) for i in range(384)], [str(i) for i in range(32)])
    assert list(fig.layout.yaxis.tickvals) == [str(i) for i in range(0, 384, 32)]
    assert fig.layout.xaxis.tickvals is None
    assert sparse_ticks(["the", "cat"] * 50) is None
    assert len(fig.data[0].y) == 384  # every cell is still sent (and named on hover)
