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
    ("seq2seq-tiny", ""), ("paper-base", ""), ("MiniLM-L6", "ㄱ"), ("multilingual-e5-small", "ㄹ"), ("Python", "ㄴ"),
    ("the cat", "ㅅ"), ("swing", "ㅇ"), ("back", "ㄱ"), ("box", ""), ("Softmax", ""), ("Headlight", ""), ("“그것은”", "ㅇ"), ("`it`)", "ㅅ"), ("", None),
    ("!!", None),
])
def test_final_sound(value, end):
    assert final_sound(value) == end


@pytest.mark.parametrize("value, forms", [
    # value -> its 은/는, 이/가, 을/를, 와/과, 으로/로
    ("동물", "은 이 을 과 로"), ("학교", "는 가 를 와 로"), ("집", "은 이 을 과 으로"), ("나무", "는 가 를 와 로"), ("길", "은 이 을 과 로"), ("헤드 1", "은 이 을 과 로"),
    ("헤드 3", "은 이 을 과 으로"), ("헤드 2", "는 가 를 와 로"), ("seq2seq-tiny", "는 가 를 와 로"),
    ("multilingual-e5-small", "은 이 을 과 로"), ("MiniLM-L6", "은 이 을 과 으로"), ("10", "은 이 을 과 으로"),
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
