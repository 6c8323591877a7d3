"""AppTest of the encoder-decoder decoding page (through app.py, so the shared sidebar and error boundary are
real): the default sentence, hostile inputs, and the step slider, task and teacher-forcing switch change the
drawing."""

from pathlib import Path

import pytest
from apptest_support import assert_ok as _ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGE = page_file("seq2seq")
HOSTILE = {
    "script": "<script>alert(1)</script> <eos> <reverse>",
    "korean": "그 동물은 너무 피곤해서 길을 건너지 않았다",
    "emoji": "The 🐶 didn't cross 🚗🚗 because it was 😴",
    "control": "it\u200bwas\u200d tired\x00\x07 ok",
    "punctuation": "?!... ,,, '''",
    "long": " ".join(["the animal was tired"] * 60),
}


def _page(text: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PAGE).run()
    if text is not None:
        at.text_area(key="text").set_value(text).run()
    return at






def test_default_sentence_decodes_and_draws():
    at = _page()
    _ok(at)
    assert at.title[0].value == "Encoder-decoder decoding"
    assert at.session_state["task"] == "copy" and at.session_state["step"] == 1
    codes = [c.value for c in at.code]
    assert codes[0].startswith("<copy> the animal didn ' t cross")
    assert codes[1] == "the animal didn ' t cross the street because it was tired <eos>"
    assert at.success  # the output is the task's answer
    charts = _charts(at)
    assert len(charts) == 4  # decoder self-attention, cross-attention, cross row, top-5
    assert "Decoder self-attention" in charts[0] and "✕" not in charts[0]  # step 1: a 1 x 1 matrix, nothing blocked


def test_step_slider_changes_what_is_drawn():
    at = _page()
    before = _charts(at)
    at.slider(key="step").set_value(5).run()
    _ok(at)
    after = _charts(at)
    assert all(a != b for a, b in zip(before, after))
    assert "✕" in after[0]  # the look-ahead triangle: 5 x 5 with blocked cells
    assert "Step 5" in after[2] and "Step 5" in after[3]
    assert [c.value for c in at.code if c.value.startswith("<bos>")] == [
        "<bos> the animal didn '   →   t"]


def test_reverse_and_teacher_forcing():
    at = _page("I am good")
    at.radio(key="task").set_value("reverse").run()
    _ok(at)
    assert at.code[1].value == "good am i <eos>"
    greedy = _charts(at)
    at.toggle(key="teacher_forcing").set_value(True).run()
    _ok(at)
    forced = _charts(at)
    assert at.code[1].value == "good am i <eos>"
    assert forced[0] != greedy[0]  # the full T x T triangle at once
    assert forced[0].count("✕") > greedy[0].count("✕")


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_inputs_give_messages_not_tracebacks(name):
    at = _page(HOSTILE[name])
    assert not at.exception, [e.value for e in at.exception]
    if name == "long":
        assert any("reads only the first" in w.value for w in at.warning)
    if name == "emoji":
        assert any("<unk>" in i.value for i in at.info)
    if name == "korean":  # read as words since issue 16: no unknown words
        assert not any("<unk>" in i.value for i in at.info) and "동물" in " ".join(c.value for c in at.code)
    if name == "script":
        assert "<reverse>" not in at.code[0].value.split()[1:]  # typed control tokens stay plain text
    # nothing the user typed is rendered as HTML: it only appears in code blocks and escaped chart labels
    for md in at.markdown:
        assert "<script" not in md.value


def test_empty_text_stops_quietly():
    at = _page("   ")
    _ok(at)
    assert not at.get("plotly_chart")
