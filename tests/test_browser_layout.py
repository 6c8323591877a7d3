"""Projector (1600 x 1000, lecture mode) and phone (390 x 844) layout in headless Chromium, in Korean (issue 34):
on a phone every key keeps its label, heatmaps scroll sideways instead of shrinking, plotly's toolbar is hidden,
the rollout option is not cut, the all-heads title clears the heads' numbers, the token view's title clears its
legend, Streamlit's "No results" is in Korean; on a projector the all-heads mosaic has no blank band, the
translator's titles lie inside their figures, the next-token chart takes lecture sizes and shows text, not bytes,
and table headers break between words."""

from __future__ import annotations

import contextlib
from urllib.parse import urlencode

import pytest
from browser_support import shared_browser, wait_for_app, warm_page
from test_browser import _errors, app_url, require_browser  # noqa: F401 - fixtures

from model.examples import ALIGNMENT_TEXT
from viz.theme import FONTS

pytestmark = pytest.mark.browser

PHONE, PROJECTOR = (390, 844), (1600, 1000)
EN = "The animal didn't cross the street because it was too tired"
CHART = '[data-testid="stPlotlyChart"]'


@pytest.fixture(scope="module")
def browser():
    require_browser()
    return shared_browser()  # this process's one Chromium


@contextlib.contextmanager
def opened(base: str, path: str, size: tuple[int, int], tab: int | None = None, **query):
    """The module's page at `size` (warm_page) on `path` with `query` (Korean, lecture mode), its charts drawn, `tab`
    opened."""
    page = warm_page(*size)
    page.goto(f"{base}/{path}?{urlencode({'lang': 'ko', 'lecture': '1', **query})}", wait_until="domcontentloaded")
    wait_for_app(page)
    if tab is not None:
        page.locator('[data-testid="stMain"] [role="tab"]').nth(tab).evaluate("e => e.click()")
        page.wait_for_timeout(500)
        wait_for_app(page)
    page.wait_for_function(f"""() => {{ const c = [...document.querySelectorAll('{CHART}')];
        return c.length > 0 && c.every(x => x.querySelector('.main-svg')); }}""", timeout=120_000)
    page.wait_for_timeout(800)
    assert not _errors(page), _errors(page)
    yield page


def boxes(page, selector: str) -> list[dict]:
    return page.locator(selector).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, right: r.right,"
        " bottom: r.bottom, text: e.textContent}; })")


def test_phone_heatmap_keeps_every_key_label_and_scrolls_sideways(browser, app_url):  # noqa: F811
    with opened(app_url, "", PHONE, text=EN) as page:
        keys = [b["text"] for b in boxes(page, f"{CHART} .xtick text")]
        tokens = page.evaluate("() => document.querySelectorAll('" + CHART + " .ytick text').length")
        assert len(keys) == tokens == 15 and "tired" in keys and "animal" in keys  # none dropped
        frame = page.locator('[data-testid="stFullScreenFrame"]:has(g.hm)').first
        assert frame.evaluate("e => e.getBoundingClientRect().width") >= 600  # drawn wide, not squeezed into 358 px
        assert frame.evaluate("e => e.parentElement.scrollWidth > e.parentElement.clientWidth")  # it scrolls
        assert page.evaluate(f"() => getComputedStyle(document.querySelector('{CHART} .modebar-container')).display"
                             ) == "none"  # no toolbar over the title
        options = [o for o in boxes(page, '[data-testid="stButtonGroup"] button') if o["text"].strip()]
        assert [o["text"] for o in options] == ["헤드별", "헤드 평균", "레이어 전체 롤아웃"]
        assert len(options) == 3 and max(o["right"] for o in options) <= PHONE[0]  # "레이어 전체 롤아웃" is whole


def test_phone_all_heads_title_clears_the_heads(browser, app_url):  # noqa: F811
    with opened(app_url, "", PHONE, tab=1, text=EN) as page:
        (title,) = boxes(page, f".st-key-ex_grid {CHART} .gtitle")
        heads = boxes(page, f".st-key-ex_grid {CHART} .xtick text")
        assert [h["text"] for h in heads] == [str(h) for h in range(12)]
        assert title["bottom"] <= min(h["y"] for h in heads)  # the title above the heads' numbers
        assert max(h["right"] for h in heads) - min(h["x"] for h in heads) > 400  # not squeezed into the phone


def test_phone_token_view_title_clears_its_legend(browser, app_url):  # noqa: F811
    with opened(app_url, "", PHONE, tab=2, text="그 동물은 너무 피곤해서 길을 건너지 않았다",
                model="smollm2-135m") as page:
        view = f".st-key-ex_token_chart {CHART}"
        chart = boxes(page, view)[0]
        title = boxes(page, f"{view} .gtitle")[0]
        legend = boxes(page, f"{view} .legend")[0]
        assert title["y"] >= chart["y"] and title["right"] <= chart["right"] + 1  # whole, in two lines
        assert title["bottom"] <= legend["y"]  # the legend under the title, never over it
        assert "이(가)" not in title["text"] and "(가)" not in title["text"]


def test_korean_no_results_in_a_multiselect(browser, app_url):  # noqa: F811
    with opened(app_url, "positional", PROJECTOR) as page:
        page.locator('[data-testid="stMultiSelect"]').first.click()
        page.keyboard.type("zzz")
        page.wait_for_timeout(500)
        span = '[data-testid="stMultiSelectDropdown"] [role="listbox"][data-empty="true"] [role="option"] span'
        page.wait_for_selector(span, timeout=10_000)
        said = page.evaluate(f"""() => {{ const s = document.querySelector('{span}');
            return [getComputedStyle(s).fontSize, getComputedStyle(s, '::after').content]; }}""")
        assert said == ["0px", '"일치하는 항목이 없습니다"']


def test_projector_mosaic_has_no_blank_band(browser, app_url):  # noqa: F811
    with opened(app_url, "", PROJECTOR, tab=1, text=EN, model="smollm2-135m") as page:
        grid = f".st-key-ex_grid {CHART}"
        chart = boxes(page, grid)[0]
        heads = boxes(page, f"{grid} .xtick text")
        plot = boxes(page, f"{grid} g.hm image")[0]
        assert 0 <= plot["y"] - max(h["bottom"] for h in heads) < 30  # was ~130 px on SmolLM2's 30 layers
        assert plot["right"] - plot["x"] > 0.85 * (chart["right"] - chart["x"])  # the width, not a narrow column


def test_projector_translator_titles_lie_inside_their_figures(browser, app_url):  # noqa: F811
    for lang in ("en", "ko"):
        with opened(app_url, "seq2seq", PROJECTOR, text=ALIGNMENT_TEXT, model="bergamot-en-pt",
                    lang=lang) as page:
            page.locator('[data-testid="stSlider"] input[type="range"]').first.focus()
            for _ in range(6):  # step 7: "▁Económico" looks at the source (→ emits "▁Europeu"), the longest title
                page.keyboard.press("ArrowRight")
            page.wait_for_timeout(500)
            wait_for_app(page)
            charts = page.locator(CHART)
            assert charts.count() >= 5
            for i in range(charts.count()):
                chart = charts.nth(i)
                chart.scroll_into_view_if_needed()
                box = chart.bounding_box()
                title = chart.locator(".gtitle")
                if title.count():
                    t = title.first.bounding_box()
                    assert t["x"] >= box["x"] - 1 and t["x"] + t["width"] <= box["x"] + box["width"] + 1, (lang, i)
                    assert t["y"] >= box["y"] - 1, (lang, i)


def test_projector_next_token_chart_is_lecture_sized_text(browser, app_url):  # noqa: F811
    with opened(app_url, "", PROJECTOR, text="def f(x):", model="smollm2-135m") as page:
        chart = page.locator('.st-key-ex_next [data-testid="stPlotlyChart"]')
        chart.scroll_into_view_if_needed()
        labels = chart.locator(".ytick text").evaluate_all(
            "els => els.map(e => [e.textContent, parseFloat(getComputedStyle(e).fontSize)])")
        assert labels and all(size == FONTS[True]["tick"] for _, size in labels)
        assert "↵␣␣␣\u2009#1" in [x for x, _ in labels] and not any("Ċ" in x or "Ġ" in x for x, _ in labels)


def test_projector_table_headers_break_between_words(browser, app_url):  # noqa: F811
    ctx = browser.new_context(viewport={"width": PROJECTOR[0], "height": PROJECTOR[1]})
    page = ctx.new_page()
    try:
        page.goto(f"{app_url}/?{urlencode({'lang': 'ko', 'lecture': '1', 'text': EN})}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.locator('[data-testid="stMain"] [role="tab"]').nth(3).evaluate("e => e.click()")
        page.wait_for_selector('[data-testid="stTable"] th', timeout=60_000)
        heads = page.locator('[data-testid="stTable"] th').evaluate_all(
            "els => els.map(e => [e.innerText, getComputedStyle(e).wordBreak])")
        assert ["레이어", "keep-all"] in heads and all(wb == "keep-all" for _, wb in heads)
        # the one-word header "레이어" stays on one line: its text's boxes all on one line
        lines = page.evaluate("""() => { const th = [...document.querySelectorAll('[data-testid=stTable] th')]
            .find(e => e.innerText === '레이어'); const w = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
            const tops = new Set(); for (let n = w.nextNode(); n; n = w.nextNode()) { const r = document.createRange();
            r.selectNodeContents(n); [...r.getClientRects()].forEach(x => tops.add(Math.round(x.top))); }
            return tops.size; }""")
        assert lines == 1
    finally:
        ctx.close()
