"""viz/handout.py, a lesson deck's handout as one PDF: a valid PDF with a title page and a page per slide, the Korean
text in it (the ToUnicode maps of its fonts hold the Hangul), the CJK font embedded as a TrueType program
(FontFile2 with glyf outlines, not CFF), user text never parsed as mathtext, the fallback without a CJK font; and the
deck page's button that makes it from the app's own attention weights."""

from __future__ import annotations

import io
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from viz import handout as hd
from viz.handout import HandoutSlide, handout_pdf, wrap

SENTENCE = "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다"
TOKENS = ["<s>", "▁그", "▁동물은", "▁길을", "▁건너지", "▁않았다", "."]


def _slides() -> list[HandoutSlide]:
    rng = np.random.default_rng(0)
    return [
        HandoutSlide("쿼리, 키, 밸류", note="각 W는 d_model × d_k입니다. $\\frac{1}{2}$ <script>alert(1)</script>",
                     where="multilingual-e5-small · 레이어 3 · 헤드 1", sentence=SENTENCE,
                     weights=rng.dirichlet(np.ones(7), size=7), rows=TOKENS, cols=TOKENS),
        HandoutSlide("512 tokens", weights=rng.dirichlet(np.ones(160), size=160),
                     rows=[f"t{i}" for i in range(160)], cols=[f"t{i}" for i in range(160)]),
        HandoutSlide("출력 확률", note="맵이 없는 슬라이드", missing="어텐션 맵 없음: 이 서버에는 모델 x 항목이 없습니다."),
    ]


def _streams(pdf: bytes) -> list[bytes]:
    out = []
    for m in re.finditer(rb"<<(.*?)>>\s*stream\r?\n", pdf, re.S):
        end = pdf.index(b"endstream", m.end())
        data = pdf[m.end():end]
        if b"FlateDecode" in m.group(1):
            try:
                data = zlib.decompress(data)
            except zlib.error:
                continue
        out.append((m.group(1), data))
    return out


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))


def _unicode_in_cmaps(pdf: bytes) -> str:
    """Every character the fonts' ToUnicode maps name (what a reader copies or searches)."""
    chars = []
    for _, data in _streams(pdf):
        if b"beginbfchar" in data or b"beginbfrange" in data:
            for hexes in re.findall(rb"<([0-9A-Fa-f]{4,})>", data):
                if len(hexes) == 4:
                    chars.append(chr(int(hexes, 16)))
    return "".join(chars)


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return handout_pdf("Attention Is All You Need, 한 단계씩", ["슬라이드 3장"], _slides(), xlabel="키", ylabel="쿼리",
                       colorbar="어텐션 가중치")


def test_a_valid_pdf_with_a_page_per_slide_and_a_title_page(pdf):
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert _pages(pdf) == 3 + 1
    assert len(pdf) < 2_000_000


def test_korean_text_and_an_embedded_truetype_cjk_font(pdf):
    if hd.cjk_font("가") is None:
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    from fontTools.ttLib import TTFont

    fonts = set(re.findall(rb"/BaseFont\s*/([A-Za-z0-9+\-]+)", pdf))
    assert any(b"NotoSansCJK" in f for f in fonts), fonts
    assert b"/FontFile2" in pdf and b"/FontFile3" not in pdf  # TrueType programs only, each embedded
    programs = [TTFont(io.BytesIO(data)) for head, data in _streams(pdf) if b"/Length1" in head]
    cjk = [f for f in programs if f["cmap"].getBestCmap() and ord("동") in f["cmap"].getBestCmap()]
    assert cjk, "no embedded font maps 동"
    assert all("glyf" in f and "CFF " not in f for f in programs)  # TrueType outlines, as FontFile2 requires
    text = _unicode_in_cmaps(pdf)
    for word in ("동물은", "쿼리", "어텐션", "밸류", "단계씩"):
        assert set(word) <= set(text), word


def test_user_text_is_never_mathtext(pdf):
    assert "$" in _unicode_in_cmaps(pdf) and "\\" in _unicode_in_cmaps(pdf)  # the note's "$\\frac..." as typed


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # Hangul as boxes: what this test asks for
def test_without_a_cjk_font_the_handout_is_still_made(monkeypatch):
    monkeypatch.setattr(hd, "_cjk_file", lambda: None)
    hd._subset_family.cache_clear()
    try:
        pdf = handout_pdf("한국어", [], _slides()[:1])
    finally:
        hd._subset_family.cache_clear()
    assert pdf.startswith(b"%PDF-") and _pages(pdf) == 2
    assert b"NotoSansCJK" not in pdf and b"DejaVuSans" in pdf


def test_wrap_counts_hangul_as_two_columns():
    assert wrap("가나다 라마바", 6) == ["가나다", "라마바"]
    assert wrap("abc def", 7) == ["abc def"]
    assert wrap("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert wrap("one\ntwo", 20) == ["one", "two"]
    assert wrap("a b c d e f", 3, max_lines=2) == ["a b", "c …"]
    assert wrap("tab\x00here", 20) == ["tab\ufffdhere"]


def test_the_deck_page_makes_the_handout_from_the_apps_weights(tmp_path, monkeypatch):
    from apptest_support import assert_ok
    from streamlit.testing.v1 import AppTest

    from ui import runs
    from ui.deck import HANDOUT, handout_slide
    from ui.pages import page_file

    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=300)
    at.query_params["lang"] = "en"
    at.run()
    at.switch_page(page_file("deck")).run()
    at.button(key="deck_example").click().run()
    deck = at.session_state["_deck"]
    at.button(key="deck_handout_make").click().run()
    assert_ok(at)
    button = at.download_button(key="deck_handout")
    assert button.proto.label.startswith("Download the handout (PDF")
    pdf = at.session_state[HANDOUT][1]
    assert pdf.startswith(b"%PDF-") and _pages(pdf) == len(deck) + 1
    # slide 6 (Layer 3 · Head 1 on the flagship sentence): its map is the app's own weights for that head
    q = deck.slides[5].query
    trace = runs.get_trace(q["model"], "cpu", q["text"])
    s = handout_slide(deck.slides[5], "cpu", "en")
    assert np.array_equal(s.weights, trace.attention("encoder")[3, 1])
    assert s.rows == trace.axis_tokens("encoder")[0] and s.where == "minilm-l6 · Layer 3 · Head 1"
    assert set("Add & Norm Feed Forward") <= set(_unicode_in_cmaps(pdf))
