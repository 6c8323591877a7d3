"""Issue 35 item 3, one way through: analysis/ asks the loaded model for its tokens (model/token_ops.py) and runs it
by the one run request (model/run.py); the trace keeps the token types; nothing is stored on the module."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from analysis import stages
from model.config import PRESETS
from model.trace import AttentionTrace
from model.transformer import Transformer

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER_CALL = re.compile(r"tokenizer\.|\.encode\(|encode_batch|encode_source")  # issue 35's grep
PAIR = ("The animal didn't cross the street", "because it was tired")


def test_analysis_tokenizes_in_at_most_three_places():
    """`grep -rn "tokenizer\\.\\|\\.encode(\\|encode_batch\\|encode_source" analysis`: 29 lines before, 3 now (the
    source in analysis/decoding.py, the encoder input in analysis/heads/common.py, the training lab's words)."""
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "analysis").rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if TOKENIZER_CALL.search(line)]
    assert hits == ["analysis/decoding.py:88", "analysis/heads/common.py:54", "analysis/training.py:88"]
    # and no tokenizer object is reached for in analysis/ at all (importing model/tokenizer.py's functions is fine)
    reach = re.compile(r"\w\.tokenizer\b(?! import)")
    assert [p.name for p in (ROOT / "analysis").rglob("*.py") if reach.search(p.read_text(encoding="utf-8"))] == []


def test_trace_keeps_the_token_types_through_npz_and_json(minilm, tmp_path):
    tr = minilm.trace(PAIR[0], pair=PAIR[1])
    enc = minilm.tokenizer.encode(*PAIR)
    assert tr.source_type_ids == enc.type_ids and set(tr.source_type_ids) == {0, 1}
    assert len(tr.source_type_ids) == len(tr.source_ids)
    back = AttentionTrace.load_npz(tr.save(tmp_path / "t.npz"))
    assert back.source_type_ids == tr.source_type_ids
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert z["source_type_ids"].tolist() == enc.type_ids
    assert tr.to_json_dict()["source_type_ids"] == enc.type_ids


def test_step_by_step_reads_the_pair_with_its_token_types_without_encoding_again(minilm, monkeypatch):
    """The stages of a pair's trace equal a forward with the tokenizer's own type ids, and are read without calling
    the tokenizer (the trace holds them); segment B's types matter (all zeros give other numbers)."""
    tr = minilm.trace(PAIR[0], pair=PAIR[1])
    enc = minilm.tokenizer.encode(*PAIR)
    with torch.inference_mode():
        ref = minilm.module.encode(torch.tensor([enc.ids]), torch.tensor([enc.type_ids]), record={2}, upto=2)
    want = ref.records[2]["self"].record["stages"].weights
    monkeypatch.setattr(type(minilm.tokenizer), "encode", lambda *a, **k: pytest.fail("encoded again"))
    got = stages.layer_record(minilm, tr, "encoder", 2)["self"].record["stages"].weights
    assert torch.equal(got, want)
    steps = stages.attention_steps(minilm, tr, "encoder", 2, 3)
    np.testing.assert_array_equal(steps["weights"], want[0, 3].numpy())
    with torch.inference_mode():
        zeros = minilm.module.encode(torch.tensor([enc.ids]), None, record={2}, upto=2)
    assert not torch.equal(zeros.records[2]["self"].record["stages"].weights, want)


def test_type_ids_are_decided_in_one_place(minilm, seq2seq_tiny):
    assert minilm.type_ids([0, 0, 1]).tolist() == [[0, 0, 1]]
    assert minilm.type_ids([]) is None
    assert seq2seq_tiny.type_ids([0, 0, 0]) is None  # no token-type embedding: the forward takes none


def test_token_operations_are_the_tokenizers(seq2seq_tiny):
    m = seq2seq_tiny
    tok = m.tokenizer
    ids = [m.eos_id, 5, 17, 300]
    assert m.token_texts(ids) == [tok.id_to_token(i) for i in ids]
    assert m.token_ids(m.token_texts(ids)) == ids
    assert m.token_texts([10 ** 7], "#{id}") == ["#10000000"] and m.token_texts([10 ** 7]) == [None]
    assert m.encode_target("hello world") == tok.encode("hello world", add_special_tokens=False).ids
    assert m.encode("hello world", task="reverse").ids == m.encode_source("hello world", task="reverse").ids
    assert m.detokenize([5, 17]) == tok.decode([5, 17])


def test_nothing_is_stored_on_the_module_and_a_trained_module_decodes_with_its_new_weights():
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"]).eval()
    assert not hasattr(model, "_generator_t")
    src = torch.randint(4, model.config.vocab_size, (2, 7))
    before = dict(vars(model))
    ys = model.greedy_decode(src, 1, 2, 6)
    assert vars(model).keys() == before.keys() and all(vars(model)[k] is v for k, v in before.items())
    assert torch.equal(ys, model.greedy_decode(src, 1, 2, 6, generator_t=model.generator_t()))
    h = torch.randn(3, model.config.d_model)
    with torch.no_grad():  # a training step changes the weights: the logits follow them, the copy is never stale
        model.generator.weight.mul_(-3.0)
        model.generator.bias.add_(0.5)
        torch.testing.assert_close(model.next_logits(h), model.generator(h), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model.next_logits(h, model.generator_t()), model.generator(h), atol=1e-5,
                                   rtol=1e-5)
    changed = model.greedy_decode(src, 1, 2, 6)
    assert torch.equal(changed, model.greedy_decode(src, 1, 2, 6, generator_t=model.generator_t()))


def test_the_loaded_model_keeps_its_copy_and_decodes_as_the_module(seq2seq_tiny):
    m = seq2seq_tiny
    assert torch.equal(m.generator_t, m.module.generator.weight.t())
    assert m.generator_t is m.generator_t  # made once
    src = m.encode_source("the cat sat", task="copy").ids
    with torch.inference_mode():
        plain = m.module.greedy_decode(torch.tensor([src]), m.bos_id, m.eos_id, m.step_limit(src))[0].tolist()
    assert m.decode_ids(src) == plain
