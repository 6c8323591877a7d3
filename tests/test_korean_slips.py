"""Issue 26: the Korean slips a lecturer found in front of a class, each pinned by the text a user would see, and
the root causes behind them: particles chosen on the raw text (never on its markdown or HTML escaping), tokens
quoted before a particle, one name for a head, one display name for an activation, no English in the catalogue's
Korean where a Korean word exists, and the page's document language."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from analysis import crosslingual as xl
from i18n import Shown, activation_name, error_message, head_name, t
from i18n.catalog import code_span, render
from model.errors import InputError
from ui.view import md_escape
from viz.steps import build_stages
from viz.theme import esc

ROOT = Path(__file__).resolve().parents[1]
HANGUL = "\uac00-\ud7a3"


def _ko() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted((ROOT / "i18n").glob("ko*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8")))
    return out


# ---- the slips, as seen ----------------------------------------------------------------------------------------
def test_task_takes_euro():
    note = t("tour.dec.note.encoder", "ko", model="minilm-l6", fallback="seq2seq-tiny")
    assert "고른 작업으로 문장을" in note and "작업로" not in note


def test_token_title_particle_follows_the_last_syllable():
    assert t("ex.token.title", "ko", model="m", layer=2, token="▁그녀").endswith("“▁그녀”가 바라보는 곳")
    assert t("ex.token.title", "ko", model="m", layer=2, token="동물은").endswith("“동물은”이 바라보는 곳")
    assert t("ex.token.title", "ko", model="m", layer=2, token="[CLS]").endswith("“[CLS]”가 바라보는 곳")


def test_particle_is_chosen_on_the_raw_token_not_its_html_escape():
    title = t("tour.fig.cross_row", "ko", step=1, token=esc("<bos>"), out=esc("i"))
    assert title.startswith("1단계: 토큰 “&lt;bos&gt;”가 소스를 봅니다"), title
    row = t("s2s.fig.row", "ko", step=1, token=esc("<bos>"), out=esc("<eos>"))
    assert "“&lt;bos&gt;”가" in row and "&lt;eos&gt;" in row


def test_quiz_quotes_a_token_that_is_itself_a_particle():
    q = t("quiz.attend.q", "ko", token=md_escape("▁그녀"), where=head_name(2, 6, "ko"))
    assert q == "레이어 2 · 헤드 6에서 토큰 **“▁그녀”는** 어느 토큰에 가장 많이 어텐션할까요?"
    assert "“않”을" in t("quiz.next.q", "ko", step=3, last=md_escape("않"))
    assert t("tour.output.emits", "ko", token=md_escape("않")) == "디코더는 이 단계에서 토큰 `않`을 내보냅니다."


def test_eos_in_a_code_span_shows_no_backslashes():
    shown = t("tour.output.emits", "ko", token=md_escape("<eos>"))
    assert shown == "디코더는 이 단계에서 토큰 `<eos>`를 내보냅니다."
    assert "\\" not in shown and "\\" not in t("tour.output.emits", "en", token=md_escape("<eos>"))
    assert code_span("a`b") == "``a`b``"  # a backtick inside: a longer fence, still literal


def test_quiz_lines():
    assert t("quiz.pick_first", "ko") == "먼저 답을 고른 뒤 ‘공개’를 누르세요."
    assert t("quiz.score", "ko", asked=1, right=1) == "이번 세션 퀴즈 점수: 1문제 중 1문제 정답"
    detail = t("quiz.attend.detail", "ko", guess=md_escape("는"), pos=13, value=0.5, rank=1, n=14, best=0.5)
    assert "“는”(위치 13)" in detail and "13: 는:" not in detail and "::" not in detail and detail.count(":") == 0


def test_seq2seq_captions():
    assert "정답 타깃 전체를 넣어" in t("s2s.figures_caption", "ko")
    caption = t("s2s.caption", "ko", model="seq2seq-tiny")
    assert "인코더·디코더 각 2층, 헤드 4개" in caption and "2 + 2개" not in caption


def test_shown_keeps_the_raw_text_for_the_particle():
    assert md_escape("<eos>") == "\\<eos\\>" and md_escape("<eos>").raw == "<eos>"
    assert esc("<bos>") == "&lt;bos&gt;" and esc("<bos>").raw == "<bos>"
    assert render("{x:|이}", x=Shown("&lt;begin&gt;", "<begin>")) == "&lt;begin&gt;이"  # "gt" would have said 가
    assert render("{x:|이}", x="&lt;begin&gt;") == "&lt;begin&gt;가"  # what the escaped text alone says


# ---- English left in the Korean interface ------------------------------------------------------------------------
def test_mask_formula_and_shapes_in_korean():
    n = 3
    steps = {k: np.ones((n, 2)) for k in "QKV"}
    steps.update(X=np.ones((n, 4)), W_Q=np.ones((4, 2)), W_K=np.ones((4, 2)), W_V=np.ones((4, 2)),
                 scores=np.ones((n, n)), scaled=np.ones((n, n)), mask=np.tril(np.ones((n, n))),
                 weights=np.ones((n, n)) / n, Z=np.ones((n, 2)), Z_all=np.ones((n, 4)), W_O=np.ones((4, 4)),
                 output=np.ones((n, 4)), bias_QKV=np.array(True), bias_O=np.array(True))
    stages = {s.key: s for s in build_stages(steps, list("abc"), list("abc"), head=0, n_heads=2, lang="ko")}
    assert stages["mask"].shape == "마스크: 3 × 3" and stages["masked"].shape == "마스킹한 점수: 3 × 3"
    assert "어텐션 가능" in stages["mask"].latex and "막힘" in stages["mask"].latex
    for s in stages.values():
        assert not re.search(r"may attend|blocked|\\text\{mask\}", s.latex), s.latex
    en = {s.key: s for s in build_stages(steps, list("abc"), list("abc"), head=0, n_heads=2, lang="en")}
    assert en["mask"].shape == "mask: 3 × 3" and "may attend" in en["mask"].latex


def test_context_vector_and_activations():
    assert "context vector" not in t("tour.attend.body", "ko") and "문맥 벡터" in t("tour.attend.body", "ko")
    assert [activation_name(a) for a in ("relu", "gelu", "silu", "swish", "gelu_new")] == [
        "ReLU", "GELU", "SiLU/Swish", "SiLU/Swish", "GELU (tanh)"]
    assert activation_name("silu", gated=True) == "SwiGLU" and activation_name("gelu", gated=True) == "GeGLU"
    assert not any("RELU" in v for v in _ko().values())


def test_one_name_for_a_head():
    assert head_name(2, 6, "ko") == "레이어 2 · 헤드 6" and head_name(2, 6, "en") == "Layer 2 · Head 6"
    assert head_name(2, 6, "ko", compact=True) == "L2·H6"
    assert head_name(1, 2, "ko", block="cross") == "인코더-디코더 어텐션 · 레이어 1 · 헤드 2"
    from ui.heads import head_option_label
    from ui.widgets import layer_head

    assert head_option_label("2.6", "ko") == "레이어 2 · 헤드 6" == layer_head(2, 6, "ko")
    assert head_option_label("decoder_self:1.2", "ko") == "디코더 셀프 어텐션 · 레이어 1 · 헤드 2"


def test_hover_hints_say_tap_too():
    for key in ("ex.one_head.caption", "heads.note.flow"):
        assert "탭하면" in t(key, "ko") and "tap" in t(key, "en")
    assert not any(re.search("마우스를 올리면", v) for v in _ko().values())


def test_crosslingual_errors_are_korean():
    exc = InputError("The target word 'animal' is not a token or word of sentence A.", key="not_in_sentence",
                     what="target word", spec="'animal'", sentence="A", tokens="그, 동물은")
    ko = error_message(exc, "ko")
    assert ko.startswith("타깃 단어 'animal'은 문장 A의 토큰이나 단어가 아닙니다"), ko
    assert "target" not in ko


def test_crosslingual_names_the_sentence_not_its_text():
    from model import load_model

    model = load_model("minilm-l6")
    with pytest.raises(InputError) as err:
        xl.side(model, "the animal was tired", "it", "animal", label="B")
    assert err.value.params["sentence"] == "B" and err.value.params["what"] == "query word"
    assert error_message(err.value, "ko").startswith("쿼리 단어 'it'은 문장 B의")


# ---- the catalogue as a whole ----------------------------------------------------------------------------------
JONG = lambda c: (ord(c) - 0xAC00) % 28  # noqa: E731 - final consonant index, 0 = none, 8 = ㄹ
WORDS_ENDING_IN_RO = ("경로", "통로", "진로", "항로", "선로", "수로")  # nouns, not a particle after a noun


def wrong_literal_particles(text: str) -> list[str]:
    """Literal 로 / 으로 / 를 / 와 after a Hangul word that needs the other form ("작업로", "나무으로", "것를")."""
    bad = []
    for m in re.finditer(rf"([{HANGUL}])(으로|로|를|와)(?=[\s.,)(:;!?·”’'\"/]|$)", text):
        c, p = m.groups()
        j = JONG(c)
        if text[m.start():m.end()] in WORDS_ENDING_IN_RO:
            continue
        if (p == "로" and j not in (0, 8)) or (p == "으로" and j in (0, 8)) or (p in ("를", "와") and j):
            bad.append(text[max(0, m.start() - 6):m.end()])
    return bad


def test_literal_particles_after_korean_words():
    assert wrong_literal_particles("고른 작업로 문장을") == ["고른 작업로"]
    assert wrong_literal_particles("정답 타깃 전체를 넣어 길로 집으로 나무로 경로 `x`") == []
    bad = {k: wrong_literal_particles(v) for k, v in _ko().items() if wrong_literal_particles(v)}
    assert bad == {}


TOKEN_FIELDS = ("token", "guess", "last", "text", "out")
NOT_TOKEN_TEXT = {"error.token_outside": "a token's number", "pe.learned_caption": "the last position's number",
                  "quiz.prev.detail": "a head's name (헤드 3)"}


def test_a_token_before_a_particle_is_quoted():
    """A token can itself be a particle or a syllable ("는", "않"): fused with a particle it reads as a sentence.
    Wherever a token placeholder takes a particle, the catalogue quotes it ("{token:“”|는}") or marks it as code."""
    bad = {}
    for key, value in _ko().items():
        for m in re.finditer(r"\{(\w+):([^{}|]*)\|[^{}]*\}", value):
            if key not in NOT_TOKEN_TEXT and m.group(1) in TOKEN_FIELDS and m.group(2) not in ("“”", "‘’", '""', "``"):
                bad[key] = value
    assert bad == {}

