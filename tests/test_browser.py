"""The app in a real browser: `streamlit run app.py` on 127.0.0.1 and Debian's headless Chromium.

Opens a link with `text`, `layer` and `head` set and checks the detailed heatmap and the selected head are
shown; visits every page and saves a screenshot of each (to assets/screenshots/ when HEADLIGHT_SCREENSHOTS=1,
else to the test's tmp dir). In CI (CI=true) a missing browser fails the test instead of skipping it."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
from browser_support import ROOT, browser_available, chromium_page, serve_app, wait_for_app

pytestmark = pytest.mark.browser

PAGES = [("", "explorer"), ("positional", "positional"), ("masks", "masks"), ("steps", "steps"),
         ("seq2seq", "seq2seq")]


@pytest.fixture(scope="module")
def app_url():
    reason = browser_available()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser test cannot run in CI: {reason}")
        pytest.skip(reason)
    with serve_app() as base:
        yield base


@pytest.fixture(scope="module")
def shot_dir(tmp_path_factory) -> Path:
    if os.environ.get("HEADLIGHT_SCREENSHOTS") == "1":
        d = ROOT / "assets" / "screenshots"
        d.mkdir(parents=True, exist_ok=True)
        return d
    return tmp_path_factory.mktemp("screenshots")


def _errors(page) -> list[str]:
    return [t for t in page.locator('[data-testid="stException"]').all_inner_texts()]


def test_link_opens_exact_view(app_url, shot_dir):
    query = urlencode({"text": "The animal didn't cross the street because it was tired", "layer": 2, "head": 5})
    with chromium_page() as page:
        console_errors: list[str] = []
        page.on("pageerror", lambda e: console_errors.append(str(e)))
        page.goto(f"{app_url}/?{query}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=60_000)
        main = page.locator('[data-testid="stMain"]')
        assert main.get_by_text("Layer 2 · Head 5").first.is_visible()
        # the heatmap has the sentence's tokens on its axes
        svg_text = " ".join(page.locator('[data-testid="stPlotlyChart"] .xtick text').evaluate_all(
            "els => els.map(e => e.textContent)"))
        assert "animal" in svg_text and "tired" in svg_text
        assert not _errors(page), _errors(page)
        assert not console_errors, console_errors
        page.screenshot(path=str(shot_dir / "explorer.png"), full_page=False)
        # the URL still carries the view (mirrored state)
        assert "layer=2" in page.url and "head=5" in page.url


@pytest.mark.parametrize("path,name", PAGES[1:])
def test_every_page_renders(app_url, shot_dir, path, name):
    query = urlencode({"text": "The animal didn't cross the street because it was tired"})
    with chromium_page() as page:
        page.goto(f"{app_url}/{path}?{query}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg, [data-testid="stImage"] img',
                               timeout=60_000)
        assert not _errors(page), _errors(page)
        page.screenshot(path=str(shot_dir / f"{name}.png"), full_page=False)


def test_script_in_text_is_not_executed(app_url):
    payload = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    with chromium_page() as page:
        page.goto(f"{app_url}/?{urlencode({'text': payload})}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_timeout(1000)
        assert page.evaluate("() => window.__pwned === undefined")
        assert not _errors(page), _errors(page)
