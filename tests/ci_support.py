"""One rule for a test whose tool is missing (a browser, haproxy, PostgreSQL, a CJK font, a C compiler): on a
developer's machine it is skipped with the reason; under CI (`CI=true`, set by .ci/run, which installs every tool)
it fails, so a green CI never hides a test that did not run."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def skip_or_fail(reason: str) -> None:
    """Skip (locally) or fail (under CI) with `reason`."""
    if in_ci():
        pytest.fail(f"{reason} (under CI every tool is installed by .ci/run: this test must run)", pytrace=False)
    pytest.skip(reason)
