"""Positional-encoding lab builders: the table equals the paper's formula, the similarity matrix, pooling that
keeps figures small, X / PE / X + PE of a sentence, learned vs fixed positions, and the fallback model."""

import json
import math

import numpy as np
import pytest

from analysis import positional as ap
from viz import positional as vp
from viz.export import figure_bytes
from viz.heatmap import axis_labels, budget_factors, heatmap, pool_by, pooling_note


def test_table_is_the_papers_formula_on_the_lecture_example():
    pe = ap.sinusoidal(50, 128)
    assert pe.shape == (50, 128) and pe.dtype == np.float32
    for pos in (0, 1, 7, 49):
        for i in (0, 5, 63):
            angle = pos / 10000 ** (2 * i / 128)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    assert np.abs(pe).max() <= 1.0


@pytest.mark.parametrize("n,d", [(0, 128), (50, 1), (2049, 64), (10, 1026)])
def test_table_rejects_sizes_outside_the_sliders(n, d):
    with pytest.raises(ValueError):
        ap.sinusoidal(n, d)


def test_similarity_is_dot_products_and_depends_only_on_distance():
    pe = ap.sinusoidal(40, 64)
    sim = ap.similarity(pe)
    np.testing.assert_allclose(sim, pe.astype(np.float64) @ pe.T, rtol=1e-5, atol=1e-4)
    assert np.allclose(np.diag(sim), 32.0, atol=1e-4)  # |PE_pos|^2 = d/2: each sin/cos pair contributes 1
    for k in (1, 5, 17):  # sum_i cos(w_i (p - q)): the same along every diagonal
        diag = np.diagonal(sim, offset=k)
        assert np.ptp(diag) < 1e-4
    cos = ap.similarity(pe, cosine=True)
    assert np.allclose(np.diag(cos), 1.0, atol=1e-6) and cos.max() <= 1.0 + 1e-6


def test_pooling_is_a_block_mean_that_ignores_nan():
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(pool_by(m, 2, 2), [[2.5, 4.5], [10.5, 12.5]])
    m[0, 0] = np.nan
    assert pool_by(m, 2, 2)[0, 0] == pytest.approx((1 + 4 + 5) / 3)
    assert budget_factors((14, 384), 256) == (1, 1)  # a sentence's X is sent as is
    assert budget_factors((512, 384), 256) == (2, 2)
    fr, fc = budget_factors((2048, 1024), 384)
    assert math.ceil(2048 / fr) * math.ceil(1024 / fc) <= 384 * 384
    assert pooling_note((50, 128)) is None and "averaged" in pooling_note((2048, 1024), 384)


def test_biggest_table_is_pooled_and_its_figure_stays_small():
    pe = ap.sinusoidal(2048, 1024)
    fig = vp.pe_heatmap(pe)
    z = fig.data[0].z
    assert z.size <= 384 * 384 and z.dtype == np.float32
    assert "averaged" in fig.layout.title.text
    assert len(fig.to_json()) < 1_500_000
    small = vp.pe_heatmap(ap.sinusoidal(50, 128))
    assert small.data[0].z.shape == (50, 128) and "averaged" not in small.layout.title.text


def test_curves_only_for_existing_dims_and_export_png():
    pe = ap.sinusoidal(100, 16)
    fig = vp.pe_curves(pe, [0, 1, 15, 99])
    assert [t.name.split(" ")[1] for t in fig.data] == ["0", "1", "15"]
    np.testing.assert_allclose(fig.data[0].y, pe[:, 0])
    assert "sin" in fig.data[0].name and "cos" in fig.data[1].name
    assert figure_bytes(vp.curves_figure(pe, [0, 1]), "png")[:4] == b"\x89PNG"
    assert vp.default_dims(128) == [0, 1, 32, 33, 126, 127]


def test_labels_are_escaped_and_repeated_tokens_stay_distinct():
    labels = axis_labels(["the", "<script>", "the", "x\x07"])
    assert labels[0] != labels[2] and labels[0].startswith("the")
    assert "<" not in labels[1] and "&lt;script&gt;" in labels[1]
    assert "\x07" not in labels[3]
    fig = heatmap(np.eye(2), ["<b>a</b>", "b"], ["c", "d"], title="t")
    assert "<b>" not in json.dumps(list(fig.data[0].y))


def test_triptych_of_minilm_shows_the_parts_that_are_summed(minilm):
    enc, parts = minilm.embedding_parts("I am good")
    np.testing.assert_allclose(parts["sum"], parts["token"] + parts["position"] + parts["token_type"], atol=1e-6)
    fig = vp.embedding_triptych(parts, enc.tokens, title="minilm")
    assert len(fig.data) == 4 and list(fig.data[0].y) == enc.tokens  # tokens are unique here
    np.testing.assert_allclose(fig.data[1].z, parts["position"], atol=1e-6)
    assert figure_bytes(vp.triptych_figure(parts, enc.tokens, title="t", subtitle="I am good"), "png")[:4] == b"\x89PNG"


def test_triptych_of_the_paper_model_uses_the_sinusoidal_table(paper_base):
    enc, parts = paper_base.embedding_parts("I am good")
    n = len(enc.tokens)
    np.testing.assert_allclose(parts["position"], ap.sinusoidal(n, 512), atol=1e-6)
    np.testing.assert_allclose(parts["sum"], parts["token"] + parts["position"], atol=1e-6)
    assert set(parts) == {"token", "position", "sum"}


def test_learned_positions_differ_from_sinusoidal(minilm):
    learned = minilm.position_table(512)
    assert learned.shape == (512, 384)
    fixed = ap.sinusoidal(512, 384)
    assert np.abs(learned - fixed).mean() > 0.01
    cos = ap.similarity(learned, cosine=True)
    assert cos[100, 101] > cos[100, 400]  # learned too: neighbours are more alike than distant positions
