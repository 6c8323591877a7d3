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
