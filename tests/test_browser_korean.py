"""Issue 26 in a real browser (headless Chromium): the document's language follows the interface language, so a
screen reader reads a Korean page in a Korean voice (Streamlit serves one index.html with <html lang="en">), also
after switching the language in the sidebar; and the head surgery's multiselect shows no Streamlit English (its
placeholder is Korean, no "Select all"), with its heads named as everywhere else and kept in the link as
language-free values."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_support import chromium_page, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(app_server):
    """The worker's shared app (tests/conftest.py app_server)."""
    return app_server


def test_document_language_follows_the_interface(app_url):
    with chromium_page() as page:
        page.goto(f"{app_url}/masks?lang=ko", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_function("() => document.documentElement.lang === 'ko'", timeout=90_000)
        # the sidebar's language picker: back to English, and the document says so
        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="English").click()
        page.wait_for_function("() => document.documentElement.lang === 'en'", timeout=90_000)
        page.goto(f"{app_url}/?lang=en", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stHtml"]', state="attached", timeout=90_000)
        assert page.evaluate("document.documentElement.lang") == "en"


def test_head_surgery_multiselect_in_korean(app_url):
    tab = quote("헤드 수술")
    with chromium_page() as page:
        page.goto(f"{app_url}/heads?lang=ko&hl_tab={tab}", wait_until="domcontentloaded")
        wait_for_app(page)
        box = page.locator('[data-testid="stMultiSelect"]').first
        box.wait_for(timeout=90_000)
        said = box.evaluate("e => e.textContent + ' ' + [...e.querySelectorAll('input')].map(i => i.placeholder).join(' ')")
        assert "헤드를 고르세요" in said and "Choose" not in said, said
        box.click()
        options = page.get_by_role("option")
        options.first.wait_for(timeout=30_000)
        shown = options.all_inner_texts()
        assert shown[0] == "레이어 0 · 헤드 0" and not any("Select all" in s for s in shown), shown[:3]
        page.keyboard.type("레이어 3 · 헤드 1")
        page.keyboard.press("Enter")
        page.keyboard.press("Escape")
        page.wait_for_function("() => location.search.includes('hl_heads=3.1')", timeout=90_000)
        assert "레이어 3 · 헤드 1" in box.inner_text()
