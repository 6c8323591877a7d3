"""The Encoder-decoder page with the real translator in headless Chromium: a link with `model=bergamot-en-pt` and
the classic alignment sentence opens the translation, the SSRU's forget gate, the cross-attention and the alignment
lines, whose words are drawn as text; in English and Korean; screenshots (assets/screenshots/ with
HEADLIGHT_SCREENSHOTS=1)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import SEEN_S, chromium_page, seen, wait_for_app
from test_browser import _errors, app_url, require_browser, shot_dir  # noqa: F401 - fixtures

from model.examples import ALIGNMENT_TEXT

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lang,translation_label", [("en", "Translation"), ("ko", "번역")])
def test_translator_link_draws_translation_and_alignment(app_url, shot_dir, lang, translation_label):  # noqa: F811
    require_browser()
    query = urlencode({"text": ALIGNMENT_TEXT, "model": "bergamot-en-pt", "lang": lang})
    with chromium_page(fresh=True) as page:
        console: list[str] = []
        page.on("pageerror", lambda e: console.append(str(e)))
        page.goto(f"{app_url}/seq2seq?{query}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_function("""() => document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length >= 5""",
                               timeout=90_000)
        main = page.locator('[data-testid="stMain"]')
        seen(main.get_by_text("O acordo sobre o Espaço Económico Europeu foi assinado em Agosto de 1992.").first) \
            .to_be_visible(timeout=SEEN_S * 1000)
        seen(main.get_by_text(translation_label, exact=True).first).to_be_visible(timeout=SEEN_S * 1000)
        words = ["Europeu", "European", "Espaço", "Area"]  # the alignment's axes: wait until plotly has drawn them
        page.wait_for_function("""(words) => {
          const seen = new Set([...document.querySelectorAll('[data-testid="stPlotlyChart"] text')].map(e => e.textContent));
          return words.every(w => seen.has(w));
        }""", arg=words, timeout=30_000)
        ticks = page.locator('[data-testid="stPlotlyChart"] text').evaluate_all("els => els.map(e => e.textContent)")
        assert "Europeu" in ticks and "European" in ticks and "Espaço" in ticks and "Area" in ticks
        assert page.evaluate("() => document.documentElement.lang") == lang
        assert not _errors(page), _errors(page)
        assert not console, console
        page.screenshot(path=str(shot_dir / f"translator{'' if lang == 'en' else '_ko'}.png"), full_page=False)
        page.locator('[data-testid="stPlotlyChart"]').nth(4).scroll_into_view_if_needed()
        page.screenshot(path=str(shot_dir / f"alignment{'' if lang == 'en' else '_ko'}.png"), full_page=False)
