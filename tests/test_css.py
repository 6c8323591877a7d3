"""The app's own CSS (ui/css.py, issue 34): drawn by the shell on every page as a style only, in the page's
language; the phone rules, Korean line breaking and Streamlit's "No results" in the catalogue's words."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui.css import PHONE_HEATMAP_PX, PHONE_PX, app_css, no_results_css

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_korean_css_replaces_no_results_and_breaks_between_words():
    css = app_css("ko")
    assert css.startswith("<style>") and css.endswith("</style>") and css.count("<") == 2  # a style only
    assert 'content: "일치하는 항목이 없습니다"' in css
    assert 'html[lang="ko"] [data-testid="stMain"] *' in css and "word-break: keep-all" in css
    assert f"@media (max-width: {PHONE_PX}px)" in css and f"min-width: {PHONE_HEATMAP_PX}px" in css
    assert ".modebar-container { display: none !important; }" in css


def test_english_keeps_streamlits_own_no_results():
    assert no_results_css("en") == "" and "content:" not in app_css("en")


def test_every_page_run_draws_the_style_in_its_language():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["lang"] = "ko"
    at.run()
    styles = [h.proto.body for h in at.get("html") if "<style>" in h.proto.body]
    assert any("일치하는 항목이 없습니다" in s for s in styles)
