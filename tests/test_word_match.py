"""The Head lab's word matching (analysis.heads.locate) and merged word labels (analysis.heads.word_text), on
multilingual-e5-small's SentencePiece tokenizer and MiniLM's WordPiece one, in Korean and English: a typed word
matches a token, else a whole word, else the one eojeol (space-separated word) it starts ("트로피" -> "트로피는",
a noun with its particle); merged words read with no inner spaces and no subword marks."""

import pytest

from analysis import crosslingual as xl
from analysis import heads as H
from model import load_model
from model.errors import InputError

KO = "철수는 영희에게 책을 빌려주었는데, 그녀는 그것을 아직 돌려주지 않았다."
TROPHY = "트로피는 가방에 들어가지 않았다. 가방이 너무 작았기 때문이다"
EN = "The animal didn't cross the street, because it was tired."


@pytest.fixture(scope="module")
def e5():
    return load_model("multilingual-e5-small", "cpu")


def _find(model, text, word):
    inp = H.encoder_input(model, text)
    pos = H.locate(inp, word, what="query", sentence="A")
    return inp, pos, H.word_text(inp.tokens, pos)


@pytest.mark.parametrize("typed,word", [("트로피", "트로피는"), ("트로피는", "트로피는"), ("가방", None),
                                        ("들어가", "들어가"), ("들어", "들어가지"), ("않았", "않았다")])
def test_a_korean_noun_without_its_particle_finds_its_eojeol_on_e5(e5, typed, word):
    if word is None:  # "가방" starts two eojeols (가방에, 가방이): the user is asked for a position, naming both
        with pytest.raises(InputError, match="occurs 2 times"):
            _find(e5, TROPHY, typed)
        return
    inp, pos, text = _find(e5, TROPHY, typed)
    assert text == word  # the pieces merged with no spaces and no "▁" (an exact token comes first: "들어가")
    assert all(not inp.special[i] and inp.tokens[i] != "." for i in pos)  # the sentence's "." is left out


def test_the_lecturers_sentence_on_e5(e5):
    for typed, word in [("철수", "철수는"), ("영희", "영희에게"), ("그것", "그것을"), ("책", "책을"),
                        ("빌려주었는데", "빌려주었는데"), ("그녀는", "그녀는")]:
        assert _find(e5, KO, typed)[2] == word
    inp, pos, text = _find(e5, KO, "그녀")  # a token of its own ("▁그녀"): the exact match comes first
    assert text == "그녀" and [inp.tokens[i] for i in pos] == ["▁그녀"]
    inp, pos, _ = _find(e5, KO, "빌려주었는데")  # the comma after it is not part of the word
    assert "," not in [inp.tokens[i] for i in pos]


def test_exact_match_comes_before_a_prefix(e5, minilm):
    for model in (e5, minilm):
        inp, pos, text = _find(model, "The animal saw the animals", "animal")
        assert text == "animal" and len(pos) == 1  # the word "animal", not "animals" (which it starts too)
        assert _find(model, "The animal saw the animals", "animals")[2] == "animals"


def test_english_words_on_both_tokenizers(e5, minilm):
    for model in (e5, minilm):
        assert _find(model, EN, "it")[2] == "it"
        assert _find(model, EN, "didn't")[2] == "didn't"  # three pieces, merged as the text wrote them
        assert _find(model, EN, "tired")[2] == "tired"
        assert _find(model, EN, "stre")[2] == "street"  # a prefix of one word
        with pytest.raises(InputError, match="not a token or word"):
            _find(model, EN, "elephant")


def test_korean_on_minilm_matches_the_eojeol_of_its_jamo_pieces(minilm):
    inp, pos, text = _find(minilm, TROPHY, "트로피")
    assert text == "트로피는" and len(pos) == 9  # nine jamo pieces, recomposed into syllables
    assert all(inp.word_ids[i] == inp.word_ids[pos[0]] for i in pos)


def test_word_text_merges_pieces_without_spaces_or_marks():
    assert H.word_text(["▁", "트로", "피", "는"], range(4)) == "트로피는"
    assert H.word_text(["play", "##ing"], [0, 1]) == "playing"
    assert H.word_text(["Ġthe", "Ġcat"], [0]) == "the"
    assert H.word_text(["ᄐ", "##ᅳ", "##ᄅ", "##ᅩ"], range(4)) == "트로"  # MiniLM's jamo, NFC again


def test_minimal_pair_labels_are_the_words_found(e5):
    pair = H.minimal_pair(e5, "그 트로피는 가방에 들어가지 않았다. 그것은 너무 컸기 때문이다",
                          "그 트로피는 가방에 들어가지 않았다. 그것은 너무 작았기 때문이다", "그것", ("트로피", "가방"))
    assert pair.labels == ("그것은", "트로피는", "가방")  # "▁가방" is a token: an exact match


def test_crosslingual_words_are_merged_in_the_figure_title(e5):
    from viz.crosslingual import weight_grid

    r = xl.compare(e5, b=("그 트로피는 가방에 들어가지 않았다. 그것은 너무 컸기 때문이다", "그것", "트로피"))
    assert (r.b.query_word, r.b.target_word) == ("그것은", "트로피는")
    title = weight_grid(r.b, zmax=1.0, shared=()).layout.title.text
    assert "그것은 → 트로피는" in title and "▁" not in title
