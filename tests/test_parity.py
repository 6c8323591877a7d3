"""Parity of our MiniLM with the reference implementation (minGPT's
test_huggingface_import idea): `transformers.BertModel` in eager attention on
the same safetensors file, and the reference tokenizer on the same tokenizer.json.
Tests may import transformers; run-time code never does."""

import numpy as np
import pytest
import torch
import transformers as transformers

from model.weights import minilm_dir

DEFAULT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="module")
def reference():
    model = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    return model


@pytest.fixture(scope="module")
def ref_tokenizer():
    return transformers.AutoTokenizer.from_pretrained(str(minilm_dir()))


def _reference_run(reference, ids, type_ids):
    ids_t = torch.tensor([ids])
    with torch.inference_mode():
        out = reference(input_ids=ids_t, token_type_ids=torch.tensor([type_ids]),
                        attention_mask=torch.ones_like(ids_t), output_attentions=True)
    att = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, N, N)
    return att, out.last_hidden_state[0].numpy()


def _long_text():
    words = "the quick brown fox jumps over the lazy dog while a careful student reads about attention".split()
    return " ".join(words[i % len(words)] for i in range(900))


@pytest.mark.parametrize("case", ["short", "pair", "long"])
def test_attentions_and_hidden_state_match_reference(minilm, reference, ref_tokenizer, case):
    text, pair = {"short": (DEFAULT, None),
                  "pair": (DEFAULT, "The animal didn't cross the street because it was wide"),
                  "long": (_long_text(), None)}[case]
    tr = minilm.trace(text, pair=pair, intermediates=True)
    ref_enc = ref_tokenizer(text, pair, truncation=True, max_length=512)
    assert tr.source_ids == ref_enc["input_ids"]
    type_ids = ref_enc["token_type_ids"]
    if case == "pair":
        assert 0 in type_ids and 1 in type_ids  # the segment embedding is exercised
    if case == "long":
        assert len(tr.source_ids) == 512 and tr.truncated
    att, hidden = _reference_run(reference, tr.source_ids, type_ids)
    assert tr.encoder_attention.shape == att.shape
    assert np.abs(tr.encoder_attention - att).max() <= 1e-5
    assert np.abs(tr.encoder_hidden_states[-1] - hidden).max() <= 1e-4


def test_module_forward_matches_reference_for_a_padded_batch(minilm, reference):
    from analysis.masks import padded_run

    batch = padded_run(minilm, ["this is my car", "that is not"], layers=False)
    ids = torch.as_tensor(batch.ids)
    mask = torch.as_tensor(batch.mask)
    with torch.inference_mode():
        out = reference(input_ids=ids, attention_mask=mask.long(), output_attentions=True)
        ours = minilm.module.encode(ids, keep=mask)
    att = torch.stack(out.attentions).numpy()  # (L, b, H, n, n)
    assert np.abs(batch.attention - att).max() <= 1e-5
    real = batch.mask  # hidden states of padding rows are meaningless; compare real tokens
    assert np.abs(ours.hidden.numpy()[real] - out.last_hidden_state.numpy()[real]).max() <= 1e-4


TEXTS = [
    DEFAULT,
    "The animal didn't cross the street because it was wide",
    "나는 학생입니다. 트랜스포머는 어텐션을 사용한다.",
    "I love pizza 🍕🔥 and 🤖!",
    "Café naïve résumé Ångström façade",
    "didn't won't y'all",
    "<script>alert('x')</script> & <b>bold</b>",
    "  spaces\tand\nnewlines  ",
    "日本語とEnglishの混在 text",
    "[CLS] [SEP] [PAD] [MASK] typed by hand",
]


@pytest.mark.parametrize("text", TEXTS)
def test_token_ids_equal_reference_tokenizer(minilm, ref_tokenizer, text):
    enc = minilm.tokenizer.encode(text)
    ref = ref_tokenizer(text, truncation=True, max_length=512)
    assert enc.ids == ref["input_ids"]
    assert enc.tokens == ref_tokenizer.convert_ids_to_tokens(ref["input_ids"])
    assert enc.type_ids == ref["token_type_ids"]


def test_long_text_ids_equal_reference_truncation(minilm, ref_tokenizer):
    text = _long_text()
    enc = minilm.tokenizer.encode(text)
    ref = ref_tokenizer(text, truncation=True, max_length=512)
    assert enc.ids == ref["input_ids"] and len(enc.ids) == 512
    assert enc.n_tokens_untruncated == len(ref_tokenizer(text)["input_ids"])
