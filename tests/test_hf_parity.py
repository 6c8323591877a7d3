"""Local Hugging Face folders on our own modules agree with `transformers` (eager attention): attentions to
1e-5, hidden states and logits to 1e-4, greedy tokens exactly. Tiny random checkpoints, built here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hf_support import make_bart, make_encoder, make_gpt2, make_marian

from model.hf.load import load_local

CPU = torch.device("cpu")
TEXT = "The animal did not cross the street because it was tired"
ATOL_ATT, ATOL_HID = 1e-5, 1e-4


def hf_run(model, **inputs):
    with torch.no_grad():
        return model(**inputs, output_attentions=True, output_hidden_states=True)


def close(ours: np.ndarray, theirs: torch.Tensor, atol: float) -> None:
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=atol, rtol=0)


def hf_eager(model):
    model.config._attn_implementation = "eager"
    model.set_attn_implementation("eager") if hasattr(model, "set_attn_implementation") else None
    return model


@pytest.mark.parametrize("model_type,overrides", [
    ("bert", {}),  # hidden 30, 5 heads, exact gelu, token types
    ("bert", {"hidden_act": "relu", "num_attention_heads": 3}),
    ("roberta", {}),  # 3 heads of 7, gelu_new, positions from padding_idx + 1
    ("xlm-roberta", {"pad_token_id": 1}),
    ("distilbert", {}),  # sinusoidal positions
    ("distilbert", {"sinusoidal_pos_embds": False, "activation": "relu"}),
])
def test_encoder_parity(tmp_path, model_type, overrides):
    hf, path = make_encoder(model_type, tmp_path / model_type, **overrides)
    hf_eager(hf)
    ours = load_local(CPU, path)
    assert ours.kind == "encoder" and ours.name == model_type
    for text, pair in ((TEXT, None), ("i am good", "you are here")):
        tr = ours.trace(text, pair=pair, intermediates=True)
        ids = torch.tensor([tr.source_ids])
        kw = {"input_ids": ids}
        if model_type == "bert":
            kw["token_type_ids"] = torch.tensor([ours.tokenizer.encode(text, pair).type_ids])
        ref = hf_run(hf, **kw)
        assert tr.encoder_attention.shape == (len(ref.attentions), *ref.attentions[0].shape[1:])
        close(tr.encoder_attention, torch.stack([a[0] for a in ref.attentions]), ATOL_ATT)
        close(tr.encoder_hidden_states, torch.stack([h[0] for h in ref.hidden_states]), ATOL_HID)


def test_roberta_positions_skip_padding(tmp_path):
    """A pad token inside the input takes position padding_idx and later tokens do not advance (HF's rule)."""
    hf, path = make_encoder("roberta", tmp_path / "rob")
    hf_eager(hf)
    ours = load_local(CPU, path)
    ids = torch.tensor([[0, 5, 6, 1, 7, 2]])
    with torch.no_grad():
        out = ours.module.encode(ids, hidden=True)
    ref = hf_run(hf, input_ids=ids)
    close(out.hidden.numpy(), ref.last_hidden_state, ATOL_HID)


def test_distilbert_table_is_the_papers(tmp_path):
    from model.positional import sinusoidal_table

    hf, _ = make_encoder("distilbert", tmp_path / "d")
    close(sinusoidal_table(40, 30).numpy(), hf.embeddings.position_embeddings.weight, 1e-6)


def test_gpt2_parity_and_greedy(tmp_path):
    hf, path = make_gpt2(tmp_path / "gpt2")
    hf_eager(hf)
    ours = load_local(CPU, path)
    assert ours.kind == "decoder"
    tr = ours.trace(TEXT, intermediates=True)
    ids = torch.tensor([tr.source_ids])
    ref = hf_run(hf, input_ids=ids)
    n_layers = len(ref.attentions)
    close(tr.decoder_self_attention, torch.stack([a[0] for a in ref.attentions]), ATOL_ATT)
    assert np.allclose(np.triu(tr.decoder_self_attention, 1), 0)  # causal: nothing above the diagonal
    # HF's last hidden state is after ln_f; ours keeps the block outputs and gives the final norm's as `final`
    close(tr.decoder_hidden_states[:n_layers], torch.stack([h[0] for h in ref.hidden_states[:n_layers]]), ATOL_HID)
    with torch.no_grad():
        out = ours.module(ids)
    close(out.decoder.final.numpy(), ref.hidden_states[-1], ATOL_HID)
    close(out.logits.numpy(), ref.logits, ATOL_HID)
    # greedy continuation equals transformers' generate
    steps = ours.greedy_continue(TEXT, n_new=6)
    with torch.no_grad():
        gen = hf.generate(ids, max_new_tokens=6, do_sample=False, num_beams=1, pad_token_id=0,
                          attention_mask=torch.ones_like(ids))
    assert [s.choice.id for s in steps] == gen[0, ids.shape[1]:].tolist()
    probs = ref.logits[0, -1].softmax(-1)
    nxt = ours.next_token_distribution(TEXT, top_k=3)
    assert nxt[0].id == steps[0].choice.id and abs(nxt[0].prob - float(probs.max())) < 1e-5
    assert tr.meta["next_tokens"][0] == nxt[0].token


def test_gpt2_records_every_sublayer_and_ablates_heads(tmp_path):
    from model.run import ablate

    _, path = make_gpt2(tmp_path / "g", n_head=3, n_embd=21)
    ours = load_local(CPU, path)
    ids = torch.tensor([ours.tokenizer.encode("The cat sat on the mat.").ids])
    with torch.no_grad():
        out = ours.module(ids, record=True)
        rec = out.decoder.records[1]["layer"]
        block = ours.module.decoder.layers[1]
        assert torch.allclose(rec["norm1"], block.norm1(rec["x"])) and torch.equal(rec["attn_in"], rec["norm1"])
        assert torch.allclose(rec["norm2_in"], rec["x"] + rec["attn_out"])
        assert torch.allclose(rec["out"], rec["norm2_in"] + rec["ffn_out"])
        assert torch.allclose(rec["out"], out.decoder.hidden_states[2])
        assert set(out.decoder.records[1]["self"].record) >= {"q", "k", "v", "stages", "heads", "z"}
        ablated = ours.module(ids, hidden=True, edits=ablate(1, (0, 2), "keep", n_heads=3))
        assert not torch.allclose(ablated.logits, out.logits)
        assert torch.equal(ablated.decoder.hidden_states[1], out.decoder.hidden_states[1])  # layer 0 untouched
    tr = ours.trace("The cat sat", edits=ablate(0, (1,)))
    assert tr.decoder_self_attention.shape[:2] == (3, 3)


def seq2seq_check(hf, ours, text: str, n_new: int = 5) -> None:
    tr = ours.trace(text, intermediates=True, max_new_tokens=n_new)
    src = torch.tensor([tr.source_ids])
    dec = torch.tensor([tr.target_ids])
    ref = hf_run(hf, input_ids=src, decoder_input_ids=dec)
    close(tr.encoder_attention, torch.stack([a[0] for a in ref.encoder_attentions]), ATOL_ATT)
    close(tr.decoder_self_attention, torch.stack([a[0] for a in ref.decoder_attentions]), ATOL_ATT)
    close(tr.cross_attention, torch.stack([a[0] for a in ref.cross_attentions]), ATOL_ATT)
    close(tr.encoder_hidden_states, torch.stack([h[0] for h in ref.encoder_hidden_states]), ATOL_HID)
    close(tr.decoder_hidden_states, torch.stack([h[0] for h in ref.decoder_hidden_states]), ATOL_HID)
    with torch.no_grad():
        logits = ours.module(src, dec).logits
    close(logits.numpy(), ref.logits, ATOL_HID)
    # greedy: a manual argmax loop over transformers' logits from the decoder start
    ys = [hf.config.decoder_start_token_id]
    with torch.no_grad():
        for _ in range(n_new):
            nxt = int(hf(input_ids=src, decoder_input_ids=torch.tensor([ys])).logits[0, -1].argmax())
            ys.append(nxt)
            if nxt == hf.config.eos_token_id:
                break
    assert ours.decode_ids(tr.source_ids, n_new) == ys
    assert tr.target_ids == (ys[:-1] if ys[-1] == hf.config.eos_token_id else ys)
    forced = ours.trace(text, target="le chat est sur")
    assert forced.meta["teacher_forced"] and forced.target_tokens[1:] == ["le", "chat", "est", "sur"]


@pytest.mark.parametrize("overrides", [{}, {"scale_embedding": False, "activation_function": "relu"},
                                       {"decoder_ffn_dim": 19, "decoder_layers": 3, "encoder_layers": 1,
                                        "decoder_attention_heads": 7},  # 7 heads of 3 after 3 of 7
                                       # transformers 5 then saves three token tables: encoder, decoder, output
                                       {"tie_word_embeddings": False, "activation_function": "mish"}])
def test_bart_parity_and_greedy(tmp_path, overrides):
    hf, path = make_bart(tmp_path / "bart", **overrides)
    hf_eager(hf)
    ours = load_local(CPU, path)
    assert ours.kind == "encoder-decoder" and ours.bos_id == 2
    seq2seq_check(hf, ours, TEXT)
    seq2seq_check(hf, ours, "i am good")


@pytest.mark.parametrize("overrides", [{}, {"tie_word_embeddings": False}])
def test_marian_parity_and_greedy(tmp_path, overrides):
    from model.positional import sinusoidal_table

    hf, path = make_marian(tmp_path / "marian", **overrides)
    hf_eager(hf)
    close(sinusoidal_table(40, 30, layout="halves").numpy(), hf.model.encoder.embed_positions.weight, 1e-6)
    ours = load_local(CPU, path)
    assert ours.bos_id == hf.config.pad_token_id  # Marian starts decoding from <pad>
    seq2seq_check(hf, ours, TEXT)


def test_marian_odd_width_table():
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    from model.positional import sinusoidal_table

    ref = MarianSinusoidalPositionalEmbedding(12, 7).create_weight()
    close(sinusoidal_table(12, 7, layout="halves").numpy(), ref, 1e-6)


def test_gpt2_pre_ln_sublayers_reproduce_each_layer_output(tmp_path):
    """Step by step on GPT-2 (issue 17, item 4): the pre-LN sublayers read from the model's own forward rebuild every
    layer's output to 1e-5, LN_2 recomputed from its sum, mean, variance, γ and β, and each layer's output equals
    `transformers`' hidden state (the input of the next block) to 1e-5."""
    from analysis.stages import sublayer_steps

    hf, path = make_gpt2(tmp_path / "g", n_head=3, n_embd=21, n_layer=3)
    ours = load_local(CPU, path)
    tr = ours.trace(TEXT, intermediates=True)
    ref = hf_run(hf_eager(hf), input_ids=torch.tensor([tr.source_ids]))
    for layer in range(3):
        sub = sublayer_steps(ours, tr, "decoder_self", layer)
        s = sub["norm2_in"].astype(np.float64)
        ln2 = (s - sub["mean_norm2"][:, None]) / np.sqrt(sub["var_norm2"][:, None] + sub["eps_norm2"])
        np.testing.assert_allclose(ln2 * sub["gamma_norm2"] + sub["beta_norm2"], sub["norm2"], atol=1e-5)
        hid = sub["norm2"] @ sub["W_1"] + sub["b_1"]
        np.testing.assert_allclose(hid, sub["ffn_pre"], atol=1e-5)
        np.testing.assert_allclose(s + sub["ffn_act"] @ sub["W_2"] + sub["b_2"], sub["output"], atol=1e-5)
        np.testing.assert_allclose(sub["output"], tr.decoder_hidden_states[layer + 1], atol=1e-5)
        if layer < 2:  # transformers' last hidden state has ln_f applied; the others are block outputs
            close(sub["output"], ref.hidden_states[layer + 1][0], 1e-5)


def test_gpt2_head_surgery_matches_transformers_with_the_head_zeroed(tmp_path):
    """Head surgery on GPT-2's next-token distribution (issue 17, item 4) against `transformers` with the same
    heads' slices zeroed at c_proj's input by a hook: next-token probabilities to 1e-5, greedy continuation equal."""
    from analysis.heads import next_token_effect

    hf, path = make_gpt2(tmp_path / "g", n_head=3, n_embd=21, n_layer=3)
    hf_eager(hf)
    ours = load_local(CPU, path)
    heads = [(1, 0), (2, 2)]
    d_k = 7

    def zero(head):
        def hook(_mod, args):
            z = args[0].clone()
            z[..., head * d_k:(head + 1) * d_k] = 0.0
            return (z,)
        return hook

    handles = [hf.transformer.h[la].attn.c_proj.register_forward_pre_hook(zero(h)) for la, h in heads]
    try:
        ids = torch.tensor([ours.encode_prompt(TEXT).ids])
        with torch.no_grad():
            p_ref = hf(input_ids=ids).logits[0, -1].softmax(-1)
            cont = ids
            for _ in range(8):
                nxt = hf(input_ids=cont).logits[0, -1].argmax()
                cont = torch.cat([cont, nxt.view(1, 1)], 1)
    finally:
        for h in handles:
            h.remove()
    eff = next_token_effect(ours, TEXT, heads, "zero")
    after = {tok: p for tok, p in eff.top_after}
    for tok, p in after.items():
        np.testing.assert_allclose(p, float(p_ref[ours.tokenizer.token_to_id(tok)]), atol=1e-5)
    assert [ours.tokenizer.token_to_id(t) for t in eff.output_after] == cont[0, ids.shape[1]:].tolist()
    plain = next_token_effect(ours, TEXT, [], "zero")  # nothing ablated: before == after, bit for bit
    assert plain.top_before == plain.top_after and plain.output_before == plain.output_after
    assert eff.top_before == plain.top_before and eff.top_after != eff.top_before  # the ablation changed something


def test_every_activation_is_transformers_own():
    """Each config.json activation name we accept computes what transformers' ACT2FN computes under that name."""
    from transformers.activations import ACT2FN

    from model.activations import ACTIVATIONS

    x = torch.linspace(-12, 12, 2001)
    for name, fn in ACTIVATIONS.items():
        np.testing.assert_allclose(fn(x).numpy(), ACT2FN[name](x).numpy(), atol=1e-6, rtol=0, err_msg=name)


@pytest.mark.parametrize("model_type,act_field,act", [("bert", "hidden_act", "quick_gelu"),
                                                      ("roberta", "hidden_act", "mish")])
def test_encoder_parity_other_activations(tmp_path, model_type, act_field, act):
    hf, path = make_encoder(model_type, tmp_path / model_type, **{act_field: act})
    hf_eager(hf)
    ours = load_local(CPU, path)
    assert ours.activation == act  # what Step by step and the tour name
    tr = ours.trace(TEXT, intermediates=True)
    ref = hf_run(hf, input_ids=torch.tensor([tr.source_ids]))
    close(tr.encoder_attention, torch.stack([a[0] for a in ref.attentions]), ATOL_ATT)
    close(tr.encoder_hidden_states, torch.stack([h[0] for h in ref.hidden_states]), ATOL_HID)


def test_a_generated_pad_is_a_token_as_in_transformers(tmp_path):
    """A random Marian that emits <pad> (its decoder start) mid-output: transformers runs the decoder without a
    decoder_attention_mask, so that <pad> is a key like any other; ours too, and greedy decoding agrees. Padding the
    Mask lab appends is still masked (tgt_keep)."""
    from analysis.masks import decoder_run

    hf, path = make_marian(tmp_path / "m", seed=179, d_model=4, encoder_attention_heads=2, decoder_attention_heads=2,
                           encoder_layers=1, decoder_layers=1, encoder_ffn_dim=37, decoder_ffn_dim=33,
                           activation_function="gelu", max_position_embeddings=12)
    hf_eager(hf)
    ours = load_local(CPU, path)
    tr = ours.trace(TEXT, max_new_tokens=5)
    pad = hf.config.pad_token_id
    assert pad in tr.target_ids[1:]  # the case under test: a <pad> after the start
    seq2seq_check(hf, ours, TEXT)
    run = decoder_run(ours, "i am good", "le chat", n_pad=2)
    assert not run.mask[:, -2:].any() and run.mask[:, 0].all()  # the appended padding, never a key; the start, always
