"""Pure numpy transforms and head metrics of viz.metrics, on hand-made matrices with known answers."""

import numpy as np
import pytest

from analysis import metrics as vm
from viz import attention as va


def _rows_stochastic(rng, shape):
    a = rng.random(shape).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def test_drop_special_renormalises_rows_to_one():
    rng = np.random.default_rng(0)
    att = _rows_stochastic(rng, (2, 3, 5, 5))
    special = [True, False, False, False, True]
    out, rows, cols = vm.drop_special(att, special, special)
    assert out.shape == (2, 3, 3, 3) and rows == cols == [1, 2, 3]
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
    # proportions among the kept keys are unchanged
    np.testing.assert_allclose(out[0, 0, 0] / out[0, 0, 0, 0], att[0, 0, 1, 1:4] / att[0, 0, 1, 1], rtol=1e-5)


def test_drop_special_all_special_keeps_everything():
    att = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    out, rows, cols = vm.drop_special(att, [True, True], [True, True])
    assert out.shape == att.shape and rows == [0, 1]


def test_word_units_groups_pieces_and_keeps_specials_alone():
    # [CLS] the animal didn ' t cross [SEP]
    assert vm.word_units([-1, 0, 1, 2, 2, 2, 3, -1]) == [[0], [1], [2], [3, 4, 5], [6], [7]]
    assert vm.unit_labels(["[CLS]", "play", "##ing", "[SEP]"], [[0], [1, 2], [3]]) == ["[CLS]", "playing", "[SEP]"]


def test_merge_words_sums_to_word_and_means_from_word():
    att = np.array([[0.1, 0.2, 0.7],
                    [0.5, 0.25, 0.25],
                    [0.0, 1.0, 0.0]], dtype=np.float32)[None, None]  # (1, 1, 3, 3)
    units = [[0], [1, 2]]
    out = vm.merge_words(att, units, units)[0, 0]
    expected = np.array([[0.1, 0.9],                      # row 0: to word1 = 0.2 + 0.7
                         [(0.5 + 0.0) / 2, (0.5 + 1.0) / 2]])  # word1 rows averaged, cols summed
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)  # mass preserved


def test_merge_words_preserves_mass_on_real_shapes():
    rng = np.random.default_rng(1)
    att = _rows_stochastic(rng, (6, 12, 9, 9))
    units = vm.word_units([-1, 0, 0, 1, 2, 2, 2, 3, -1])
    out = vm.merge_words(att, units, units)
    assert out.shape == (6, 12, 6, 6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)


def test_head_average():
    att = np.stack([np.eye(2), np.full((2, 2), 0.5)])[None].astype(np.float32)  # (1, 2, 2, 2)
    np.testing.assert_allclose(vm.head_average(att)[0, 0], [[0.75, 0.25], [0.25, 0.75]])


def test_rollout_two_layers_by_hand():
    # layer 0: every token attends to token 0; layer 1: every token attends to token 1 (one head each)
    a0 = np.array([[1.0, 0.0], [1.0, 0.0]])
    a1 = np.array([[0.0, 1.0], [0.0, 1.0]])
    att = np.stack([a0[None], a1[None]]).astype(np.float32)  # (2, 1, 2, 2)
    r = vm.rollout(att)
    # A'0 = 0.5*a0 + 0.5*I = [[1, 0], [0.5, 0.5]];  A'1 = 0.5*a1 + 0.5*I = [[0.5, 0.5], [0, 1]]
    np.testing.assert_allclose(r[0], [[1.0, 0.0], [0.5, 0.5]], atol=1e-6)
    # R1 = A'1 @ A'0 = [[0.5*1 + 0.5*0.5, 0.5*0.5], [0.5, 0.5]]
    np.testing.assert_allclose(r[1], [[0.75, 0.25], [0.5, 0.5]], atol=1e-6)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-6)


def test_rollout_rejects_cross_attention():
    with pytest.raises(ValueError, match="square"):
        vm.rollout(np.ones((1, 1, 2, 3), dtype=np.float32) / 3)


def test_metrics_on_identity_and_uniform_heads():
    n = 4
    ident = np.eye(n)
    uniform = np.full((n, n), 1 / n)
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1.0  # the first token has no previous token: it attends to itself
    att = np.stack([ident, uniform, prev])[None].astype(np.float32)  # (1, 3, 4, 4)
    special = [True, False, False, True]
    m = vm.head_metrics(att, special)
    assert set(m) == set(vm.METRICS)
    np.testing.assert_allclose(m["entropy"][0], [0.0, 2.0, 0.0], atol=1e-5)  # log2(4) = 2 bits
    np.testing.assert_allclose(m["self"][0], [1.0, 0.25, 0.25], atol=1e-6)
    np.testing.assert_allclose(m["prev"][0], [0.0, 0.25, 1.0], atol=1e-6)  # mean over the 3 rows that have one
    np.testing.assert_allclose(m["next"][0], [0.0, 0.25, 0.0], atol=1e-6)
    np.testing.assert_allclose(m["special"][0], [0.5, 0.5, 0.5], atol=1e-6)  # identity: rows 0 and 3 of 4
    # mean distance: identity 0; uniform: mean |i-j| over 4x4 = 20/16; prev: rows 1-3 at distance 1, row 0 at 0
    np.testing.assert_allclose(m["distance"][0], [0.0, 20 / 16, 0.75], atol=1e-6)


def test_metrics_of_cross_attention_have_no_positional_values():
    att = np.full((2, 2, 3, 5), 0.2, dtype=np.float32)
    m = vm.head_metrics(att, [False] * 5)
    assert np.isnan(m["self"]).all() and np.isnan(m["distance"]).all()
    np.testing.assert_allclose(m["entropy"], np.log2(5), rtol=1e-5)
    rows = vm.metrics_rows(m)
    assert len(rows) == 4 and rows[0]["self"] is None and rows[3]["layer"] == 1 and rows[3]["head"] == 1


def test_top_attended_and_exclude_self():
    att = np.zeros((1, 2, 3, 3), dtype=np.float32)
    att[0, 0, 1] = [0.1, 0.6, 0.3]
    att[0, 1, 1] = [0.7, 0.2, 0.1]
    table = vm.top_attended(att, 1, ["a", "b", "c"])
    assert [(r["head"], r["most_attended"], r["weight"]) for r in table] == [(0, "b", 0.6), (1, "a", 0.7)]
    table = vm.top_attended(att, 1, ["a", "b", "c"], exclude=1)
    assert table[0]["most_attended"] == "c" and table[0]["weight"] == pytest.approx(0.3)


def test_pool_downsamples_512_and_keeps_the_mean():
    rng = np.random.default_rng(2)
    m = rng.random((512, 512)).astype(np.float32)
    p = va.pool(m, 24)
    assert p.shape == (24, 24)
    assert p.mean() == pytest.approx(m.mean(), rel=1e-2)
    small = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(va.pool(small, 24), small)  # smaller than the size: unchanged


def test_mosaic_shape_gaps_and_normalisation():
    rng = np.random.default_rng(3)
    att = _rows_stochastic(rng, (6, 12, 512, 512))
    img, t, u = va.mosaic(att, size=24)
    assert (t, u) == (24, 24) and img.shape == (6 * 25, 12 * 25)
    assert np.isnan(img[24, :]).all() and np.isnan(img[:, 24]).all()  # gap rows/columns
    tile = img[25:49, 50:74]  # layer 1, head 2
    assert np.nanmax(tile) == pytest.approx(1.0)
    assert img.nbytes < 200_000  # 72 thumbnails (~180 kB), not 72 full matrices (75 MB)
