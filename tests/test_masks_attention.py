"""Masks (True = may attend) and scaled dot-product / multi-head attention.

Invariants from the lecture: blocked keys get weight exactly 0, every row of
softmax weights sums to 1, and the staged computation (scores, scaled, masked,
weights) agrees with the fast path. Multi-head attention is checked against
torch.nn.MultiheadAttention, which uses the same stacked [W_Q; W_K; W_V] layout.
"""

import math

import numpy as np
import pytest
import torch

from model.attention import MultiHeadAttention, scaled_dot_product_attention
from model.config import PRESETS
from model.masks import causal_mask, decoder_mask, padding_mask

PAD = 0


# ---- masks -------------------------------------------------------------------------------

def test_causal_mask_is_the_lower_triangle():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    expected = [[i >= j for j in range(4)] for i in range(4)]
    assert m.tolist() == expected
    assert causal_mask(1).tolist() == [[True]]
    assert causal_mask(0).shape == (0, 0)


def test_padding_mask_marks_pad_columns():
    # seed 002: "that is not" padded to the length of "this is my car"
    ids = torch.tensor([[11, 12, 13, 14], [21, 12, 22, PAD]])
    m = padding_mask(ids, PAD)
    assert m.shape == (2, 1, 1, 4) and m.dtype == torch.bool
    assert m[0, 0, 0].tolist() == [True, True, True, True]
    assert m[1, 0, 0].tolist() == [True, True, True, False]


def test_decoder_mask_combines_padding_and_look_ahead():
    # seed 002: "I am sam <pad>"
    ids = torch.tensor([[7, 8, 9, PAD]])
    m = decoder_mask(ids, PAD)
    assert m.shape == (1, 1, 4, 4)
    assert m[0, 0].int().tolist() == [
        [1, 0, 0, 0],
        [1, 1, 0, 0],
        [1, 1, 1, 0],
        [1, 1, 1, 0],
    ]
    # it is exactly the AND of the two masks
    assert torch.equal(m, padding_mask(ids, PAD) & causal_mask(4)[None, None])


# ---- scaled dot-product attention --------------------------------------------------------

def _qkv(b=2, h=3, n=5, m=6, k=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, h, n, k, generator=g), torch.randn(b, h, m, k, generator=g),
            torch.randn(b, h, m, k, generator=g))


def test_attention_equals_the_formula():
    q, k, v = _qkv()
    st = scaled_dot_product_attention(q, k, v)
    out, w = st.output, st.weights
    ref_w = torch.softmax(q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    torch.testing.assert_close(w.double(), ref_w, atol=1e-6, rtol=0)
    torch.testing.assert_close(out.double(), ref_w @ v.double(), atol=1e-5, rtol=0)
    assert w.shape == (2, 3, 5, 6) and out.shape == (2, 3, 5, 8)


@pytest.mark.parametrize("kind", ["padding", "causal", "random"])
def test_masked_weights_are_exactly_zero_and_rows_sum_to_one(kind):
    n = 6
    q, k, v = _qkv(n=n, m=n)
    if kind == "padding":
        mask = padding_mask(torch.tensor([[1, 2, 3, 4, 5, 6], [1, 2, 3, PAD, PAD, PAD]]), PAD)
    elif kind == "causal":
        mask = causal_mask(n)
    else:
        mask = torch.rand(2, 3, n, n, generator=torch.Generator().manual_seed(1)) > 0.5
        mask[..., 0] = True  # keep one key per row
    w = scaled_dot_product_attention(q, k, v, mask).weights
    full = mask.expand_as(w)
    assert (w[~full] == 0.0).all()  # exactly zero, not approximately
    assert (w[full] > 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)


def test_fully_blocked_row_is_not_nan():
    q, k, v = _qkv(b=1, h=1, n=2, m=3)
    mask = torch.tensor([[True, True, True], [False, False, False]])
    st = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(st.weights).all() and torch.isfinite(st.output).all()
    assert (st.weights[..., 1, :] == 0).all()  # a row with every key blocked attends nowhere


@pytest.mark.parametrize("use_mask", [False, True])
def test_stages_follow_the_formula(use_mask):
    q, k, v = _qkv(n=5, m=5)
    mask = causal_mask(5) if use_mask else None
    st = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(st.scores, q @ k.transpose(-2, -1), atol=1e-6, rtol=0)
    torch.testing.assert_close(st.scaled, st.scores / math.sqrt(q.shape[-1]), atol=1e-6, rtol=0)
    torch.testing.assert_close(st.output, st.weights @ v, atol=1e-6, rtol=0)
    if use_mask:
        blocked = ~mask.expand_as(st.masked)
        assert torch.isneginf(st.masked[blocked]).all()
        assert torch.equal(st.masked[~blocked], st.scaled[~blocked])
        assert (st.weights[blocked] == 0.0).all()
        torch.testing.assert_close(st.weights, torch.softmax(st.masked, -1), atol=1e-7, rtol=0)
    else:
        assert torch.equal(st.masked, st.scaled)


# ---- multi-head attention ----------------------------------------------------------------

def _mha_pair(d=16, h=4, seed=0):
    cfg = PRESETS["tiny"].replace(d_model=d, n_heads=h, dropout=0.0)
    torch.manual_seed(seed)
    ours = MultiHeadAttention(cfg).eval()
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, ref


def test_multi_head_self_attention_matches_torch_reference():
    ours, ref = _mha_pair()
    x = torch.randn(2, 7, 16)
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, PAD, PAD, PAD]])
    mask = padding_mask(ids, PAD)  # (b, 1, 1, n)
    with torch.no_grad():
        res = ours(x, mask=mask)
        out, w = ref(x, x, x, key_padding_mask=ids == PAD, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(res.output, out, atol=1e-5, rtol=0)
    torch.testing.assert_close(res.weights, w, atol=1e-6, rtol=0)
    assert (res.weights[1, :, :, 4:] == 0.0).all()


def test_multi_head_cross_attention_with_causal_and_memory():
    ours, ref = _mha_pair(d=24, h=3, seed=1)
    x, memory = torch.randn(1, 4, 24), torch.randn(1, 9, 24)
    with torch.no_grad():
        res = ours(x, memory, record=True)
        out, w = ref(x, memory, memory, need_weights=True, average_attn_weights=False)
    assert res.weights.shape == (1, 3, 4, 9)
    torch.testing.assert_close(res.output, out, atol=1e-5, rtol=0)
    torch.testing.assert_close(res.weights, w, atol=1e-6, rtol=0)
    rec = res.record
    assert rec["q"].shape == (1, 3, 4, 8) and rec["k"].shape == (1, 3, 9, 8) and rec["z"].shape == (1, 4, 24)
    # causal self-attention
    with torch.no_grad():
        res = ours(x, mask=causal_mask(4))
        out, w = ref(x, x, x, attn_mask=~causal_mask(4), need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(res.weights, w, atol=1e-6, rtol=0)
    torch.testing.assert_close(res.output, out, atol=1e-5, rtol=0)


def test_projection_matrices_reproduce_each_head():
    ours, _ = _mha_pair(d=16, h=4, seed=2)
    x = torch.randn(1, 5, 16)
    P = ours.projection_matrices()
    assert all(P[name].shape == (16, 16) for name in ("W_Q", "W_K", "W_V", "W_O"))
    with torch.no_grad():
        res = ours(x)
        heads = []
        for i in range(4):
            c = slice(i * 4, (i + 1) * 4)
            q = x[0] @ P["W_Q"][:, c] + P["b_Q"][c]
            k = x[0] @ P["W_K"][:, c] + P["b_K"][c]
            v = x[0] @ P["W_V"][:, c] + P["b_V"][c]
            a = torch.softmax(q @ k.T / 2.0, -1)  # sqrt(d_k) = sqrt(4)
            torch.testing.assert_close(res.weights[0, i], a, atol=1e-6, rtol=0)
            heads.append(a @ v)
        z = torch.cat(heads, -1)  # (n, h*k) = Concat(head_1..head_h)
        torch.testing.assert_close(res.output[0], z @ P["W_O"] + P["b_O"], atol=1e-5, rtol=0)


# ---- invariants on real models -----------------------------------------------------------

def _assert_rows_sum_to_one(att: np.ndarray):
    assert att.dtype == np.float32
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    assert (att >= 0).all()


def test_minilm_attention_rows_sum_to_one(minilm):
    for text in ["The animal didn't cross the street because it was tired", "I am good", "나는 학생입니다 🍕"]:
        tr = minilm.trace(text)
        _assert_rows_sum_to_one(tr.encoder_attention)
        assert tr.encoder_attention.shape == (6, 12, len(tr.source_tokens), len(tr.source_tokens))


def test_paper_base_attention_rows_sum_to_one_and_decoder_is_causal(paper_base):
    tr = paper_base.trace("I am good", target="I am sam")
    for block in tr.blocks:
        _assert_rows_sum_to_one(tr.attention(block))
    dec = tr.decoder_self_attention
    t = dec.shape[-1]
    upper = ~np.tril(np.ones((t, t), dtype=bool))
    assert (dec[..., upper] == 0.0).all()  # look-ahead: exactly zero above the diagonal
    assert (dec[..., ~upper] > 0).all()
    assert tr.masks["decoder_self"].tolist() == np.tril(np.ones((t, t), dtype=bool)).tolist()


def test_minilm_padded_batch_gives_pad_columns_zero_weight(minilm):
    # seed 002's padding example
    from analysis.masks import padded_run

    batch = padded_run(minilm, ["this is my car", "that is not"], layers=False)
    assert batch.ids.shape == batch.mask.shape == (2, 6)
    assert batch.tokens[1][-1] == "[PAD]" and batch.mask[1].tolist() == [True] * 5 + [False]
    att = batch.attention  # (L, b, h, n, n)
    assert att.shape == (6, 2, 12, 6, 6)
    assert (att[:, 1, :, :, ~batch.mask[1]] == 0.0).all()
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    # the unpadded row's attention equals tracing it alone; the padded row too, over its real tokens
    alone = minilm.trace("that is not").encoder_attention  # (L, h, 5, 5)
    np.testing.assert_allclose(att[:, 1, :, :5, :5], alone, atol=1e-5)
    np.testing.assert_allclose(att[:, 0], minilm.trace("this is my car").encoder_attention, atol=1e-5)
