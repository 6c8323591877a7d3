"""Attention rollout and attention flow (analysis.flow) against independent implementations: rollout as explicit
matrix products, max-flow as the minimum cut found by enumerating every cut of small graphs."""

import itertools

import numpy as np
import pytest

from analysis import flow as F
from model.errors import InputError


def _attention(rng, L, H, n):
    a = rng.random((L, H, n, n)) ** 3  # peaky rows
    return (a / a.sum(-1, keepdims=True)).astype(np.float32)


def _residual_by_loops(att):
    L, H, n, _ = att.shape
    out = np.zeros((L, n, n))
    for la in range(L):
        for i in range(n):
            row = [0.5 * sum(float(att[la, h, i, j]) for h in range(H)) / H + (0.5 if i == j else 0.0)
                   for j in range(n)]
            out[la, i] = np.array(row) / sum(row)
    return out


def _min_cut_brute_force(cap, s, t):
    """The smallest s-t cut over every vertex subset (max-flow = min-cut), for graphs of up to ~18 nodes: each row of
    `side` is one subset containing s and not t; its cut is the capacity of the edges leaving it."""
    v = cap.shape[0]
    others = [u for u in range(v) if u not in (s, t)]
    bits = np.array(list(itertools.product([0.0, 1.0], repeat=len(others))))  # (2^k, k)
    side = np.zeros((len(bits), v))
    side[:, s] = 1.0
    side[:, others] = bits
    return float(((side @ cap) * (1.0 - side)).sum(1).min())


def test_rollout_is_the_product_of_residual_layers():
    rng = np.random.default_rng(0)
    att = _attention(rng, 4, 3, 5)
    a = _residual_by_loops(att)
    r = F.rollout(att)
    for la in range(4):
        expected = np.linalg.multi_dot([a[k] for k in range(la, -1, -1)]) if la else a[0]
        np.testing.assert_allclose(r[la], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("seed", range(6))
def test_max_flow_equals_brute_force_min_cut(seed):
    rng = np.random.default_rng(seed)
    v = 7
    cap = rng.random((v, v)) * (rng.random((v, v)) < 0.5)  # sparse random directed graph with real capacities
    np.fill_diagonal(cap, 0)
    assert F.max_flow(cap, 0, v - 1) == pytest.approx(_min_cut_brute_force(cap, 0, v - 1), abs=1e-9)


def test_max_flow_needs_backward_residual_edges():
    # the classic graph where a greedy first path (0-1-2-3) must be undone through the edge 1->2
    cap = np.zeros((4, 4))
    cap[0, 1] = cap[0, 2] = cap[1, 3] = cap[2, 3] = 1.0
    cap[1, 2] = 1.0
    assert F.max_flow(cap, 0, 3) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        F.max_flow(-cap, 0, 3)


def _full_layered_capacity(a):
    """All (L + 1) x n nodes of the layer graph, edge (l, j) -> (l + 1, i) with capacity A'_l[i, j]."""
    L, n, _ = a.shape
    cap = np.zeros(((L + 1) * n, (L + 1) * n))
    for la in range(L):
        for i in range(n):
            for j in range(n):
                cap[la * n + j, (la + 1) * n + i] = a[la, i, j]
    return cap


@pytest.mark.parametrize("shape", [(1, 2, 4), (2, 2, 4), (3, 2, 4), (2, 3, 5)])
def test_attention_flow_equals_min_cut_of_the_whole_layer_graph(shape):
    L, H, n = shape
    rng = np.random.default_rng(sum(shape))
    att = _attention(rng, L, H, n)
    cap = _full_layered_capacity(_residual_by_loops(att))
    for token in (0, n - 1):
        flow = F.attention_flow(att, token)
        for j in range(n):
            expected = _min_cut_brute_force(cap, j, L * n + token)
            assert flow[j] == pytest.approx(expected, abs=1e-6), (token, j)


def test_flow_on_a_real_model_is_bounded_and_result_read_only(minilm):
    tr = minilm.trace("The animal didn't cross the street because it was tired")
    seen = []
    res = F.flow_and_rollout(tr.encoder_attention, tr.source_tokens, 10, progress=seen.append)
    n = len(tr.source_tokens)
    assert res.flow.shape == res.rollout.shape == (n,) and seen[-1] == 1.0
    assert ((res.flow >= -1e-9) & (res.flow <= 1 + 1e-6)).all()
    assert res.rollout.sum() == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(res.rollout, F.rollout(tr.encoder_attention)[-1, 10])
    with pytest.raises(ValueError):
        res.flow[0] = 0.0
    assert res.rows()[10]["token"] == "it"


def test_flow_refuses_long_inputs_and_bad_tokens():
    att = np.full((2, 1, 8, 8), 1 / 8, dtype=np.float32)
    with pytest.raises(InputError, match="limited to 4 tokens"):
        F.attention_flow(att, 0, max_tokens=4)
    with pytest.raises(InputError, match="out of range"):
        F.attention_flow(att, 8)
    with pytest.raises(ValueError):
        F.residual_attention(np.ones((2, 1, 3, 4)))
