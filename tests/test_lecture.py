"""Issue 26: the app on a projector in lecture mode. Every text of a figure takes the theme's lecture size (legend,
ticks, axis titles, annotations, bar text), heads have distinct colours, cell numbers are written only where they fit
a cell (one pure rule, viz.theme.cell_text_fits, used by every heatmap), and the pages lay out for a projector (AppTest:
fewer columns in the Mask lab, tables in the bigger font, tabs that wrap instead of hiding)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from ui.pages import page_file
from viz import attention as va
from viz import crosslingual as vx
from viz import masks as vm
from viz import positional as vp
from viz.heatmap import heatmap, tick_style
from viz.theme import (
    FONTS,
    HEAD_COLOURS,
    MIN_CELL_FONT,
    PAGE_WIDTH,
    cell_text_fits,
    column_width,
    head_colour,
    text_width,
    title_margin,
)

LECTURE = FONTS[True]
APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _lab(hex_colour: str) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour, for colour distances."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    lin = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _layout(fig) -> dict:
    return fig.to_plotly_json()["layout"]


def _axes(layout: dict) -> list[dict]:
    return [v for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))]


# ---- one place for the lecture sizes ------------------------------------------------------------------------------
def _figures(lecture: bool) -> dict:
    rng = np.random.default_rng(0)
    att = rng.dirichlet(np.ones(9), size=(2, 12, 9)).astype(np.float32)  # (L, H, n, n)
    toks = [f"t{i}" for i in range(9)]
    pe = np.sin(np.arange(50)[:, None] / (1 + np.arange(16))[None, :]).astype(np.float32)
    return {
        "token_view": va.token_view(att[0], 2, toks, toks, list(range(12)), lecture=lecture, title="t"),
        "grid": va.grid_figure(att, (0, 0), lecture=lecture, title="all heads"),
        "pe_curves": vp.pe_curves(pe, [0, 1, 8], lecture=lecture),
        "heatmap": heatmap(att[0, 0], toks, toks, title="one head", xlabel="key", ylabel="query", lecture=lecture),
    }


@pytest.mark.parametrize("name", ["token_view", "grid", "pe_curves", "heatmap"])
def test_every_text_of_a_lecture_figure_takes_the_lecture_size(name):
    layout = _layout(_figures(True)[name])
    assert layout["legend"]["font"]["size"] >= LECTURE["legend"]
    assert layout["hoverlabel"]["font"]["size"] >= LECTURE["hover"]
    for axis in _axes(layout):
        assert axis["title"]["font"]["size"] >= LECTURE["axis_title"]
        assert axis["tickfont"]["size"] >= MIN_CELL_FONT[True]  # a dense axis may shrink, never below readable
    normal = _layout(_figures(False)[name])
    assert normal["legend"]["font"]["size"] < layout["legend"]["font"]["size"]


def test_pe_curve_legend_and_subplot_titles_are_lecture_sized():
    pe = np.sin(np.arange(50)[:, None] / (1 + np.arange(16))[None, :]).astype(np.float32)
    layout = _layout(vp.pe_curves(pe, [0, 1, 8], lecture=True))
    assert layout["legend"]["font"]["size"] >= LECTURE["legend"] and layout.get("showlegend", True)
    parts = {"token": pe[:5], "position": pe[:5], "sum": pe[:5]}
    trip = _layout(vp.embedding_triptych(parts, list("abcde"), lecture=True))
    assert trip["annotations"] and all(a["font"]["size"] >= LECTURE["annotation"] for a in trip["annotations"])


def test_top5_bars_write_their_probabilities_outside_at_the_lecture_size():
    from types import SimpleNamespace

    from viz.seq2seq import topk_figure

    step = SimpleNamespace(top_tokens=["a", "b", "c", "d", "e"], top_probs=[0.66, 0.2, 0.1, 0.03, 0.01], chosen="a",
                           inputs=["<bos>"])
    fig = topk_figure(SimpleNamespace(steps=[step], model="seq2seq-tiny"), 1, lecture=True)
    bar = fig.to_plotly_json()["data"][0]
    assert bar["textfont"]["size"] >= LECTURE["bar_text"] and bar["textposition"] == "outside"
    layout = _layout(fig)
    assert layout["yaxis"]["tickfont"]["size"] >= LECTURE["tick"]  # the token labels


def test_all_heads_title_sits_above_the_head_names():
    att = np.full((3, 4, 5, 5), 0.2, dtype=np.float32)
    layout = _layout(va.grid_figure(att, lecture=True, title="multilingual-e5-small · 3 x 4"))
    assert layout["xaxis"]["side"] == "top"
    title_px = LECTURE["title"] * 1.4
    assert layout["title"]["yanchor"] == "top" and layout["title"]["yref"] == "container"
    assert layout["margin"]["t"] >= title_px + 1.5 * layout["xaxis"]["tickfont"]["size"] + LECTURE["axis_title"]
    assert layout["margin"]["t"] == title_margin(True, below=1.6 * layout["xaxis"]["tickfont"]["size"]
                                                 + 1.6 * LECTURE["axis_title"])


# ---- head colours -----------------------------------------------------------------------------------------------
def test_head_colours_are_distinct():
    assert len(HEAD_COLOURS) >= 16 and len(set(HEAD_COLOURS)) == len(HEAD_COLOURS)
    for a, b in itertools.combinations(HEAD_COLOURS[:16], 2):
        assert np.linalg.norm(_lab(a) - _lab(b)) >= 25, (a, b)  # no two browns (the old heads 8 and 11)
    for a, b in itertools.combinations(HEAD_COLOURS, 2):
        assert np.linalg.norm(_lab(a) - _lab(b)) >= 15, (a, b)


def test_token_view_gives_each_of_16_heads_its_own_legend_colour():
    att = np.random.default_rng(1).dirichlet(np.ones(6), size=(16, 6)).astype(np.float32)
    fig = va.token_view(att, 0, list("abcdef"), list("abcdef"), list(range(16)), lecture=True)
    legend = [t["line"]["color"] for t in fig.to_plotly_json()["data"] if t.get("showlegend")]
    assert len(legend) == 16 and len(set(legend)) == 16
    assert head_colour(3) != head_colour(11)


# ---- cell numbers: one rule of pixels ---------------------------------------------------------------------------
def test_cell_text_fits_is_a_rule_of_pixels():
    assert cell_text_fits(60, 30, "-11.15", 14)  # 6 x 0.65 x 14 = 54.6 px
    assert not cell_text_fits(50, 30, "-11.15", 14)  # "-11.15-9.77": the numbers would run together
    assert not cell_text_fits(60, 15, "1.00", 14)  # too low a row
    assert cell_text_fits(10, 20, "1", 14)
    assert text_width("그녀", 20) == 40 and text_width("ab", 10) == pytest.approx(12)
    assert text_width("&lt;pad&gt;", 10) == pytest.approx(30)  # an escaped label is measured as its text


def _text(fig) -> str | None:
    return fig.to_plotly_json()["data"][0].get("texttemplate")


def test_heatmap_numbers_only_where_a_cell_holds_them():
    rng = np.random.default_rng(2)
    small = (rng.standard_normal((5, 5)) * 30).astype(np.float32)  # "-45.58": six characters
    toks = ["<bos>", "i", "am", "sam", "<pad>"]
    assert _text(heatmap(small, toks, toks, title="t", lecture=True, text_auto=True, width=PAGE_WIDTH))
    assert _text(heatmap(small, toks, toks, title="t", lecture=True, text_auto=True, width=column_width(3))) is None
    big = rng.random((23, 23)).astype(np.float32)
    assert _text(heatmap(big, text_auto=True, lecture=True, width=column_width(3))) is None


def test_mask_lab_stage_and_mask_figures_follow_the_rule():
    rng = np.random.default_rng(3)
    toks = ["<bos>", "i", "am", "sam", "<pad>"]
    stages = {"scores": (rng.standard_normal((5, 5)) * 30).astype(np.float32),
              "scaled": (rng.standard_normal((5, 5)) * 4).astype(np.float32),
              "mask": np.tril(np.ones((5, 5), dtype=bool))}
    w = np.exp(stages["scaled"]) * stages["mask"]
    stages["weights"] = (w / w.sum(1, keepdims=True)).astype(np.float32)
    three = vm.stage_figures(stages, toks, toks, title="L0 H0", lecture=True, width=column_width(3))
    assert _text(three["scores"]) is None  # "-45.58" in a 34 px cell
    one = vm.stage_figures(stages, toks, toks, title="L0 H0", lecture=True, width=column_width(1))
    assert all(_text(f) for f in one.values())
    mask = vm.mask_heatmap(stages["mask"], toks, toks, title="look-ahead", lecture=True, width=column_width(3))
    assert _text(mask) == "%{z:.0f}"  # one digit fits
    assert _layout(mask)["xaxis"]["tickangle"] == -60  # "<bos>" is wider than its column: the labels turn


def test_single_row_cross_attention_has_no_numbers_that_overlap():
    m = np.random.default_rng(4).dirichlet(np.ones(23), size=1).astype(np.float32)  # one decoder step
    src = [f"tok{i}" for i in range(23)]
    fig = heatmap(m, ["<bos>"], src, title="cross", lecture=True, text_auto=True, width=column_width(2))
    assert _text(fig) is None
    wide = heatmap(m[:, :4], ["<bos>"], src[:4], title="cross", lecture=True, text_auto=True, width=column_width(2))
    trace = wide.to_plotly_json()["data"][0]
    assert trace["texttemplate"]  # four cells of one row: the size is set here (plotly does not fit one row)
    size = trace["textfont"]["size"]
    _, cell_h, _, _ = tick_style(["<bos>"], src[:4], None, None, width=column_width(2),
                                 height=_layout(wide)["height"], lecture=True)
    assert MIN_CELL_FONT[True] <= size <= LECTURE["base"] and 1.3 * size <= cell_h


def test_crosslingual_grids_drop_numbers_in_two_columns():
    from types import SimpleNamespace

    side = SimpleNamespace(weight=np.random.default_rng(5).random((12, 12)).astype(np.float32),
                           tokens=["▁it", "▁animal"], query=[0], target=[1], query_word="it", target_word="animal")
    fig = vx.weight_grid(side, zmax=1.0, shared=((0, 0),), lecture=True, lang="ko", width=column_width(2))
    assert _text(fig) is None
    assert _layout(fig)["yaxis"]["tickfont"]["size"] >= MIN_CELL_FONT[True]


# ---- the pages in lecture mode (AppTest) ------------------------------------------------------------------------
def _lecture_page(page: str, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["lecture"] = True
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(page)
    return at.run()


@pytest.mark.slow
def test_mask_lab_in_lecture_mode_draws_the_stages_one_under_the_other():
    at = _lecture_page(page_file("masks"))
    assert_ok(at)
    css = [m.value for m in at.markdown if "flex-wrap" in m.value]
    assert css, "the lecture style lets tabs wrap to a second row"
    assert len(at.main.columns) == 2  # the preset button and the second sentence; the three stages are not squeezed
    assert len(at.get("plotly_chart")) == 4  # the batch mask and the three stages, full width
    at.session_state["lecture"] = False
    at.run()
    assert len(at.main.columns) == 5


@pytest.mark.slow
def test_tables_in_lecture_mode_are_html_tables():
    at = _lecture_page(page_file("explorer"), ex_tab="Head metrics")
    assert_ok(at)
    assert at.table and not at.dataframe
    at.session_state["lecture"] = False
    at.run()
    assert at.dataframe and not at.table


def test_batch_mask_writes_tokens_only_when_they_fit():
    short = [["[CLS]", "this", "is", "[SEP]"], ["[CLS]", "that", "[SEP]", "[PAD]"]]
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=bool)
    fig = vm.batch_mask_heatmap(short, mask, lecture=True)
    trace = fig.to_plotly_json()["data"][0]
    assert trace["texttemplate"] == "%{text}" and trace["textfont"]["size"] >= MIN_CELL_FONT[True]
    long = [["▁그것을", "▁돌려주지"] * 12, ["▁그것을"] + ["<pad>"] * 23]
    wide = vm.batch_mask_heatmap(long, np.ones((2, 24), dtype=bool), lecture=True).to_plotly_json()["data"][0]
    assert "texttemplate" not in wide and wide["text"][0][1] == "▁돌려주지"  # on hover only


def test_token_view_legend_sits_in_rows_above_the_lines_under_the_title():
    """The legend hangs from under the title (container coordinates), so more rows on a phone push the lines down
    instead of growing up into the title (issue 34); the title is in lines a phone's width."""
    att = np.random.default_rng(6).dirichlet(np.ones(6), size=(12, 6)).astype(np.float32)
    layout = _layout(va.token_view(att, 0, list("abcdef"), list("abcdef"), list(range(12)), lecture=True,
                                   title="multilingual-e5-small · Layer 0"))
    legend = layout["legend"]
    assert legend["orientation"] == "h" and legend["yanchor"] == "top" and legend["yref"] == "container"
    assert layout["title"]["text"] == "multilingual-e5-small<br>Layer 0"  # 428 px at 23 px: two lines on a phone
    assert layout["title"]["pad"]["t"] == 12 + int(LECTURE["title"] * 1.3)  # plotly anchors the first line only
    assert legend["y"] == pytest.approx(1 - title_margin(True, 2, below=0.6 * LECTURE["title"]) / layout["height"])
    assert legend["entrywidth"] >= text_width("Head 11", LECTURE["legend"])  # no entry cut short
    assert layout["title"]["yref"] == "container" and layout["title"]["yanchor"] == "top"
    assert layout["margin"]["t"] >= title_margin(True) + 2 * LECTURE["legend"]  # two rows of 12 heads on a projector
