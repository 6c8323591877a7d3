"""Slides that work offline (viz/html.py): an exported figure is one standalone HTML file that headless Chromium
draws, with hover, while every network request is blocked (only the file:// URL itself may load); the token view
also exports as SVG with its tokens as text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from browser_support import browser_available, chromium_page

from viz.attention import token_view
from viz.heatmap import heatmap
from viz.html import figure_html, token_view_svg

TOKENS = ["[CLS]", "the", "animal", "didn", "<script>", "it", "was", "tired", "[SEP]"]


def _attention(n: int, heads: int = 3) -> np.ndarray:
    rng = np.random.default_rng(0)
    a = rng.random((heads, n, n)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def test_html_is_standalone():
    fig = heatmap(_attention(len(TOKENS))[0], TOKENS, TOKENS, title="Layer 0 · Head 0", zmin=0, zmax=1)
    doc = figure_html(fig, title="minilm-l6 · <Layer 0>").decode()
    assert doc.lstrip().lower().startswith("<!doctype html>")
    assert "<title>minilm-l6 · &lt;Layer 0&gt;</title>" in doc
    assert len(doc) > 3_000_000  # plotly.js is inside
    assert 'src="http' not in doc and "cdn.plot.ly" not in doc.split("</script>")[-1]
    assert "<script>alert" not in doc  # the token label is escaped


def test_token_view_svg():
    svg = token_view_svg(_attention(len(TOKENS)), 5, TOKENS, TOKENS, [0, 1], title="Layer 0 · token view")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert b"animal" in svg or b"glyph" in svg  # text as text, or as glyph paths (matplotlib's default)


def _open_offline(page, path) -> list[str]:
    """Open a file with every request but the file itself aborted; returns the aborted URLs."""
    blocked: list[str] = []
    target = path.as_uri()

    def handle(route):
        if route.request.url == target:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    page.goto(target)
    return blocked


@pytest.mark.browser
@pytest.mark.skipif(browser_available() is not None, reason=str(browser_available()))
@pytest.mark.parametrize("kind", ["heatmap", "token_view"])
def test_exported_html_draws_and_hovers_offline(tmp_path, kind):
    att = _attention(len(TOKENS))
    if kind == "heatmap":
        fig = heatmap(att[0], TOKENS, TOKENS, title="Layer 0 · Head 0", zmin=0, zmax=1, xlabel="key", ylabel="query")
    else:
        fig = token_view(att, 5, TOKENS, TOKENS, [0, 1, 2], title="token view")
    path = tmp_path / f"{kind}.html"
    path.write_bytes(figure_html(fig, title=kind))
    with chromium_page(1280, 720) as page:
        blocked = _open_offline(page, path)
        page.wait_for_selector(".main-svg", timeout=30_000)
        assert page.locator(".main-svg").count() >= 1
        if kind == "heatmap":
            assert page.locator(".heatmaplayer image, .heatmaplayer .hm").count() >= 1
            box = page.locator(".nsewdrag").first.bounding_box()
            # the cell in row 2, column 4 of a 9 x 9 grid
            x = box["x"] + box["width"] * (4.5 / len(TOKENS))
            y = box["y"] + box["height"] * (2.5 / len(TOKENS))
        else:
            assert page.locator(".scatterlayer .trace").count() >= 3
            traces = page.locator(".scatterlayer .trace")  # the key tokens (second to last) carry the hover text
            box = traces.nth(traces.count() - 2).locator(".point").nth(2).bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x - 5, y - 5)
        page.mouse.move(x, y)
        page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
        hover = page.locator(".hoverlayer .hovertext").first.text_content()
        assert hover.strip()
        if kind == "heatmap":
            assert "animal" in hover and "&lt;script&gt;" not in hover, hover
    assert blocked == [], blocked
