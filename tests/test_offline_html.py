"""Slides that work offline (viz/html.py): an exported figure is one standalone HTML file that headless Chromium
draws, with hover, while every network request is blocked (only the file:// URL itself may load); the token view
also exports as SVG with its tokens as text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import plotly.graph_objects as go
import pytest
from browser_support import chromium_page, require_browser

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
@pytest.mark.parametrize("kind", ["heatmap", "token_view"])
def test_exported_html_draws_and_hovers_offline(tmp_path, kind):
    require_browser()
    att = _attention(len(TOKENS))
    if kind == "heatmap":
        fig = heatmap(att[0], TOKENS, TOKENS, title="Layer 0 · Head 0", zmin=0, zmax=1, xlabel="key", ylabel="query")
    else:
        fig = token_view(att, 5, TOKENS, TOKENS, [0, 1, 2], title="token view")
    path = tmp_path / f"{kind}.html"
    path.write_bytes(figure_html(fig, title=kind))
    with chromium_page(1280, 720, fresh=True) as page:  # its route must not outlive it
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


KOREAN_TOKENS = ["[CLS]", "철수", "##는", "영희", "##에게", "책을", "빌려", "##주었는데", ",", "그녀는", "[SEP]"]


def _korean_heatmap():
    return heatmap(_attention(len(KOREAN_TOKENS))[0], KOREAN_TOKENS, KOREAN_TOKENS, title="레이어 2 · 헤드 1",
                   xlabel="키", ylabel="쿼리", zmin=0, zmax=1, colorbar_title="가중치")


def test_exported_layout_makes_room_for_the_labels():
    """The app's figures keep 10 px side margins and rely on Streamlit's chart theme (automargin) in the browser; the
    standalone file has no theme, so it turns automargin on itself, on every axis, and keeps margins of at least
    MIN_MARGIN px. The figure the page draws is not changed."""
    from viz.html import MIN_MARGIN, TITLE_STANDOFF, standalone
    from viz.theme import subplot_grid

    fig = _korean_heatmap()
    assert fig.layout.margin.l == 10 and fig.layout.xaxis.automargin is None  # the page's figure, as the app sends it
    layout = standalone(fig)["layout"]
    assert layout["xaxis"]["automargin"] is True and layout["yaxis"]["automargin"] is True
    assert layout["xaxis"]["title"]["standoff"] == TITLE_STANDOFF and layout["xaxis"]["title"]["text"] == "키"
    assert min(layout["margin"].values()) >= MIN_MARGIN and layout["margin"]["t"] == fig.layout.margin.t
    assert fig.layout.margin.l == 10 and fig.layout.xaxis.automargin is None  # unchanged
    grid = go.Figure({"data": [{"type": "heatmap", "z": [[1]], "xaxis": "x4", "yaxis": "y4"}],
                      "layout": subplot_grid(2, 2, ["a", "b", "c", "d"])}, _validate=False)
    layout = standalone(grid)["layout"]
    assert all(layout[f"{a}axis{i}"]["automargin"] is True for a in "xy" for i in ("", "2", "3", "4"))
    assert layout["template"]["layout"]["xaxis"]["automargin"] is True
    doc = figure_html(fig).decode()
    assert '"automargin":true' in doc.replace(" ", "")


@pytest.mark.browser
def test_exported_heatmap_shows_every_token_label_inside_the_picture(tmp_path):
    require_browser()
    """In Chromium the exported heatmap's tick labels (the tokens) and axis titles lie inside the drawing: with the
    10 px margins of the page's layout and no theme, all but 2 of them fell outside it."""
    path = tmp_path / "heatmap.html"
    path.write_bytes(figure_html(_korean_heatmap(), title="heatmap"))
    with chromium_page(1280, 800, fresh=True) as page:
        assert _open_offline(page, path) == []
        page.wait_for_selector(".main-svg", timeout=30_000)
        inside = page.evaluate("""() => {
            const svg = document.querySelector('.main-svg').getBoundingClientRect();
            return [...document.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text')].map(t => {
                const b = t.getBoundingClientRect();
                return [t.textContent, b.left >= svg.left && b.right <= svg.right && b.top >= svg.top
                        && b.bottom <= svg.bottom]; }); }""")
    labels = [text for text, _ in inside]
    assert sorted(labels) == sorted(KOREAN_TOKENS * 2 + ["키", "쿼리"])
    assert [text for text, ok in inside if not ok] == []
