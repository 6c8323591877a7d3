"""The scores' mask as an added bias (model.attention.MaskBias, made once per stack) and RoPE turning each key/value
head before it is shared: faster (bench/bench_smollm2.py), and every number bit for bit what the former path gave,
which these tests recompute the former way (masked_fill with -inf, softmax, masked_fill with 0; keys shared, then
turned)."""

from __future__ import annotations

import math

import pytest
import torch

from model.attention import MaskBias, MultiHeadAttention, scaled_dot_product_attention
from model.config import TransformerConfig
from model.masks import causal_mask
from model.transformer import Transformer


def former_sdpa(q, k, v, mask):
    scaled = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)
    masked = scaled.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(masked, dim=-1).masked_fill(~mask, 0.0)
    return scaled, masked, weights, weights @ v


def _masks(b: int, n: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    keep = torch.rand(b, n, generator=g) > 0.3
    keep[:, 0] = True
    blocked_row = causal_mask(n)[None, None].repeat(b, 1, 1, 1)
    blocked_row[0, 0, 2] = False  # query 2 of item 0 may attend nowhere
    return {"causal": causal_mask(n)[None, None], "padding": keep[:, None, None, :],
            "causal and padding": keep[:, None, None, :] & causal_mask(n)[None, None], "a blocked row": blocked_row}


@pytest.mark.parametrize("name", ["causal", "padding", "causal and padding", "a blocked row"])
def test_the_bias_gives_the_former_numbers_bit_for_bit(name):
    g = torch.Generator().manual_seed(0)
    b, h, n, k = 2, 3, 7, 8
    q, kk, v = (torch.randn(b, h, n, k, generator=g) * 3 for _ in range(3))
    mask = _masks(b, n)[name]
    bias = MaskBias.of(mask)
    assert bias.every_row == (name != "a blocked row")
    assert bias.add.shape == mask.shape and torch.equal(bias.add == 0, mask) and (bias.add[~mask] == -math.inf).all()
    want = former_sdpa(q, kk, v, mask)
    for given in (None, bias):  # made here, or once by the caller
        st = scaled_dot_product_attention(q, kk, v, mask, bias=given)
        for got, exp in zip((st.scaled, st.masked, st.weights, st.output), want):
            assert torch.equal(got, exp)
            assert torch.equal(torch.signbit(got), torch.signbit(exp))  # not even a zero's sign differs
    assert torch.isfinite(st.weights).all() and (st.weights[~mask.expand_as(st.weights)] == 0).all()


@pytest.mark.parametrize("name", ["causal", "padding", "causal and padding", "a blocked row"])
def test_the_fill_an_accelerator_always_applies_changes_no_weight(name):
    """On an accelerator MaskBias never reads its flag back (no wait for the device per decoding step): the bias of a
    mask on PyTorch's "meta" device, which has no values to read, is made, and says every_row False. The fill that
    every_row False brings gives the CPU's weights bit for bit where every row has a key."""
    mask = _masks(2, 7)[name]
    meta = MaskBias.of(mask.to("meta"))
    assert meta.every_row is False and meta.add.shape == mask.shape and meta.add.device.type == "meta"
    g = torch.Generator().manual_seed(1)
    q, kk, v = (torch.randn(2, 3, 7, 8, generator=g) * 3 for _ in range(3))
    cpu = scaled_dot_product_attention(q, kk, v, mask)
    filled = scaled_dot_product_attention(q, kk, v, mask, bias=MaskBias(MaskBias.of(mask).add, False))
    assert torch.equal(filled.weights, cpu.weights) and torch.equal(filled.output, cpu.output)


def test_rope_on_each_kv_head_before_sharing_gives_the_former_record():
    cfg = TransformerConfig(d_model=24, n_heads=6, n_kv_heads=2, n_encoder_layers=0, n_decoder_layers=1, d_ff=20,
                            vocab_size=30, max_positions=16, dropout=0.0, positional="rotary", rope_theta=500.0,
                            norm="rmsnorm", norm_placement="pre", gated_ffn=True, activation="silu", bias=False)
    mha = MultiHeadAttention(cfg).eval()
    x = torch.randn(2, 9, 24, generator=torch.Generator().manual_seed(2))
    mask = causal_mask(9)[None, None]
    with torch.inference_mode():
        res = mha(x, mask=mask, record=True)
        q, k, v = mha.in_proj(x).split((mha.d_q, mha.d_kv, mha.d_kv), dim=-1)
        q, k, v = mha.split_heads(q), mha.shared(mha.split_heads(k)), mha.shared(mha.split_heads(v))
        rq, rk = mha.rotary(q), mha.rotary(k)  # the former order: shared, then turned
        weights = former_sdpa(rq, rk, v, mask)[2]
    r = res.record
    for key, want in (("q_proj", q), ("k_proj", k), ("q", rq), ("k", rk), ("v", v)):
        assert r[key].shape == (2, 6, 9, 4) and torch.equal(r[key], want), key
    assert torch.equal(res.weights, weights)


def test_a_stack_makes_the_bias_once_for_all_its_layers(monkeypatch):
    cfg = TransformerConfig(d_model=12, n_heads=3, d_ff=20, vocab_size=30, max_positions=16, dropout=0.0,
                            n_encoder_layers=0, n_decoder_layers=4, norm_placement="pre")
    model = Transformer(cfg).eval()
    made = []
    of = MaskBias.of.__func__
    monkeypatch.setattr(MaskBias, "of", classmethod(lambda cls, *a, **kw: made.append(a[0]) or of(cls, *a, **kw)))
    with torch.inference_mode():
        model(torch.tensor([[1, 2, 3, 4, 5]]))
    assert len([m for m in made if m is not None]) == 1  # the causal mask, for the four layers
