"""The analysis package reads the model's own forward: greedy decoding read from one recorded pass equals a decoder
pass per step, the rest of the layer (Add & Norm, Feed Forward) reproduces the layer output, and results are
read-only."""

import numpy as np
import pytest
import torch

from analysis.decoding import greedy_run, teacher_forced_run
from analysis.stages import attention_steps, sublayer_steps


def test_one_pass_equals_a_decoder_pass_per_step(paper_base):
    """Because of the look-ahead mask, row t of one pass over [<bos>, y1 .. y_{T-1}] is what step t computed."""
    enc = paper_base.encode_source("I am good")
    ys = paper_base.decode_ids(enc.ids, 5)
    model, src = paper_base.module, torch.tensor([enc.ids])
    with torch.inference_mode():
        full = model(src, torch.tensor([ys[:-1]]))
        memory = model.encode(src)
        for t in range(1, len(ys)):
            dec = model.decode(torch.tensor([ys[:t]]), memory)
            logits = model.generator(dec.hidden[0, -1])
            assert int(logits.argmax()) == ys[t]  # greedy: the step's own argmax is the next token
            for layer in range(len(dec.self_attention)):
                torch.testing.assert_close(dec.self_attention[layer][0, :, -1, :t],
                                           full.decoder.self_attention[layer][0, :, t - 1, :t], atol=1e-5, rtol=0)
                torch.testing.assert_close(dec.cross_attention[layer][0, :, -1],
                                           full.decoder.cross_attention[layer][0, :, t - 1], atol=1e-5, rtol=0)


def test_decoding_runs_are_frozen_and_consistent(seq2seq_tiny):
    run = greedy_run(seq2seq_tiny, "the cat sat on the mat", "reverse")
    assert run.steps and run.steps[0].inputs == ["<bos>"]
    with pytest.raises(ValueError):
        run.steps[0].cross_row[0, 0, 0] = 1.0  # read-only: a cached run is shared by every session
    forced = teacher_forced_run(seq2seq_tiny, "the cat sat on the mat", "reverse")
    assert forced.output_tokens == forced.expected


@pytest.mark.parametrize("block,layer", [("encoder", 0), ("encoder", 5)])
def test_sublayer_steps_reproduce_the_layer_output(minilm, block, layer):
    trace = minilm.trace("The animal didn't cross the street because it was tired", intermediates=True)
    sub = sublayer_steps(minilm, trace, block, layer)
    att = attention_steps(minilm, trace, block, layer, 0)
    x = trace.encoder_hidden_states[layer]
    np.testing.assert_allclose(sub["x"], x, atol=1e-6)
    s1 = x + att["output"]  # Add
    np.testing.assert_allclose(sub["norm1_in"], s1, atol=1e-5)
    mu, var = s1.mean(-1, keepdims=True), s1.var(-1, keepdims=True)
    norm1 = (s1 - mu) / np.sqrt(var + sub["eps_norm1"]) * sub["gamma_norm1"] + sub["beta_norm1"]  # & Norm
    np.testing.assert_allclose(sub["norm1"], norm1, atol=1e-4)
    hidden = norm1 @ sub["W_1"] + sub["b_1"]  # (n, 1536): MiniLM's d_ff
    assert hidden.shape[1] == 1536
    np.testing.assert_allclose(sub["ffn_pre"], hidden, atol=1e-3)
    ffn = sub["ffn_act"] @ sub["W_2"] + sub["b_2"]
    s2 = sub["norm1"] + ffn
    out = (s2 - s2.mean(-1, keepdims=True)) / np.sqrt(s2.var(-1, keepdims=True) + sub["eps_norm2"]) \
        * sub["gamma_norm2"] + sub["beta_norm2"]
    np.testing.assert_allclose(out, trace.encoder_hidden_states[layer + 1], atol=1e-4)
    np.testing.assert_allclose(sub["norm2"], trace.encoder_hidden_states[layer + 1], atol=1e-5)
