"""Step-by-step stages: what the page draws reproduces the model's own attention weights and the attention
sublayer's output to 1e-5, the drawn stages agree with each other, and shapes / formulas are labelled."""

import numpy as np
import pytest
import torch

from analysis.stages import attention_steps
from viz.steps import build_stages, stage_figure

TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="module")
def trace(minilm):
    return minilm.trace(TEXT, intermediates=True)


def _by_key(stages):
    return {s.key: s for s in stages}


def replay(stages) -> dict[str, np.ndarray]:
    """Recompute the drawn weights and Z from the drawn Q, K, V and mask (float64): the figures agree with one
    another, not only with the model."""
    s = {st.key: st.matrix.astype(np.float64) for st in stages}
    scaled = s["Q"] @ s["K"].T / np.sqrt(s["Q"].shape[1])
    scaled = np.where(s["mask"] > 0.5, scaled, -np.inf)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return {"weights": weights, "Z": weights @ s["V"]}


@pytest.mark.parametrize("layer,head", [(0, 0), (2, 5), (5, 11)])
def test_drawn_pipeline_reproduces_the_model(minilm, trace, layer, head):
    steps = attention_steps(minilm, trace, "encoder", layer, head)
    stages = build_stages(steps, trace.source_tokens, trace.source_tokens, head=head, n_heads=12)
    s = _by_key(stages)
    np.testing.assert_allclose(s["weights"].matrix, trace.encoder_attention[layer, head], atol=1e-5)
    x = torch.as_tensor(trace.encoder_hidden_states[layer])[None]  # (1, n, d)
    with torch.inference_mode():
        ref = minilm.module.encoder.layers[layer].self_attn(x).output[0].numpy()  # (n, d)
    np.testing.assert_allclose(s["output"].matrix, ref, atol=1e-5)
    again = replay(stages)  # from the drawn Q, K, V and mask alone
    np.testing.assert_allclose(again["weights"], s["weights"].matrix, atol=1e-5)
    np.testing.assert_allclose(again["Z"], s["Z"].matrix, atol=1e-5)
    k = 32
    np.testing.assert_allclose(s["Z_all"].matrix[:, head * k:(head + 1) * k], s["Z"].matrix, atol=1e-6)


def test_stages_are_in_the_lectures_order_with_shapes_and_formulas(minilm, trace):
    steps = attention_steps(minilm, trace, "encoder", 1, 3)
    stages = build_stages(steps, trace.source_tokens, trace.source_tokens, head=3, n_heads=12)
    n = len(trace.source_tokens)
    assert [s.key for s in stages] == ["X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "mask",
                                       "masked", "weights", "Z", "Z_all", "W_O", "output"]
    s = _by_key(stages)
    assert s["Q"].shape == f"Q: {n} × 32" and s["X"].shape == f"X: {n} × 384"
    assert s["W_Q"].shape == "W_Q: 384 × 32" and s["W_O"].shape == "W_O: 384 × 384"
    assert s["Z_all"].shape == f"Concat: {n} × 384"
    assert all(st.latex and st.caption for st in stages)
    assert r"\sqrt{d_k}" in s["scaled"].latex and "softmax" in s["weights"].latex
    assert s["mask"].trivial and s["masked"].trivial  # one sentence in the encoder: nothing is blocked
    assert s["Q"].group == s["K"].group == s["V"].group == "QKV"


def test_decoder_self_and_cross_blocks(paper_base):
    trace = paper_base.trace("I am sam", intermediates=True, target="I am sam")
    steps = attention_steps(paper_base, trace, "decoder_self", 1, 2)
    rows, cols = trace.axis_tokens("decoder_self")
    s = _by_key(build_stages(steps, rows, cols, head=2, n_heads=8, block="decoder_self"))
    np.testing.assert_allclose(s["weights"].matrix, trace.decoder_self_attention[1, 2], atol=1e-5)
    np.testing.assert_array_equal(s["mask"].matrix, np.tril(np.ones((len(rows), len(rows)))))
    assert not s["masked"].trivial and np.array_equal(s["masked"].masked, np.triu(np.ones_like(s["mask"].matrix), 1) > 0)
    fig = stage_figure(s["masked"])
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1:]).all() and np.isfinite(np.diag(z)).all()

    steps = attention_steps(paper_base, trace, "cross", 4, 7)
    rows, cols = trace.axis_tokens("cross")
    s = _by_key(build_stages(steps, rows, cols, head=7, n_heads=8, block="cross"))
    assert "memory" in s and s["K"].rows == list(cols) and s["Q"].rows == list(rows)
    np.testing.assert_allclose(s["weights"].matrix, trace.cross_attention[4, 7], atol=1e-5)
    assert s["weights"].shape == f"A: {len(rows)} × {len(cols)}"


def test_stage_figures_pool_long_inputs(minilm):
    trace = minilm.trace("word " * 600, intermediates=True)
    steps = attention_steps(minilm, trace, "encoder", 0, 0)
    stages = build_stages(steps, trace.source_tokens, trace.source_tokens, head=0, n_heads=12)
    total = 0
    for st in stages:
        if st.trivial:  # the page shows its formula only
            continue
        fig = stage_figure(st)
        assert fig.data[0].z.size <= 256 * 256
        total += len(fig.to_json())
    assert total < 3_500_000  # what the page ships at 512 tokens
