"""The MiniLM WordPiece tokenizer as wrapped by model.tokenizer: no padding,
truncation at 512 reported to the caller, words grouped from offsets, special
tokens flagged, offsets pointing back into the text."""

import unicodedata

import pytest

from model.errors import InputError
from model.tokenizer import Encoded, check_text, group_words


@pytest.fixture(scope="module")
def tok(minilm):
    return minilm.tokenizer


def _norm(s: str) -> str:
    """What the BERT normaliser does to text: lowercase, strip accents (NFD minus marks)."""
    return "".join(c for c in unicodedata.normalize("NFD", s.lower()) if unicodedata.category(c) != "Mn")


def test_padding_is_off(tok):
    enc = tok.encode("I am good")
    assert isinstance(enc, Encoded)
    assert enc.tokens == ["[CLS]", "i", "am", "good", "[SEP]"]
    assert len(enc) == len(enc.ids) == 5  # the file's own setting would pad to 128
    assert "[PAD]" not in enc.tokens
    assert not enc.truncated and enc.n_tokens_untruncated == 5


def test_truncation_at_512_is_reported(tok):
    text = "hello " * 600
    enc = tok.encode(text)
    assert len(enc.ids) == 512
    assert enc.truncated
    assert enc.n_tokens_untruncated == 602  # 600 words + [CLS] + [SEP]
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    # exactly 510 words fit: not truncated
    enc = tok.encode("hello " * 510)
    assert len(enc.ids) == 512 and not enc.truncated and enc.n_tokens_untruncated == 512
    enc = tok.encode("hello " * 511)
    assert enc.truncated and enc.n_tokens_untruncated == 513


def test_pair_truncation_counts_both_sentences(tok):
    enc = tok.encode("hello " * 400, "world " * 400)
    assert len(enc.ids) == 512 and enc.truncated
    assert enc.n_tokens_untruncated == 803  # [CLS] a [SEP] b [SEP]
    assert set(enc.type_ids) == {0, 1}


def test_didnt_is_one_word(tok):
    enc = tok.encode("The animal didn't cross")
    assert enc.tokens == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "[SEP]"]
    assert enc.word_ids == [-1, 0, 1, 2, 2, 2, 3, -1]
    assert enc.words() == ["the", "animal", "didn't", "cross"]


def test_subword_pieces_share_a_word(tok):
    enc = tok.encode("tokenization transformers")
    assert any(t.startswith("##") for t in enc.tokens)
    words = enc.words()
    assert words == ["tokenization", "transformers"]
    for t, w in zip(enc.tokens, enc.word_ids):
        if t.startswith("##"):
            assert w >= 0


def test_special_tokens_flagged(tok):
    enc = tok.encode("I am good", "you are bad")
    assert enc.special == [t in ("[CLS]", "[SEP]") for t in enc.tokens]
    assert enc.tokens.count("[SEP]") == 2
    assert [w for w, s in zip(enc.word_ids, enc.special) if s] == [-1, -1, -1]
    # the pair starts new words even though the spans restart at 0
    assert enc.words() == ["i", "am", "good", "you", "are", "bad"]
    assert enc.type_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("text", [
    "The animal didn't cross the street because it was tired",
    "Café naïve résumé",
    "I love pizza 🍕!",
    "  leading and   inner   spaces ",
    "<script>alert(1)</script>",
])
def test_offsets_map_back_to_the_text(tok, text):
    enc = tok.encode(text)
    for t, (s, e), sp in zip(enc.tokens, enc.offsets, enc.special):
        if sp:
            assert (s, e) == (0, 0)
            continue
        assert 0 <= s < e <= len(text)
        if t != "[UNK]":
            assert _norm(text[s:e]) == (t[2:] if t.startswith("##") else t)


def test_korean_tokenizes_and_groups_into_words(tok):
    text = "나는 학생입니다"
    enc = tok.encode(text)
    assert len(enc) > 4 and "[UNK]" not in enc.tokens
    # each piece's offsets point at the syllable it came from
    assert {text[s:e] for (s, e), sp in zip(enc.offsets, enc.special) if not sp} == set("나는학생입니다")
    # jamo pieces of one syllable share its span; the word grouping keeps them together
    assert max(enc.word_ids) == 1
    assert enc.words() == ["나는", "학생입니다"]


def test_emoji_becomes_unknown_not_an_error(tok):
    enc = tok.encode("🍕")
    assert enc.tokens == ["[CLS]", "[UNK]", "[SEP]"]
    assert enc.offsets[1] == (0, 1)


def test_html_is_tokenized_as_text(tok):
    text = "<b>bold</b> <script>alert('x')</script>"
    enc = tok.encode(text)
    assert "<" in enc.tokens and "script" in enc.tokens and "bold" in enc.tokens
    assert not any(t.startswith("<") and len(t) > 1 for t in enc.tokens)  # no markup survives as one token
    assert "".join(text[s:e] for (s, e), sp in zip(enc.offsets, enc.special) if not sp) == text.replace(" ", "")


@pytest.mark.parametrize("bad", ["", " ", "\n\t  "])
def test_empty_text_is_an_input_error(tok, bad):
    with pytest.raises(InputError, match="empty"):
        tok.encode(bad)
    with pytest.raises(ValueError):  # InputError is a ValueError
        check_text(bad)
    with pytest.raises(InputError):
        tok.encode("fine", bad)


def test_non_string_text():
    with pytest.raises(InputError, match="string"):
        check_text(None)


def test_group_words_rules():
    # touching spans join, a gap splits, specials are -1, a new sequence always splits
    offsets = [(0, 0), (0, 4), (4, 5), (5, 6), (7, 9), (0, 0), (0, 2), (0, 0)]
    special = [True, False, False, False, False, True, False, True]
    seq = [-1, 0, 0, 0, 0, -1, 1, -1]
    assert group_words(offsets, special, seq) == [-1, 0, 0, 0, 1, -1, 2, -1]


def test_vocab_and_decode(tok):
    assert tok.vocab_size == 30522
    assert tok.token_to_id("[PAD]") == 0 and tok.id_to_token(101) == "[CLS]"
    enc = tok.encode("I am good")
    assert tok.decode(enc.ids) == "i am good"


LONG = ["The animal didn't cross the street because it was tired. " * 60, "그 동물은 너무 피곤해서 길을 건너지 않았다 " * 80,
        "[CLS] <pad> <s> </s> <unk> <eos> <copy> [SEP] [MASK] <|endoftext|> <|im_start|> " * 40]


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m", "seq2seq-tiny"])
def test_the_counter_shares_the_model_and_counts_as_a_copy_would(name):
    """The never-truncating counter is built on this tokenizer's own model and components (not a JSON copy of it):
    the counts of over-long text, typed special tokens included, equal those of a full copy with no limit."""
    from tokenizers import Tokenizer

    from model import load_model

    tok = load_model(name, "cpu").tokenizer
    copy = Tokenizer.from_str(tok._tok.to_str())
    copy.no_truncation()
    copy.encode_special_tokens = tok._tok.encode_special_tokens
    for text in LONG:
        for pair in (None, "a second text, 둘째"):
            enc = tok.encode(text, pair)
            assert enc.truncated and len(enc.ids) == tok.max_length
            assert enc.n_tokens_untruncated == len(copy.encode(text, pair).ids) > tok.max_length
    assert tok._counter.get_vocab_size(with_added_tokens=True) == tok._tok.get_vocab_size(with_added_tokens=True)
