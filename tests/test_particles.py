"""Korean particles after a placeholder (issue 18): chosen by how the value ends when read aloud, every rule with
values that need each form, and no catalogue string with a fixed particle right after a placeholder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from i18n import t
from i18n.catalog import render
from i18n.particles import PAIRS, final_sound, particle

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("value, end", [
    ("동물", "ㄹ"), ("강", "ㅇ"), ("나무", ""), ("길", "ㄹ"), ("헤드 1", "ㄹ"), ("헤드 2", ""), ("3", "ㅁ"), ("6", "ㄱ"), ("7", "ㄹ"),
    ("8", "ㄹ"), ("9", ""), ("0", "ㅇ"), ("10", "ㅂ"), ("20", "ㅂ"), ("100", "ㄱ"), ("1,000", "ㄴ"), ("10000", "ㄴ"),
    ("100000000", "ㄱ"), ("L", "ㄹ"), ("M", "ㅁ"), ("N", "ㄴ"), ("K", ""), ("PNG", ""), ("CPU", ""), ("HTML", "ㄹ"),
    ("seq2seq-tiny", ""), ("paper-base", ""), ("MiniLM-L6", ""), ("multilingual-e5-small", "ㄹ"), ("Python", "ㄴ"),
    ("the cat", "ㅅ"), ("swing", "ㅇ"), ("back", "ㄱ"), ("box", ""), ("Softmax", ""), ("Headlight", ""), ("“그것은”", "ㅇ"), ("`it`)", "ㅅ"), ("", None),
    ("!!", ""),  # 느낌표: a value with no letter is read by its symbols' names
])
def test_final_sound(value, end):
    assert final_sound(value) == end


@pytest.mark.parametrize("value, forms", [
    # value -> its 은/는, 이/가, 을/를, 와/과, 으로/로
    ("동물", "은 이 을 과 로"), ("학교", "는 가 를 와 로"), ("집", "은 이 을 과 으로"), ("나무", "는 가 를 와 로"), ("길", "은 이 을 과 로"), ("헤드 1", "은 이 을 과 로"),
    ("헤드 3", "은 이 을 과 으로"), ("헤드 2", "는 가 를 와 로"), ("seq2seq-tiny", "는 가 를 와 로"),
    ("multilingual-e5-small", "은 이 을 과 로"), ("MiniLM-L6", "는 가 를 와 로"), ("10", "은 이 을 과 으로"),
    ("PNG", "는 가 를 와 로"), ("", "은(는) 이(가) 을(를) 과(와) (으)로"),
])
def test_each_pair_takes_the_form_the_value_needs(value, forms):
    got = [particle(value, f) for f in ("은", "이", "을", "과", "으로")]
    assert got == forms.split()
    # either form of a pair may be written in the catalogue
    assert [particle(value, f) for f in ("는", "가", "를", "와", "로")] == got


def test_unknown_particle_is_an_error():
    with pytest.raises(ValueError):
        particle("x", "의")


def test_catalogue_format_spec():
    assert render("헤드 {head:|는} 이전 토큰 헤드입니다", head=1) == "헤드 1은 이전 토큰 헤드입니다"
    assert render("헤드 {head:|는} 이전 토큰 헤드입니다", head=2) == "헤드 2는 이전 토큰 헤드입니다"
    assert render("**{model:|을}** 씁니다", model="seq2seq-tiny") == "**seq2seq-tiny를** 씁니다"
    assert render("곱의 합 {s:.3f|은} 같다", s=0.25) == "곱의 합 0.250은 같다"
    assert render("{n:,}개", n=1200) == "1,200개"  # ordinary specs unchanged
    assert t("s2s.truncated", "ko", n=70, model="seq2seq-tiny", k=60).count("seq2seq-tiny는") == 1
    assert "헤드 1이" in t("error.no_head", "ko", model="m", block="b", layer=0, head=1, layers=2, heads=2)
    assert "헤드 2가" in t("error.no_head", "ko", model="m", block="b", layer=0, head=2, layers=2, heads=2)
    assert "실제 번역기 **bergamot-en-pt를**" in t("s2s.caption_translator", "ko", model="bergamot-en-pt")  # 피티를
    assert "실제 번역기 **bergamot-pt-en을**" in t("s2s.caption_translator", "ko", model="bergamot-pt-en")  # 이엔을


PARTICLES = "|".join(sorted({p for pair in PAIRS.values() for p in pair} | {"은\\(는\\)", "이\\(가\\)", "을\\(를\\)",
                                                                          "\\(으\\)로", "와\\(과\\)"}, key=len,
                            reverse=True))
# a fixed particle right after a placeholder, also after its closing quote, bracket or code mark ("“{token}”이",
# "`{path}`(는)"), or a "(는)"-style second form glued after one: the particle must come from the value
CLOSERS = r"(?:\*\*|`|[”’\"'」』>])*"  # not ')': "모델({model})은" takes the word's particle
FIXED = re.compile(r"\{[^{}]*\}" + CLOSERS + r"(" + PARTICLES + r"|\((?:" + PARTICLES + r")\))(?![가-힣])")
INSIDE_CODE = re.compile(r"`\{[^{}`]*\|[^{}`]*\}`")  # "`{token:|을}`": the particle inside the code span


def test_no_fixed_particle_after_a_placeholder_in_any_catalogue_file():
    bad = {}
    for path in sorted((ROOT / "i18n").glob("ko*.json")):
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            if isinstance(value, str) and (FIXED.search(value) or INSIDE_CODE.search(value)):
                bad[f"{path.name}:{key}"] = value
    assert bad == {}


@pytest.mark.parametrize("text", ["“{token}”이 바라보는 곳", "`{path:|은}`(는) 아닙니다", "`{token:|을}` 내보냅니다",
                                  "**{model}**를 씁니다"])
def test_the_rule_catches_fixed_particles_after_quotes_and_code(text):
    assert FIXED.search(text) or INSIDE_CODE.search(text)


@pytest.mark.parametrize("text", ["{token:“”|이} 바라보는 곳", "{path:``|은} 아닙니다", "토큰 {n}개", "“{a}” / “{b}”", "모델({model})은"])
def test_the_rule_lets_chosen_particles_pass(text):
    assert not FIXED.search(text) and not INSIDE_CODE.search(text)


# ---- issue 34: how Koreans read names, acronyms, symbols and byte pieces ----------------------------------------
# the lecturer's examples: "bergamot-en-pt를" (피티), "GPT-2는" (투), "MiniLM은" (엠), "e5는" (파이브), "SmolLM2는" (투),
# "BART는" (바트), "Q는" (큐), "K는" (케이), "V는" (브이), "RoPE는" (로프)
@pytest.mark.parametrize("value, topic, obj", [
    ("bergamot-en-pt", "는", "를"), ("GPT-2", "는", "를"), ("MiniLM", "은", "을"), ("e5", "는", "를"),
    ("SmolLM2", "는", "를"), ("BART", "는", "를"), ("Q", "는", "를"), ("K", "는", "를"), ("V", "는", "를"),
    ("RoPE", "는", "를"), ("pt", "는", "를"), ("bergamot-pt-en", "은", "을"), ("smollm2-135m", "은", "을"),
    ("SmolLM2-135M", "은", "을"), ("HTML", "은", "을"), ("QR", "은", "을"), ("NPZ", "는", "를"), ("JSON", "은", "을"),
    ("config.json", "은", "을"), ("cos", "은", "을"), ("sin", "은", "을"), ("W_1", "은", "을"), ("W_2", "는", "를"),
    ("LN_2", "는", "를"), ("x1", "은", "을"), ("sha256", "은", "을"), ("[SEP]", "는", "를"), ("[CLS]", "는", "를"),
    ("<eos>", "는", "를"), ("Dot-Product", "는", "를"), ("swap", "은", "을"), ("speak", "는", "를"), ("time", "은", "을"),
    ("table", "은", "을"), ("pipeline", "은", "을"), ("`##`", "은", "을"), ("`▁`", "는", "를"), ("headlight-deck", "은", "을"),
])
def test_names_acronyms_and_letters_read_as_koreans_read_them(value, topic, obj):
    assert (particle(value, "은"), particle(value, "을")) == (topic, obj)


@pytest.mark.parametrize("value, forms", [
    ("·", "이 으로"), (" ", "이 으로"), ("\n", "이 으로"), (",", "가 로"), ("ê", "가 로"), ("Ġë", "가 로"),
    ("ìĿ", "이 로"), ("³", "이 으로"), ("¼", "이 로"), ("¸", "가 로"), ("¬", "가 로"), ("🐶", "가 로"), ("α", "가 로"),
    ("ε", "이 으로"), ("Л", "이 로"), ("ᄀ", "이 으로"), ("ㄹ", "이 로"), ("ᅡ", "가 로"), ("##ᆼ", "이 으로"),
    ("3%", "가 로"), ("\x07", "이 로"), ("▁", "가 로"), ("", "이(가) (으)로"),
])
def test_any_token_has_one_form(value, forms):
    """A byte piece, a symbol, a space, a jamo, an emoji: read by its name (the token view's title said
    "“·”이(가) 바라보는 곳": the particle module had no reading for anything but Hangul, ASCII letters and digits)."""
    assert f"{particle(value, '이')} {particle(value, '으로')}" == forms


def test_every_character_gets_one_form():
    """No character, alone or after a word, falls back to both forms (or raises: "³" was a KeyError)."""
    from model.tokenizer import BYTE_OF as _BYTES  # byte-level BPE's 256 stand-ins (Ġ, Ċ, ì, Ŀ ...)

    chars = [chr(c) for c in range(0x20, 0x3100)] + list(_BYTES) + ["🐶", "😴", "🚗", "\U000f0000", "\x00", "\t"]
    bad = [c for c in chars for v in (c, "a" + c, "헤드 " + c) if "(" in particle(v, "이")]
    assert bad == []


def test_the_token_view_title_takes_one_particle_for_every_byte_piece():
    from model.tokenizer import BYTE_OF as _BYTES

    for tok in [*_BYTES, "Ġë", "ìĿ", "ĊĠĠĠĠĠ", "âĢĻ", "[UNK]", "▁"]:
        title = t("ex.token.title", "ko", model="smollm2-135m", layer=0, token=tok)
        assert "(가)" not in title and "(이)" not in title, title


def test_the_table_reads_every_model_of_the_registry_and_every_acronym_of_the_catalogue():
    """Each name of the registry and each acronym the Korean catalogue writes (two capitals or more) is in the
    table, and a particle after it follows the table's reading."""
    from i18n.particles import hangul_final, readings
    from model import REGISTRY

    names = readings()[0]
    for name in REGISTRY:
        assert name.lower() in names, name
        assert final_sound(name) == hangul_final(names[name.lower()]), name
    acronyms = set()
    for path in sorted((ROOT / "i18n").glob("ko*.json")):
        for value in json.loads(path.read_text(encoding="utf-8")).values():
            text = re.sub(r"\{[^{}]*\}", " ", value) if isinstance(value, str) else ""
            for word in re.findall(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*", text):
                for part in word.split("-"):
                    if sum(ch.isupper() for ch in part) >= 2:
                        acronyms.add(word if word.lower() in names else part)
    assert len(acronyms) > 40
    missing = sorted(a for a in acronyms if a.lower() not in names)
    assert missing == []
    for a in acronyms:
        assert final_sound(a) == hangul_final(names[a.lower()]), a


LATIN_THEN_PARTICLE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_\-.]*)(" + PARTICLES.replace("\\(", "(").replace("\\)", ")")
                                 .split("|은(는)")[0] + r")(?![가-힣])")


def literal_particles(value: str) -> list[tuple[str, str]]:
    """(word, particle) for a fixed particle written right after a Latin word or a number in a catalogue string, and
    after a quoted or bracketed one ("GPT-2는", "“▁”가", "[SEP]로"), placeholders left out."""
    forms = "|".join(sorted({p for pair in PAIRS.values() for p in pair}, key=len, reverse=True))
    text = re.sub(r"\{[^{}]*\}", "\x00", value)
    found = []
    for m in re.finditer(r"([A-Za-z0-9][A-Za-z0-9_\-.]*)(" + forms + r")(?![가-힣])", text):
        if m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "\x00"):
            before = text[max(0, m.start() - 20):m.start()].rsplit("\x00", 1)[-1]  # a name of two words: "Gemma 3"
            found.append((before + m.group(1), m.group(2)))
    for m in re.finditer(r"[\[“`'\"<‘]([^\[\]“”`'\"<>{}‘’\x00]+)[\]”`'\">’](" + forms + r")(?![가-힣])", text):
        found.append(m.groups())
    return found


def test_literal_particles_after_latin_words_follow_their_reading():
    assert literal_particles("번역기 bergamot-pt를, “▁”가, [SEP]로, sin/cos는 {model:|은} Gemma 3는") == [
        ("번역기 bergamot-pt", "를"), (", “▁”가, [SEP]로, sin/cos", "는"), (" Gemma 3", "는"), ("▁", "가"),
        ("SEP", "로")]
    assert particle("Qwen3와 Gemma 3", "은") == "는" and particle("3", "은") == "은"  # 젬마 쓰리, but 삼
    bad = {}
    for path in sorted((ROOT / "i18n").glob("ko*.json")):
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            if isinstance(value, str):
                wrong = [f"{w[-12:]}{p} (not {particle(w, p)})" for w, p in literal_particles(value)
                         if particle(w, p) != p]
                if wrong:
                    bad[key] = wrong
    assert bad == {}


SAMPLE_VALUES = ["·", " ", "\n", "Ġë", "ìĿ", "³", "[SEP]", "<eos>", "▁그녀", "bergamot-en-pt", "smollm2-135m", "GPT-2",
                 "🐶", "0.999", "12", "헤드 1"]
FALLBACKS = ("이(가)", "가(이)", "을(를)", "를(을)", "은(는)", "는(은)", "(으)로", "와(과)", "과(와)", "(이)나", "(이)라")


def test_no_visible_particle_fallback_in_the_rendered_korean_catalogue():
    """Every Korean message rendered with values a page may give it (byte pieces, symbols, spaces, names, numbers)
    shows one particle, never "이(가)" or "을(를)"; nor does a message write such a pair itself."""
    from i18n.catalog import catalogue, placeholders, render

    bad = {}
    for key, msg in catalogue("ko").items():
        if any(f in msg for f in FALLBACKS):
            bad[key] = msg
            continue
        names = placeholders(msg)
        for value in SAMPLE_VALUES:
            try:
                out = render(msg, **{n: value for n in names})
            except (ValueError, TypeError, IndexError, KeyError):  # a number format ("{x:.3f}"): numbers below
                out = render(msg, **{n: 3 for n in names}) if names else msg
            if any(f in out for f in FALLBACKS):
                bad[key] = out
    assert bad == {}
