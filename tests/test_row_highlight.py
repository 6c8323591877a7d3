"""The explorer's one-head heatmap outlines the chosen query token's row: a frame around the whole row and its tick
label in bold, on the figure dict and in the page (with and without lecture mode)."""

import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok, open_tab
from streamlit.testing.v1 import AppTest

from viz.heatmap import heatmap
from viz.theme import HIGHLIGHT

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TOKENS = ["[CLS]", "the", "cat", "sat", "the", "[SEP]"]


def _frame(fig: dict) -> dict:
    (shape,) = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    return shape


@pytest.mark.parametrize("lecture", [False, True])
def test_the_chosen_row_is_framed_and_its_label_bold(lecture):
    m = np.random.default_rng(0).random((6, 6)).astype(np.float32)
    fig = heatmap(m, TOKENS, TOKENS, lecture=lecture, highlight_row=4).to_plotly_json()
    frame = _frame(fig)
    assert (frame["y0"], frame["y1"]) == (3.5, 4.5) and (frame["x0"], frame["x1"]) == (0, 1)
    assert frame["xref"] == "x domain" and frame["line"]["color"] == HIGHLIGHT
    assert frame["line"]["width"] == (4 if lecture else 3)
    y = fig["layout"]["yaxis"]
    assert list(y["tickvals"]) == list(fig["data"][0]["y"])  # every row keeps its label
    bold = [i for i, text in enumerate(y["ticktext"]) if text.startswith("<b>")]
    assert bold == [4] and "the" in y["ticktext"][4]  # the second "the", not the first


def test_no_row_chosen_draws_no_frame_and_a_pooled_row_is_framed_in_its_block():
    m = np.random.default_rng(1).random((600, 600)).astype(np.float32)
    plain = heatmap(m[:6, :6], TOKENS, TOKENS).to_plotly_json()
    assert not plain["layout"].get("shapes") and "ticktext" not in plain["layout"]["yaxis"]
    fig = heatmap(m, None, None, highlight_row=599, max_side=300).to_plotly_json()  # pooled 2 x 2: 300 rows
    frame = _frame(fig)
    assert (frame["y0"], frame["y1"]) == (298.5, 299.5)
    y = fig["layout"]["yaxis"]
    assert y["tickvals"][-1] == fig["data"][0]["y"][-1] and y["ticktext"][-1].startswith("<b>")
    assert len(y["tickvals"]) <= 17  # the long numbered axis stays sparse, plus the chosen row


@pytest.mark.parametrize("lecture", [False, True])
def test_the_explorer_frames_the_sidebar_token(lecture):
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["lecture"] = lecture
    at.run()
    at = open_tab(at, "One head")
    at.selectbox(key="token").set_value(3).run()
    assert_ok(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    frame = _frame(spec)
    rows = spec["data"][0]["y"]
    row = next(i for i, text in enumerate(spec["layout"]["yaxis"]["ticktext"]) if text.startswith("<b>"))
    assert (frame["y0"], frame["y1"]) == (row - 0.5, row + 0.5) and rows[row] == "didn"  # token 3 of the default sentence
    at.selectbox(key="token").set_value(5).run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert _frame(spec)["y0"] == 4.5
