"""The app's own CSS for every page, drawn once per run by the shell as one <style> element (st.html of a style only:
Streamlit puts it in its event container, where it takes no room). Constant text, no user text.

- Phones (a window at most 640 px wide: Streamlit stacks columns below that): a heatmap is drawn at least
  PHONE_HEATMAP_PX wide and scrolls sideways, so every token keeps its label and every cell number stays readable
  (at 358 px plotly dropped every other label and shrank the numbers to ~6 px); plotly's toolbar (modebar), which
  sat over the charts' titles, is hidden (the Export popover saves a figure; pinch zooms); the options of a
  segmented control wrap instead of running off the screen ("레이어 전체 롤아웃" was cut).
- Korean text breaks between words, never inside one ("레이/어" in a table's header): `word-break: keep-all` where
  the page is Korean (<html lang="ko">, ui.widgets.document_lang); a word longer than its line still breaks.
- Streamlit's selectbox and multiselect write "No results" (a fixed English string of its front end, with no
  setting) when nothing matches what was typed, or when every option of a multiselect is chosen; in another
  language that text is replaced by the catalogue's ("widgets.no_results").
"""

from __future__ import annotations

from i18n import DEFAULT_LANG, t

PHONE_PX = 640  # Streamlit's breakpoint: below it, columns stack
PHONE_HEATMAP_PX = 600  # the least width a heatmap is drawn at on a phone (it scrolls sideways)

_PHONE = f"""@media (max-width: {PHONE_PX}px) {{
  [data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] g.hm) {{ overflow-x: auto; }}
  [data-testid="stFullScreenFrame"]:has(> [data-testid="stPlotlyChart"] g.hm) {{ min-width: {PHONE_HEATMAP_PX}px; }}
  [data-testid="stPlotlyChart"] .modebar-container {{ display: none !important; }}
  [data-testid="stButtonGroup"] [role="radiogroup"], [data-testid="stButtonGroup"] [role="group"] {{
    flex-wrap: wrap !important; row-gap: 0.3rem; }}
}}"""
_KOREAN = """html[lang="ko"] [data-testid="stMain"] *, html[lang="ko"] [data-testid="stSidebar"] * {
  word-break: keep-all; overflow-wrap: break-word; }"""  # every element: Streamlit's <p> sets break-word itself
_EMPTY = ('[data-testid="stMultiSelectDropdown"] [role="listbox"][data-empty="true"] [role="option"] span',
          '[data-testid="stSelectboxVirtualDropdown"] [role="listbox"][data-empty="true"] [role="option"] span')


def no_results_css(lang: str) -> str:
    """The rule that writes the catalogue's "no results" in place of Streamlit's English one ('' in English)."""
    if lang == DEFAULT_LANG:
        return ""
    said = t("widgets.no_results", lang).replace("\\", "\\\\").replace('"', '\\"').replace("<", "\\3c ")
    text = f'"{said}"'  # a CSS string; "<" escaped, so no text can close the <style> element
    return (",\n".join(_EMPTY) + " { font-size: 0 !important; }\n"
            + ",\n".join(f"{s}::after" for s in _EMPTY) + f" {{ content: {text}; font-size: 0.875rem; }}")


def app_css(lang: str) -> str:
    """The <style> element of every run in `lang`."""
    return "<style>\n" + "\n".join(x for x in (_PHONE, _KOREAN, no_results_css(lang)) if x) + "\n</style>"
