"""The Head lab's cause tabs in a real browser (headless Chromium) on SmolLM2: the Generation and the Attribution &
patching tabs in lecture mode at 1600 x 1000 and on a phone (390 x 844), English and Korean, drawn without an error
or a page wider than the screen; the patching grids start on a click, show a progress bar with a Stop button, and
Stop ends the run (the button to compute comes back, no grid is drawn); a click on the patching grid picks the head
(the sidebar's layer and head). Screenshots go to $HEADLIGHT_SHOTS (default: the test's tmp dir); with
HEADLIGHT_SCREENSHOTS=1 the README's three (assets/screenshots/generation.png, attribution.png, patching.png)
are written too."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
from browser_support import chromium_page, wait_for_app

from i18n import t

pytestmark = [pytest.mark.browser, pytest.mark.slow]
BASE = {"model": "smollm2-135m", "text": "The capital of France is", "lecture": "1"}
README_SHOTS = Path(__file__).resolve().parents[1] / "assets" / "screenshots"


def readme_shot(page, name: str, anchor: str, exact: bool = False) -> None:
    """With HEADLIGHT_SCREENSHOTS=1: the viewport with `anchor`'s text near its top, as assets/screenshots/<name>."""
    if os.environ.get("HEADLIGHT_SCREENSHOTS") != "1":
        return
    page.get_by_text(anchor, exact=exact).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(README_SHOTS / name))


@pytest.fixture(scope="module")
def app_url(app_server):
    """The worker's shared app (tests/conftest.py app_server)."""
    return app_server


def shots(tmp_path) -> Path:
    out = Path(os.environ.get("HEADLIGHT_SHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def settle(page, charts: int) -> None:
    """Until the run has drawn at least `charts` figures, no spinner is left and Streamlit has finished."""
    page.wait_for_function("""n => document.querySelectorAll('.js-plotly-plot').length >= n
                              && !document.querySelector('[data-testid="stSpinner"]')""", arg=charts,
                           timeout=600_000, polling=250)
    wait_for_app(page, 600_000)
    page.wait_for_timeout(500)  # plotly's responsive resize


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("size", [(1600, 1000), (390, 844)], ids=["projector", "phone"])
@pytest.mark.parametrize("tab,charts", [("generation", 9), ("cause", 4)])
def test_the_tabs_draw_in_both_languages_and_sizes(app_url, tmp_path, lang, size, tab, charts):
    label = t(f"heads.tab.{tab}", lang)
    with chromium_page(*size) as page:
        page.goto(f"{app_url}/heads?" + urlencode({**BASE, "lang": lang, "hl_tab": label}), timeout=300_000)
        settle(page, charts)
        main = page.inner_text('[data-testid="stMain"]')
        assert "Traceback" not in main and "Error" not in main
        assert t("cause.gen.intro" if tab == "generation" else "cause.intro", lang)[:30] in main
        assert page.locator(".js-plotly-plot").count() >= charts
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= size[0] + 1, f"the page is {width} px wide on a {size[0]} px screen"
        page.screenshot(path=str(shots(tmp_path) / f"{tab}-{lang}-{size[0]}.png"))
        if (tab, lang, size[0]) == ("generation", "en", 1600):
            readme_shot(page, "generation.png", t("cause.gen.step_line", "en", k=0, q=4, query="Ġis",
                                                  token="ĠParis", p=0.7725, m=5)[:20])


def test_patching_stops_on_stop_and_a_click_picks_the_head(app_url, tmp_path):
    label = t("heads.tab.cause", "en")
    run = t("cause.patch.run", "en", n=270)
    with chromium_page(1600, 1000) as page:
        page.goto(f"{app_url}/heads?" + urlencode({**BASE, "hl_tab": label}), timeout=300_000)
        button = page.get_by_role("button", name=run)
        button.wait_for(timeout=600_000)
        button.scroll_into_view_if_needed()
        button.click()
        stop = page.get_by_role("button", name=t("cause.patch.stop", "en"))
        stop.wait_for(timeout=120_000)
        page.get_by_text(t("cause.progress.patching", "en", name="smollm2-135m")).wait_for(timeout=120_000)
        page.screenshot(path=str(shots(tmp_path) / "patching-running.png"))
        stop.click()
        page.get_by_role("button", name=run).wait_for(timeout=300_000)  # back to the button: nothing was kept
        wait_for_app(page, 300_000)
        assert not page.get_by_text(t("cause.patch.heads_title", "en")).count()
        page.get_by_role("button", name=run).click()  # this time to the end
        title = page.get_by_text(t("cause.patch.heads_title", "en"))
        title.wait_for(timeout=900_000)
        wait_for_app(page, 600_000)
        readme_shot(page, "attribution.png", t("cause.dla.head", "en"), exact=True)
        readme_shot(page, "patching.png", t("cause.patch.head", "en"), exact=True)
        grid = next(p for p in page.locator(".js-plotly-plot").all() if t("cause.patch.heads_title", "en") in
                    p.inner_text())
        grid.scroll_into_view_if_needed()
        page.mouse.wheel(0, 300)
        page.wait_for_timeout(1000)
        box = grid.locator(".nsewdrag").first.bounding_box()
        # the grid's plot area holds 30 layers along x and 9 heads down y; aim at the middle of a cell
        page.mouse.click(box["x"] + box["width"] * 15.5 / 30, box["y"] + box["height"] * 4.5 / 9)
        page.wait_for_timeout(2000)
        wait_for_app(page, 300_000)
        page.wait_for_timeout(2000)
        caption = page.locator('[data-testid="stCaptionContainer"]').first.inner_text()
        assert "Layer 0 · Head 0" not in caption and "Head 4" in caption, caption
        page.screenshot(path=str(shots(tmp_path) / "patching-picked.png"))
