"""One Transformer, declared by its config: the stacks each kind of model gets, pre-LN and post-LN Add & Norm,
RMSNorm, grouped-query attention, a gated FFN, no biases, no positions, and paper-base's seeded weights unchanged
by the redesign (the same modules drawn in the same order)."""

from __future__ import annotations

import hashlib

import pytest
import torch
import torch.nn.functional as F

from model.attention import MultiHeadAttention
from model.config import PRESETS, TransformerConfig
from model.layers import FeedForward, Layer, make_norm
from model.transformer import Transformer

SMALL = dict(d_model=12, n_heads=3, d_ff=20, vocab_size=30, max_positions=16, dropout=0.0)


def test_each_kind_gets_its_stacks():
    enc = Transformer(TransformerConfig(**SMALL, n_encoder_layers=2, n_decoder_layers=0))
    assert enc.config.kind == "encoder" and enc.decoder is None and enc.generator is None
    assert enc.main_embed is enc.src_embed and len(enc.encoder.layers) == 2
    dec = Transformer(TransformerConfig(**SMALL, n_encoder_layers=0, n_decoder_layers=3, norm_placement="pre"))
    assert dec.config.kind == "decoder" and dec.encoder is None and dec.main_embed is dec.tgt_embed
    assert all(not layer.has_cross and layer.norms == ["norm1", "norm2"] for layer in dec.decoder.layers)
    assert dec.decoder.final_norm is not None  # pre-LN stacks end with a norm
    both = Transformer(TransformerConfig(**SMALL, n_encoder_layers=1, n_decoder_layers=2))
    assert both.config.kind == "encoder-decoder" and all(layer.has_cross for layer in both.decoder.layers)
    assert both.decoder.final_norm is None and both.decoder.layers[0].norms == ["norm1", "norm2", "norm3"]


def test_decoder_only_is_causal_and_its_logits_read_the_final_norm():
    torch.manual_seed(0)
    m = Transformer(TransformerConfig(**SMALL, n_encoder_layers=0, n_decoder_layers=2, norm_placement="pre",
                                      positional="learned", scale_embeddings=False, mask_pad="none")).eval()
    ids = torch.tensor([[3, 4, 0, 5, 6]])  # a pad id (0) inside: a token like any other (mask_pad none)
    with torch.no_grad():
        out = m(ids)
        for a in out.decoder.self_attention:
            assert torch.equal(torch.triu(a[0], 1), torch.zeros_like(a[0]))  # nothing above the diagonal
            assert (a[0, :, 3, 2] > 0).all()  # the pad id is attended
        torch.testing.assert_close(out.logits, m.generator(m.decoder.final_norm(out.decoder.hidden)))
        torch.testing.assert_close(m.output(out.decoder.hidden), out.logits)
        last = m(ids, last_only=True).logits
    torch.testing.assert_close(last[0, 0], out.logits[0, -1])
    # causal: the first positions do not see what comes after them
    with torch.no_grad():
        shorter = m(ids[:, :3]).logits
    torch.testing.assert_close(shorter[0], out.logits[0, :3], atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_pre_ln_layer_is_x_plus_sublayer_of_norm(norm):
    cfg = TransformerConfig(**SMALL, n_encoder_layers=1, n_decoder_layers=0, norm_placement="pre", norm=norm)
    torch.manual_seed(0)
    layer = Layer(cfg).eval()
    x = torch.randn(2, 5, cfg.d_model)
    with torch.no_grad():
        y, rec = layer(x, record=True)
        s = x + layer.self_attn(layer.norm1(x)).output
        torch.testing.assert_close(y, s + layer.ffn(layer.norm2(s)))
    r = rec["layer"]
    assert torch.equal(r["norm1_in"], x) and torch.equal(r["attn_in"], r["norm1"])
    torch.testing.assert_close(r["norm2_in"], s)
    torch.testing.assert_close(r["out"], y)


def test_post_ln_record_names_what_each_norm_read():
    cfg = PRESETS["tiny"]
    torch.manual_seed(0)
    layer = Layer(cfg, cross=True).eval()
    x, mem = torch.randn(1, 4, cfg.d_model), torch.randn(1, 6, cfg.d_model)
    with torch.no_grad():
        y, rec = layer(x, memory=mem, record=True)
    r = rec["layer"]
    torch.testing.assert_close(r["norm1_in"], x + r["attn_out"])  # the residual sum, then the norm
    torch.testing.assert_close(r["cross_in"], r["norm1"])  # cross-attention reads the state after self-attention
    torch.testing.assert_close(r["norm2_in"], r["norm1"] + r["cross_out"])
    torch.testing.assert_close(r["norm3_in"], r["norm2"] + r["ffn_out"])
    assert torch.equal(r["out"], y) and torch.equal(r["norm3"], y) and torch.equal(r["memory"], mem)


def test_rmsnorm_is_its_formula():
    cfg = TransformerConfig(**SMALL, n_encoder_layers=1, n_decoder_layers=0, norm="rmsnorm", layer_norm_eps=1e-6)
    norm = make_norm(cfg)
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, cfg.d_model))
    x = torch.randn(3, cfg.d_model) * 4 + 1
    expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * norm.weight
    torch.testing.assert_close(norm(x), expected, atol=1e-6, rtol=1e-6)


def test_grouped_query_attention_equals_heads_with_copied_keys_and_values():
    """6 query heads over 2 key/value heads give what 6 full heads give when each group's K and V are copies."""
    gqa_cfg = TransformerConfig(d_model=24, n_heads=6, n_kv_heads=2, n_encoder_layers=1, n_decoder_layers=0,
                                dropout=0.0)
    torch.manual_seed(0)
    gqa = MultiHeadAttention(gqa_cfg).eval()
    full = MultiHeadAttention(gqa_cfg.replace(n_kv_heads=None)).eval()
    assert gqa.in_proj.weight.shape == (24 + 2 * 8, 24)  # W_Q 24 rows, W_K and W_V 2 heads of 4 each
    d_k = 4
    with torch.no_grad():
        w, b = gqa.in_proj.weight, gqa.in_proj.bias
        k_w, v_w = w[24:32].view(2, d_k, 24), w[32:].view(2, d_k, 24)
        k_b, v_b = b[24:32].view(2, d_k), b[32:].view(2, d_k)
        rep = torch.arange(6) // 3  # query head i reads kv head i // 3
        full.in_proj.weight.copy_(torch.cat([w[:24], k_w[rep].reshape(24, 24), v_w[rep].reshape(24, 24)]))
        full.in_proj.bias.copy_(torch.cat([b[:24], k_b[rep].reshape(24), v_b[rep].reshape(24)]))
        full.out_proj.load_state_dict(gqa.out_proj.state_dict())
        x = torch.randn(2, 5, 24)
        a, ref = gqa(x, record=True), full(x, record=True)
    torch.testing.assert_close(a.weights, ref.weights)
    torch.testing.assert_close(a.output, ref.output)
    torch.testing.assert_close(a.record["k"], ref.record["k"])  # recorded per query head
    p = gqa.head_projections(4)  # query head 4 reads kv head 1
    torch.testing.assert_close(p["W_K"], gqa.projection_matrices()["W_K"][:, 4:8])
    torch.testing.assert_close(p["W_Q"], gqa.projection_matrices()["W_Q"][:, 16:20])


def test_gated_ffn_is_swiglu():
    cfg = TransformerConfig(**SMALL, n_encoder_layers=1, n_decoder_layers=0, gated_ffn=True, activation="silu",
                            bias=False)
    torch.manual_seed(0)
    ffn = FeedForward(cfg)
    assert ffn.linear1.bias is None and ffn.gate.bias is None
    x = torch.randn(2, 3, cfg.d_model)
    rec = {}
    out = ffn(x, rec)
    expected = (F.silu(x @ ffn.gate.weight.T) * (x @ ffn.linear1.weight.T)) @ ffn.linear2.weight.T
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(rec["ffn_hidden"], rec["ffn_act"] * rec["ffn_pre"])


def test_no_biases_and_no_positions():
    cfg = TransformerConfig(**SMALL, n_encoder_layers=0, n_decoder_layers=1, bias=False, output_bias=False,
                            positional="none", norm_placement="pre", norm="rmsnorm")
    m = Transformer(cfg)
    assert not [n for n, _ in m.named_parameters() if n.endswith(".bias")]
    assert m.tgt_embed.position is None and m.tgt_embed.position_table(4) is None
    parts = m.tgt_embed.parts(torch.tensor([[1, 2, 3]]))
    assert "position" not in parts and torch.equal(parts["sum"], parts["token"])  # the scaled tokens alone
    p = m.decoder.layers[0].self_attn.projection_matrices()
    assert not p["b_Q"].any() and not p["b_O"].any()  # drawn as zeros where the model has none


def test_learned_positions_with_an_offset_and_roberta_style_padding():
    cfg = TransformerConfig(**SMALL, n_encoder_layers=1, n_decoder_layers=0, positional="learned",
                            position_offset=2, positions_skip_pad=True, pad_id=1, scale_embeddings=False)
    torch.manual_seed(0)
    m = Transformer(cfg)
    table = m.src_embed.position.weight
    assert table.shape == (16 + 2, 12)
    torch.testing.assert_close(m.src_embed.position_table(3), table[2:5])
    ids = torch.tensor([[0, 5, 1, 6]])  # a pad (1) inside: it reads row 1 and does not advance the position
    parts = m.src_embed.parts(ids)
    torch.testing.assert_close(parts["position"][0], table[[2, 3, 1, 4]])


def test_paper_base_weights_are_those_of_before_the_redesign(paper_base):
    """paper-base's random weights (seed 0) depend on the order its modules are built and drawn: the one
    Transformer builds them as the paper's encoder-decoder did (digest computed with the code before it)."""
    h = hashlib.sha256()
    for k, v in sorted(paper_base.module.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().contiguous().numpy().tobytes())
    assert h.hexdigest() == "e8888560c9ac09916366bec76938be157ebe76f8397f803d9715e21ceac4ad9e"
