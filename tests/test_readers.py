"""Which models read a text (issue 34): the scripts of a text's letters, each model's declared scripts checked
against what its own tokenizer does to a sentence of that script, the registry's `readers`, what a notice says the
tokenizer made of unreadable words (measured: unknown tokens, jamo, UTF-8 byte pieces), and the model a switch
offers."""

from __future__ import annotations

import pytest

from analysis.readability import Readability, from_unknown_words, readability
from model import REGISTRY, load_model
from model.registry import readers
from model.scripts import script_of, scripts_of
from ui.readable import how_split, switch_target

KO = "그 동물은 너무 피곤해서 길을 건너지 않았다"
SAMPLES = {"Latin": "The animal did not cross the street", "Hangul": KO}


@pytest.mark.parametrize("ch, script", [("a", "Latin"), ("é", "Latin"), ("Ａ", "Latin"), ("가", "Hangul"),
                                        ("ᄀ", "Hangul"), ("ㄱ", "Hangul"), ("動", "Han"), ("は", "Hiragana"),
                                        ("テ", "Katakana"), ("ｱ", "Katakana"), ("Я", "Cyrillic"), ("λ", "Greek"),
                                        ("م", "Arabic"), ("א", "Hebrew"), ("1", None), (" ", None), ("🐶", None),
                                        ("!", None), ("·", None)])
def test_script_of(ch, script):
    assert script_of(ch) == script


def test_scripts_of_in_order_of_appearance():
    assert scripts_of("그 動物 cat 123 🐶 Привет") == ("Hangul", "Han", "Latin", "Cyrillic")
    assert scripts_of(["🐶🚗", "12"]) == ()
    assert scripts_of(["동물은", "naïve"]) == ("Hangul", "Latin")


def test_readers_from_the_declared_scripts():
    assert readers(["Hangul"]) == ["multilingual-e5-small", "seq2seq-tiny"]
    assert readers(["Han"]) == ["multilingual-e5-small"]
    assert readers(["Hangul", "Han"]) == ["multilingual-e5-small"]
    assert readers([]) == []  # emoji, digits: no model is said to read them better
    assert readers(["Hangul"], among=["bergamot-en-pt", "seq2seq-tiny", "nope"]) == ["seq2seq-tiny"]
    assert readers(["Latin"], among=["bergamot-pt-en", "minilm-l6"]) == ["bergamot-pt-en", "minilm-l6"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in REGISTRY if REGISTRY[n].path is None])
def test_each_declared_script_is_what_the_tokenizer_reads(name):
    """A model declared to read a script turns a sentence of it into real pieces; one not declared to read Hangul
    makes unknown tokens, jamo or byte pieces of the Korean sentence."""
    model = load_model(name, "cpu")
    declared = REGISTRY[name].scripts
    assert "Latin" in declared
    for script, text in SAMPLES.items():
        if model.abilities.translation:  # a translator names its unknown words itself
            n_bad = len(model.unknown_words(text))
        else:
            kw = {"task": "copy"} if model.abilities.tasks else {}
            n_bad = readability(model.trace(text, **kw)).n_unreadable
        assert (n_bad == 0) == (script in declared), (name, script, n_bad)


def test_what_the_tokenizer_made_of_the_words_is_measured(minilm):
    smol = load_model("smollm2-135m", "cpu")
    r = readability(smol.trace(KO))
    assert (r.kinds, r.scripts, r.unknown_tokens, r.n_unreadable, r.n_words) == (("bytes",), ("Hangul",), (), 7, 7)
    r = readability(minilm.trace(KO))
    assert (r.kinds, r.scripts, r.unknown_tokens) == (("unknown", "jamo"), ("Hangul",), ("[UNK]",))
    r = readability(minilm.trace("The 🐶 crossed 動物"))
    assert (r.kinds, r.scripts, r.unreadable) == (("unknown",), ("Han",), ("🐶", "動物"))
    assert readability(minilm.trace("The animal was tired")) == Readability(4, (), 0)


def test_jamo_a_student_typed_are_not_a_word_split_into_letters(minilm):
    """Laughter typed in jamo ("하ㅎㅎㅎ", "ㅋㅋㅋ") comes out of multilingual-e5-small as the letters typed: read as
    typed, no notice. A syllable broken into letters (MiniLM's WordPiece: "동" -> "ᄃ", "##ᅩ", "##ᆼ") still makes its
    word unreadable, and MiniLM has no piece for the rest ([UNK])."""
    text = "하ㅎㅎㅎㅎ 동물은 ㅋㅋㅋ 웃기다"
    e5 = load_model("multilingual-e5-small", "cpu").trace(text)
    assert e5.source_tokens[1:4] == ["▁하", "ᄒᄒ", "ᄒᄒ"]  # the typed ㅎ, normalised to conjoining jamo
    assert readability(e5) == Readability(4, (), 0)
    # the jamo typed are counted in the typed word, whatever the normalisation removed around it
    assert readability(load_model("multilingual-e5-small", "cpu").trace("\u200b하ㅎㅎ 동물은\u200b\u200b ㅋㅋ")).n_unreadable == 0
    r = readability(minilm.trace(text))
    assert (r.unreadable, r.n_unreadable, r.kinds) == (("하ㅎㅎㅎㅎ", "동물은", "ㅋㅋㅋ"), 4, ("unknown", "jamo"))


def test_how_the_notice_says_it():
    smol = Readability(7, ("그",), 7, ("bytes",), ("Hangul",))
    assert how_split(smol, "ko") == "글자가 아닌 UTF-8 바이트 조각"
    assert how_split(smol, "en") == "pieces of their UTF-8 bytes (a Hangul syllable is three bytes, and no piece is a letter)"
    both = Readability(7, ("그",), 7, ("unknown", "jamo"), ("Hangul",), ("[UNK]",))
    assert how_split(both, "ko") == "`[UNK]` 같은 알 수 없는 토큰이나 낱자(자모)"
    assert how_split(both, "en") == ("unknown tokens (`[UNK]`) and loose letters (each Hangul syllable taken apart "
                                     "into its jamo)")


def test_from_unknown_words():
    r = from_unknown_words(KO, ["그", "동물은", "너무", "피곤해서", "길을", "건너지", "않았다"])
    assert (r.n_words, r.n_unreadable, r.unreadable, r.kinds, r.scripts, r.unknown_tokens, r.mostly_unreadable) == (
        7, 7, ("그", "동물은", "너무"), ("unknown",), ("Hangul",), ("<unk>",), True)
    r = from_unknown_words("The cat 고양이 sat on the mat.", ["고양이"])
    assert (r.n_words, r.n_unreadable, r.mostly_unreadable) == (7, 1, False)
    assert from_unknown_words("a 가 나", ["가"]).mostly_unreadable is False
    assert from_unknown_words("a 가 나 b", ["가", "나"]).mostly_unreadable is True


def test_the_switch_offers_a_model_that_reads_the_words():
    ko = Readability(7, ("그",), 7, ("jamo",), ("Hangul",))
    assert switch_target(ko, "minilm-l6") == "multilingual-e5-small"
    assert switch_target(ko, "smollm2-135m") == "multilingual-e5-small"  # no decoder reads Hangul: the first reader
    assert switch_target(ko, "bergamot-en-pt") == "seq2seq-tiny"  # an encoder-decoder for an encoder-decoder
    assert switch_target(ko, "bergamot-en-pt", among=["seq2seq-tiny", "bergamot-en-pt"]) == "seq2seq-tiny"
    assert switch_target(ko, "minilm-l6", among=["minilm-l6"]) is None
    assert switch_target(Readability(3, ("🐶",), 1, ("unknown",), ()), "minilm-l6") is None
