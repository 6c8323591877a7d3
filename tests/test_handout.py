"""viz/handout.py and ui/handout.py, a lesson deck's handout as one PDF: a valid PDF with a title page and a page per
slide, the Korean text in it (the ToUnicode maps of its fonts hold the Hangul), the CJK font embedded as a TrueType
program (FontFile2 with glyf outlines, not CFF), user text never parsed as mathtext, the fallback without a CJK font;
every number a cell prints read back from the PDF's text and equal to the model's (0.999 is "1.00", never ".00"),
every label on the page; each slide's page shows its own view's figures (a tour step's, a decoder's masked
self-attention and cross-attention); and the deck page's button that makes it from the app's own runs."""

from __future__ import annotations

import io
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from ci_support import skip_or_fail

from viz import handout as hd
from viz.handout import HandoutSlide, attention_panel, cell_labels, handout_pdf, wrap
from viz.theme import number_text

SENTENCE = "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다"
TOKENS = ["<s>", "▁그", "▁동물은", "▁길을", "▁건너지", "▁않았다", "."]


def _slides() -> list[HandoutSlide]:
    rng = np.random.default_rng(0)
    return [
        HandoutSlide("쿼리, 키, 밸류", note="각 W는 d_model × d_k입니다. $\\frac{1}{2}$ <script>alert(1)</script>",
                     where="multilingual-e5-small · 레이어 3 · 헤드 1", sentence=SENTENCE,
                     panels=[attention_panel(rng.dirichlet(np.ones(7), size=7), TOKENS, TOKENS, xlabel="키",
                                             ylabel="쿼리", colorbar="어텐션 가중치")]),
        HandoutSlide("512 tokens", panels=[attention_panel(rng.dirichlet(np.ones(160), size=160),
                                                           [f"t{i}" for i in range(160)], [f"t{i}" for i in range(160)])]),
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
    return handout_pdf("Attention Is All You Need, 한 단계씩", ["슬라이드 3장"], _slides())


def test_a_valid_pdf_with_a_page_per_slide_and_a_title_page(pdf):
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert _pages(pdf) == 3 + 1
    assert len(pdf) < 2_000_000


def test_korean_text_and_an_embedded_truetype_cjk_font(pdf):
    if hd.cjk_font("가") is None:
        skip_or_fail("no CJK font installed (apt-get install fonts-noto-cjk)")
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


# ---- numbers: one formatter, read back from the PDF ----------------------------------------------------------------
def test_number_text_rounds_first_then_drops_the_leading_zero():
    cases = {0.0: ("0.00", ".00"), 0.005: ("0.01", ".01"), 0.004: ("0.00", ".00"), 0.42: ("0.42", ".42"),
             0.995: ("0.99", ".99"), 0.996: ("1.00", "1.00"), 0.999: ("1.00", "1.00"), 0.9995: ("1.00", "1.00"),
             1.0: ("1.00", "1.00"), 1.5: ("1.50", "1.50"), -0.25: ("-0.25", "-.25"), -0.0001: ("0.00", ".00")}
    for v, (full, short) in cases.items():
        assert number_text(v) == full, v
        assert number_text(v, short=True) == short, v
        assert abs(float(number_text(v, short=True)) - v) <= 0.005 + 1e-12  # what is printed is the value
    assert number_text(float("nan")) == number_text(float("inf")) == ""
    assert number_text(0.6, 0) == "1" and number_text(0.0, 0, short=True) == "0"


def _page_strings(pdf: bytes, page: int) -> list[str]:
    """Every string the PDF's page shows, one per text operator, in drawing order (pypdf with the fonts' ToUnicode)."""
    from pypdf import PdfReader

    out: list[str] = []
    PdfReader(io.BytesIO(pdf)).pages[page].extract_text(
        visitor_text=lambda text, *_: out.append(text.strip()) if text.strip() else None)
    return out


def _contains_run(strings: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(strings[i:i + n] == run for i in range(len(strings) - n + 1))


def test_cells_near_one_print_1_00_and_every_cell_reads_back():
    w = np.array([[0.9991, 0.0009, 0.0], [0.004, 0.995, 0.001], [0.25, 0.25, 0.5]])  # rows of a softmax
    pdf = handout_pdf("t", [], [HandoutSlide("s", panels=[attention_panel(w, list("abc"), list("abc"))])])
    strings = _page_strings(pdf, 1)
    expected = [text for _, _, text in cell_labels(w)]
    assert expected[0] == "1.00" and expected[4] == ".99"  # 0.9991 -> 1.00; 0.995 stored as 0.99499... -> .99
    assert _contains_run(strings, expected), strings
    assert ".00" not in strings[:1] and strings.count("1.00") >= 1


def _outside(fig) -> list[str]:
    """The texts of a figure that do not lie wholly on its page."""
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    bad = []
    for text in fig.findobj(lambda a: hasattr(a, "get_window_extent") and hasattr(a, "get_text")):
        if not text.get_visible() or not str(text.get_text()).strip():
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < page.x0 - 0.5 or box.y0 < page.y0 - 0.5 or box.x1 > page.x1 + 0.5 or box.y1 > page.y1 + 0.5:
            bad.append(text.get_text())
    return bad


@pytest.mark.parametrize("n_panels", [1, 2, 3, 4])
def test_every_label_lies_on_the_page(n_panels):
    """Korean axis titles ("쿼리", "키"), long tokens and colour bars stay on the page (they ran off it before)."""
    rng = np.random.default_rng(1)
    toks = ["▁그것은" * 3, "▁피곤했기", "<s>", "verylongtokenwithoutend" * 2, *"가나다라마바사"]
    panels = [attention_panel(rng.dirichlet(np.ones(len(toks)), size=len(toks)), toks, toks, title="제목 " * 12,
                              xlabel="키 (먼저 나온 위치)", ylabel="쿼리 (디코더 입력)", colorbar="어텐션 가중치")
              for _ in range(n_panels)]
    slide = HandoutSlide("제목", note="노트 " * 40, where="smollm2-135m · 레이어 18 · 헤드 6", panels=panels)
    plt = hd.pyplot()
    family = hd.cjk_font("제목키쿼리먼저나온위치디코더입력어텐션가중치그것은피곤했기가나다라마바사노트레이어헤드")
    with plt.rc_context({"font.family": ["DejaVu Sans", *([family] if family else [])]}):
        fig = hd._slide_page(plt, 1, 1, slide)
        try:
            assert _outside(fig) == []
        finally:
            plt.close(fig)


def test_smollm2_layer_18_head_6_prints_its_own_numbers():
    """The lecturer's case: a SmolLM2 head whose weights reach 0.999. The PDF's cells read back as the model's
    weights, each formatted by number_text (before the fix, 0.995-0.999 printed ".00")."""
    from ui.deckfile import Slide
    from ui.handout import handout_slide
    from ui.runs import get_trace

    text = "My cat sleeps on the warm mat"
    slide = Slide("explorer", {"model": "smollm2-135m", "text": text, "layer": "18", "head": "6"})
    hs = handout_slide(slide, "cpu", "ko")
    w = get_trace("smollm2-135m", "cpu", text).attention("decoder_self")[18, 6]
    (panel,) = hs.panels
    assert np.array_equal(panel.matrix, w)
    assert w.max() > 0.995  # the head really has cells near 1 (a sink on the first token)
    pdf = handout_pdf("SmolLM2", [], [hs])
    expected = [text for _, _, text in cell_labels(w)]
    assert _contains_run(_page_strings(pdf, 1), expected)
    assert all(abs(float(lbl) - w[i, j]) <= 0.005 for i, j, lbl in cell_labels(w))


# ---- each slide shows its own view ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def example_ko():
    from ui.deckfile import example
    from ui.handout import handout_slide

    deck, _ = example("ko")
    return deck, [handout_slide(s, "cpu", "ko") for s in deck.slides]


def test_each_example_slide_shows_its_own_figures(example_ko):
    from ui import runs

    deck, slides = example_ko
    kinds = [[(p.title, None if p.matrix is None else p.matrix.shape) for p in s.panels] for s in slides]
    assert all(s.panels and not s.missing for s in slides), [s.missing for s in slides]
    assert len({repr(k) for k in kinds}) == len(kinds)  # no two slides print the same figures
    q = deck.slides[2].query  # "쿼리, 키, 밸류": Step by step's Q, K, V tab
    steps = runs.attention_steps(q["model"], "cpu", q["text"], "encoder", 0, 0)
    for panel, key in zip(slides[2].panels, ("Q", "K", "V")):
        assert np.array_equal(panel.matrix, steps[key])
    assert slides[0].panels[0].table is not None  # the tour's step 1: the tokens
    trace = runs.get_trace(q["model"], "cpu", q["text"])
    assert [row[1] for row in slides[0].panels[0].table[1:]] == list(trace.source_tokens)
    # slide 10, "디코더: Masked 셀프 어텐션과 인코더-디코더 어텐션": the decoder's masked self-attention and the
    # cross-attention, never an encoder map
    dec_self, cross = slides[9].panels
    run = runs.decoding_run("cpu", q["text"], "copy", False, name="seq2seq-tiny")
    last = run.steps[-1]
    assert np.array_equal(dec_self.matrix, last.self_attention[-1].mean(0))
    assert dec_self.masked is not None and dec_self.masked[0, 1] and not dec_self.masked[1, 0]  # the triangle
    assert np.array_equal(cross.matrix, run.cross_matrix(len(run.steps))[-1].mean(0))
    assert list(cross.cols) == list(run.source_tokens)


def test_tour_steps_print_different_figures(example_ko):
    """Tour steps 1, 3, 7 and 13 printed one identical encoder map; each prints its step's figure now."""
    from ui.deckfile import Slide
    from ui.handout import handout_slide

    deck, _ = example_ko
    q = deck.slides[0].query
    got = {}
    for step in (1, 3, 4, 7, 12, 13, 14, 15):
        hs = handout_slide(Slide("tour", {**q, "step": str(step)}), "cpu", "ko")
        got[step] = hs.panels
        assert hs.panels and not hs.missing, (step, hs.missing)
    assert got[1][0].table is not None and got[15][0].table is not None  # tokens; what changed since 2017
    assert [p.matrix.shape for p in got[3]] == [(18, 384)] * 3  # X, the positions, X + PE
    assert len(got[4]) == 3 and got[7][0].vmax == 1.0  # Q, K, V; the Softmax weights
    assert got[12][0].masked is not None and got[13][0].masked is None  # masked self-attention; cross-attention
    assert got[14][0].bars is not None  # the output probabilities
    maps = [p.matrix for s in (3, 7, 12, 13) for p in got[s][:1]]
    assert not any(np.array_equal(a, b) for i, a in enumerate(maps) for b in maps[i + 1:] if a.shape == b.shape)


def test_the_deck_page_makes_the_handout_from_the_apps_weights(tmp_path, monkeypatch):
    from apptest_support import assert_ok
    from streamlit.testing.v1 import AppTest

    from ui import runs
    from ui.deck import HANDOUT
    from ui.handout import handout_slide
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
    # slide 7 (the explorer, Layer 3 · Head 1 on the flagship sentence): its map is the app's own weights
    q = deck.slides[6].query
    trace = runs.get_trace(q["model"], "cpu", q["text"])
    s = handout_slide(deck.slides[6], "cpu", "en")
    (panel,) = s.panels
    assert np.array_equal(panel.matrix, trace.attention("encoder")[3, 1])
    assert tuple(panel.rows) == tuple(trace.axis_tokens("encoder")[0]) and s.where == "minilm-l6 · Layer 3 · Head 1"
    strings = _page_strings(pdf, 7)
    assert _contains_run(strings, [text for _, _, text in cell_labels(panel.matrix)])
    assert set("Add & Norm Feed Forward") <= set(_unicode_in_cmaps(pdf))


def test_smollm2_tour_slides_print_the_tours_own_figures():
    """On a decoder-only rotary model the handout follows the tour (viz.tour.step_stages, decoder_source): step 3 is
    q and k before and after RoPE, step 12 its own masked self-attention, step 13 seq2seq-tiny's cross-attention
    (it has none), step 14 its own next token."""
    from ui import runs
    from ui.deckfile import Slide
    from ui.handout import handout_slide

    text = "My cat sleeps on the warm mat"
    q = {"model": "smollm2-135m", "text": text, "layer": "2", "head": "4"}
    got = {k: handout_slide(Slide("tour", {**q, "step": str(k)}), "cpu", "en") for k in (3, 12, 13, 14)}
    steps = runs.attention_steps("smollm2-135m", "cpu", text, "decoder_self", 2, 4)
    assert [p.matrix.shape for p in got[3].panels] == [steps[k].shape for k in ("Q_proj", "K_proj", "Q", "K")]
    for panel, key in zip(got[3].panels, ("Q_proj", "K_proj", "Q", "K")):
        assert np.array_equal(panel.matrix, steps[key])
    masked, weights = got[12].panels
    assert np.array_equal(weights.matrix, steps["weights"]) and weights.masked[0, 1] and not weights.masked[1, 0]
    assert got[13].panels[0].title.startswith("seq2seq-tiny")
    trace = runs.get_trace("smollm2-135m", "cpu", text)
    (bars,) = got[14].panels
    assert list(bars.bars) == [float(p) for p in trace.meta["next_probs"]]
