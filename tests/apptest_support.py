"""Helpers shared by the AppTest suites."""

from __future__ import annotations

import json


def charts(at) -> list[str]:
    """Each chart's figure spec as JSON text with characters unescaped (plotly writes < as \\u003c)."""
    return [json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart")]


def assert_ok(at) -> None:
    """The run raised nothing and showed no st.error."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# text a user might type that must never produce a traceback or run as HTML (the union of what every page is fed)
HOSTILE = {
    "empty": "",
    "whitespace": "   \n\t ",
    "script": "<script>alert(1)</script>",
    "korean": "그 동물은 너무 피곤해서 길을 건너지 않았다",
    "emoji": "The 🐶 didn't cross 🚗🚗 because it was 😴",
    "arabic": "لم يعبر الحيوان الشارع لأنه كان متعبا",
    "hebrew": "החיה לא חצתה את הרחוב כי היא הייתה עייפה",
    "rtl_mixed": "لم يعبر الحيوان الشارع لأنه كان متعبا החיה לא חצתה",
    "zero_width_control": "it\u200bwas\u200d tired\x00\x07 ok $\\frac$",
}


EXPLORER_TABS = ["One head", "All heads", "Token view", "Head metrics", "Data"]


def open_tab(at, name: str, key: str = "ex_tab"):
    """Open one of a page's lazy tabs (only the open tab is built) and rerun."""
    at.session_state[key] = name
    return at.run()


def charts_in_tabs(at, key: str, names: list[str]) -> list[str]:
    """Every chart of a page with lazy tabs, tab by tab (leaves the last tab open)."""
    out = []
    for name in names:
        out.extend(charts(open_tab(at, name, key)))
    return out


def explorer_charts(at) -> list[str]:
    """The one-head, all-heads and token-view figures, each from its own tab (leaves the token view open)."""
    out = []
    for name in EXPLORER_TABS[:3]:
        out.extend(charts(open_tab(at, name)))
    return out
