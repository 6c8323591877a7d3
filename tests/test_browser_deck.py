"""The lesson deck in a real browser (headless Chromium): the example deck loads, Present opens its first slide's
page, the arrow keys move between the slides' pages and views (the URL carries the view and `deck` / `slide`), the
sidebar is hidden while presenting and Exit brings the deck page back; the handout downloads as a PDF."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from browser_support import chromium_page, serve_app, wait_for_app
from test_browser import _errors, require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _where(url: str) -> tuple[str, dict]:
    u = urlparse(url)
    return u.path.strip("/"), {k: v[0] for k, v in parse_qs(u.query).items()}


def test_present_with_the_arrow_keys_and_download_the_handout(tmp_path):
    require_browser()
    with serve_app(env={"HEADLIGHT_STATE_DIR": str(tmp_path)}) as base, chromium_page(1600, 1000) as page:
        page.goto(f"{base}/deck?lang=en", wait_until="domcontentloaded")
        wait_for_app(page)
        main = page.locator('[data-testid="stMain"]')
        main.get_by_role("button", name="Load the example deck").click()
        wait_for_app(page)
        main.get_by_role("button", name="Present", exact=True).click()
        page.wait_for_url("**/tour?**", timeout=60_000)
        wait_for_app(page)
        path, q = _where(page.url)
        assert (path, q["step"], q["slide"]) == ("tour", "1", "0") and len(q["deck"]) == 10
        assert not page.locator('[data-testid="stSidebar"]').is_visible()  # the slide takes the whole width
        assert main.get_by_text("1 / 11 · Tokens").first.is_visible()
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/positional?**", timeout=60_000)
        wait_for_app(page)
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/steps?**", timeout=60_000)
        wait_for_app(page)
        path, q = _where(page.url)
        assert q["slide"] == "2" and q["text"] == "The animal didn't cross the street because it was tired"
        assert main.get_by_role("tab", name="2 · W_Q, W_K, W_V and Q, K, V", selected=True).is_visible()
        page.keyboard.press("ArrowLeft")
        page.wait_for_url("**/positional?**", timeout=60_000)
        wait_for_app(page)
        assert _where(page.url)[1]["slide"] == "1" and not _errors(page)
        main.get_by_role("button", name="Exit").click()
        page.wait_for_url("**/deck?**", timeout=60_000)
        wait_for_app(page)
        assert page.locator('[data-testid="stSidebar"]').is_visible()
        main.get_by_role("button", name="Make the handout").click()
        button = main.get_by_role("button", name="Download the handout")
        button.wait_for(timeout=240_000)
        with page.expect_download() as download:
            button.click()
        pdf = download.value.path().read_bytes()
        assert pdf.startswith(b"%PDF-") and download.value.suggested_filename.endswith(".pdf")
        assert not _errors(page), _errors(page)
