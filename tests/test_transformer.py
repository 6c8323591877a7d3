"""The encoder-decoder Transformer: the lecture's shapes (paper-base), greedy
decoding, and a few training steps on the tiny preset (differentiable end to end)."""

import numpy as np
import pytest
import torch

from analysis.stages import attention_steps
from model.config import PRESETS, TransformerConfig, preset
from model.layers import Layer
from model.transformer import Transformer


def test_paper_base_has_the_papers_shapes(paper_base):
    cfg = paper_base.config
    assert (cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_ff) == (512, 8, 64, 2048)
    assert (cfg.n_encoder_layers, cfg.n_decoder_layers) == (6, 6)
    assert cfg.positional == "sinusoidal" and cfg.dropout == 0.1
    m = paper_base.module
    assert len(m.encoder.layers) == 6 and len(m.decoder.layers) == 6
    layer = m.encoder.layers[0]
    P = layer.self_attn.projection_matrices()
    assert P["W_Q"].shape == (512, 512) and P["W_O"].shape == (512, 512)
    assert layer.ffn.linear1.weight.shape == (2048, 512) and layer.ffn.linear2.weight.shape == (512, 2048)
    assert not paper_base.trained and paper_base.kind == "encoder-decoder"
    assert not m.training  # loaded in eval mode: no dropout in traces


def test_i_am_good_gives_q_k_v_of_n_by_64(paper_base):
    tr = paper_base.trace("I am good", intermediates=True, max_new_tokens=4)
    n = len(tr.source_tokens)
    assert tr.source_tokens == ["[CLS]", "i", "am", "good", "[SEP]"]
    assert tr.encoder_hidden_states.shape == (7, n, 512)
    st = attention_steps(paper_base, tr, "encoder", layer=0, head=0)
    assert st["X"].shape == (n, 512)
    for name in ("W_Q", "W_K", "W_V"):
        assert st[name].shape == (512, 64)
    for name in ("Q", "K", "V", "Z"):
        assert st[name].shape == (n, 64)
    assert st["scores"].shape == (n, n) and st["Z_all"].shape == (n, 512) and st["output"].shape == (n, 512)
    assert tr.encoder_attention.shape == (6, 8, n, n)
    t = len(tr.target_tokens)
    assert tr.decoder_self_attention.shape == (6, 8, t, t)
    assert tr.cross_attention.shape == (6, 8, t, n)


def test_greedy_decoding_produces_tokens(paper_base):
    tr = paper_base.trace("I am good", max_new_tokens=5)
    gen = tr.meta["generated_tokens"]
    assert 1 <= len(gen) <= 5 and all(isinstance(t, str) and t for t in gen)
    assert tr.target_tokens[0] == "[CLS]"  # <bos>
    assert tr.target_ids[1:] == [paper_base.tokenizer.token_to_id(t) for t in gen][: len(tr.target_ids) - 1]
    # the trace replays decoding: greedy_decode on the module gives the same ids
    src = torch.tensor([tr.source_ids])
    ys = paper_base.module.greedy_decode(src, paper_base.bos_id, paper_base.eos_id, 5)[0].tolist()
    assert ys[1:] == [paper_base.tokenizer.token_to_id(t) for t in gen]
    # deterministic: the untrained weights come from a fixed seed
    assert paper_base.trace("I am good", max_new_tokens=5).meta["generated_tokens"] == gen


def test_decoding_length_is_capped_by_the_positions(paper_base, monkeypatch):
    src = paper_base.tokenizer.encode("I am good").ids
    monkeypatch.setattr(paper_base, "config", paper_base.config.replace(max_positions=4))
    ys = paper_base.decode_ids(src, max_new_tokens=10**9)  # e.g. from a hostile URL parameter
    assert ys[0] == paper_base.bos_id and len(ys) <= 4


def test_decoding_stops_at_eos_and_pads_finished_rows():
    cfg = PRESETS["tiny"]
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    src = torch.tensor([[3, 4, 5], [6, 7, 0]])
    bos = 1
    # make every step predict token 2 (eos): the generator's bias dominates
    with torch.no_grad():
        model.generator.bias.zero_()
        model.generator.bias[2] = 1e4
    ys = model.greedy_decode(src, bos, 2, max_len=10)
    assert ys.tolist() == [[1, 2], [1, 2]]


def test_greedy_step_equals_teacher_forced_row(paper_base):
    """Because of the look-ahead mask, decoding step t sees exactly row t of the full pass."""
    m = paper_base.module
    src = torch.tensor([[101, 1045, 2572, 2204, 102]])
    tgt = torch.tensor([[101, 7, 8, 9]])
    with torch.inference_mode():
        full = m(src, tgt).logits
        for t in range(1, 5):
            step = m(src, tgt[:, :t]).logits[:, -1]
            torch.testing.assert_close(step, full[:, t - 1], atol=1e-4, rtol=1e-4)


def test_tiny_preset_trains():
    cfg = preset("tiny")
    torch.manual_seed(0)
    model = Transformer(cfg).train()
    # copy task on a fixed small batch: tgt_in = <bos> + src, tgt_out = src + <eos>
    src = torch.randint(3, cfg.vocab_size, (8, 6))
    bos, eos = 1, 2
    tgt_in = torch.cat([torch.full((8, 1), bos), src], 1)
    tgt_out = torch.cat([src, torch.full((8, 1), eos)], 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        logits = model(src, tgt_in).logits  # (b, n, V)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab_size), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        # every parameter receives a gradient: differentiable end to end
        if not losses:
            assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_tied_embeddings_share_one_matrix():
    model = Transformer(PRESETS["tiny"])
    assert model.tgt_embed.token.weight is model.src_embed.token.weight
    assert model.generator.weight is model.src_embed.token.weight
    untied = Transformer(PRESETS["tiny"].replace(tie_embeddings=False))
    assert untied.generator.weight is not untied.src_embed.token.weight


def test_post_ln_layer_structure():
    """Add & Norm: each sublayer output is LayerNorm(x + Sublayer(x)); rows are normalised."""
    cfg = PRESETS["tiny"]
    torch.manual_seed(0)
    enc, dec = Layer(cfg).eval(), Layer(cfg, cross=True).eval()
    x, mem = torch.randn(2, 5, cfg.d_model), torch.randn(2, 7, cfg.d_model)
    with torch.no_grad():
        y, attn = enc(x)
        a = enc.self_attn(x).output
        h = enc.norm1(x + a)
        torch.testing.assert_close(y, enc.norm2(h + enc.ffn(h)))
        z, attn2 = dec(x, memory=mem)
    assert attn["self"].weights.shape == (2, 2, 5, 5)
    assert attn2["cross"].weights.shape == (2, 2, 5, 7)
    # gamma = 1 and beta = 0 at init: every row has mean 0 and variance 1
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


def test_config_validation():
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="known presets"):
        preset("gpt-9")
    cfg = PRESETS["paper-base"]
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown config fields"):
        TransformerConfig.from_dict({"d_model": 8, "colour": "red"})
    with pytest.raises(ValueError, match="an encoder or a decoder"):
        TransformerConfig(n_encoder_layers=0, n_decoder_layers=0)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        TransformerConfig(d_model=12, n_heads=6, n_kv_heads=4)


def test_input_major_layout_changes_memory_order_only(tmp_path):
    """LoadedModel stores Linear weights input-major on CPU (faster GEMM for short inputs):
    same values, shapes and keys; same outputs; checkpoints still save and load."""
    import copy

    from model.loaded import input_major_linears
    from model.weights import load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    a = Transformer(PRESETS["tiny"]).eval()
    b = copy.deepcopy(a)
    changed = input_major_linears(b)
    n_linear = sum(isinstance(m, torch.nn.Linear) for m in b.modules())
    assert changed == n_linear - 1  # all but the generator, which is tied to the embedding
    assert b.generator.weight.is_contiguous() and b.generator.weight is b.src_embed.token.weight
    w = b.encoder.layers[0].self_attn.in_proj.weight
    assert not w.is_contiguous() and w.t().is_contiguous()
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and va.shape == vb.shape and torch.equal(va, vb)
    src, tgt = torch.tensor([[3, 4, 5, 6]]), torch.tensor([[1, 7, 8]])
    with torch.no_grad():
        oa, ob = a(src, tgt), b(src, tgt)
    torch.testing.assert_close(oa.logits, ob.logits, atol=1e-5, rtol=0)
    for x, y in zip(oa.decoder.cross_attention, ob.decoder.cross_attention):
        torch.testing.assert_close(x, y, atol=1e-6, rtol=0)
    save_checkpoint(b, tmp_path / "b.safetensors")
    c = Transformer(PRESETS["tiny"])
    load_checkpoint(c, tmp_path / "b.safetensors", "fix")
    assert torch.equal(c.encoder.layers[0].self_attn.in_proj.weight, w)


def test_loaded_models_use_the_input_major_layout(minilm, paper_base):
    for loaded in (minilm, paper_base):
        w = loaded.module.encoder.layers[0].ffn.linear1.weight
        assert w.t().is_contiguous()


def test_next_logits_is_the_generator_and_follows_its_weight():
    """The greedy loop's one-row projection (a (d, V) copy of the generator's weight) gives the generator's logits,
    also after the weight changed in place (the copy is remade)."""
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"]).eval()
    h = torch.randn(3, model.config.d_model)
    with torch.no_grad():
        torch.testing.assert_close(model.next_logits(h), model.generator(h), atol=1e-5, rtol=1e-5)
        model.generator.weight.mul_(2.0)
        torch.testing.assert_close(model.next_logits(h), model.generator(h), atol=1e-5, rtol=1e-5)
        model.generator.bias.add_(1.0)
        torch.testing.assert_close(model.next_logits(h), model.generator(h), atol=1e-5, rtol=1e-5)


def test_stack_upto_stops_after_the_layer_with_the_same_record():
    """LayerStack.forward(upto=L): the layers above L are not run; layer L's record and output are those of the
    full pass (Step by step and the Mask lab record one layer this way)."""
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"]).eval()
    src = torch.tensor([[3, 4, 5, 6, 0]])
    with torch.inference_mode():
        full = model.encode(src, record=True)
        for layer in range(len(model.encoder.layers)):
            part = model.encode(src, record={layer}, upto=layer)
            assert len(part.self_attention) == layer + 1 and set(part.records) == {layer}
            torch.testing.assert_close(part.hidden, full.hidden_states[layer + 1], atol=0, rtol=0)
            a, b = part.records[layer]["self"], full.records[layer]["self"]
            torch.testing.assert_close(a.weights, b.weights, atol=0, rtol=0)
            torch.testing.assert_close(a.record["stages"].scores, b.record["stages"].scores, atol=0, rtol=0)


@pytest.mark.parametrize("changes", [
    {},  # the paper's: sinusoidal, post-LN, self-attention
    dict(positional="learned", position_offset=2, embedding_layer_norm=True),  # BART's positions
    dict(decoder_mixer="ssru", decoder_start="zeros", sinusoid_layout="marian", mask_pad="none"),  # Bergamot's
    dict(n_encoder_layers=0, positional="rotary", n_kv_heads=1, norm="rmsnorm", norm_placement="pre",
         gated_ffn=True, activation="silu", bias=False),  # a llama-like decoder-only stack
])
def test_incremental_decoding_equals_the_full_pass(changes):
    """Feeding one token at a time with the DecodeCache gives every position the states a full pass gives it."""
    from model.transformer import DecodeCache

    torch.manual_seed(0)
    config = preset("tiny").replace(**changes)
    model = Transformer(config).eval()
    src = torch.randint(1, 64, (1, 7))
    tgt = torch.randint(1, 64, (1, 9))
    with torch.inference_mode():
        memory = model.encode(src) if config.n_encoder_layers else None
        full = model.decode(tgt, memory).final  # (1, 9, d)
        cache = DecodeCache(config.n_decoder_layers)
        pieces = [model.decode(tgt[:, :3], memory, cache=cache).final]  # a prefix, then one at a time
        pieces += [model.decode(tgt[:, i:i + 1], memory, cache=cache).final for i in range(3, 9)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.start == 9
