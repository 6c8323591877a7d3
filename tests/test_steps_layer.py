"""AppTest of the Step by step page through the whole layer (issue: "the notes go on"): after the five attention
tabs, Add & Norm, Feed Forward and the second Add & Norm up to the layer output, which equals the model's own output
of that layer to 1e-5 (the visible check); for seq2seq-tiny's decoder blocks, the decoder layer's sublayers in order
(Masked self-attention's Add & Norm, cross-attention's Add & Norm, Feed Forward, the third Add & Norm) and, at the
last decoder layer, the final linear layer and Softmax over the vocabulary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apptest_support import assert_ok, charts, open_tab
from streamlit.testing.v1 import AppTest

from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGE = page_file("steps")
ENCODER_TABS = ["6 · Add & Norm", "7 · Feed Forward", "8 · Add & Norm → layer output"]
DECODER_TABS = ["6 · Add & Norm (after Masked self-attention)", "7 · Cross-attention → Add & Norm", "8 · Feed Forward",
                "9 · Add & Norm → layer output"]
VOCAB_TAB = "10 · Linear and Softmax over the vocabulary"


def _page(**state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE)
    at.run()
    assert_ok(at)
    return at


def _check_diff(at, layer: int) -> float:
    """The layer-output check's difference, read from the visible message."""
    msgs = [s.value for s in at.success if f"equals the model's output of layer {layer}" in s.value]
    assert msgs, [s.value for s in (*at.success, *at.warning)]
    return float(re.search(r"largest difference ([0-9.e+-]+)", msgs[0]).group(1))


def test_tab_labels():
    from i18n import t
    from viz.steps import step_tabs

    assert [t(f"steps.tab.{n}") for n in step_tabs("encoder", False)][5:] == ENCODER_TABS
    assert [t(f"steps.tab.{n}") for n in step_tabs("cross", True)][5:] == [*DECODER_TABS, VOCAB_TAB]
    assert VOCAB_TAB not in [t(f"steps.tab.{n}") for n in step_tabs("decoder_self", False)]


@pytest.mark.slow
@pytest.mark.parametrize("layer", [0, 5])
def test_minilm_layer_tabs_and_output_check(layer):
    at = _page(layer=layer)
    open_tab(at, ENCODER_TABS[0], "steps_tab")
    assert_ok(at)
    text = " ".join(charts(at))
    assert "Residual sum x + MultiHead(x)" in text and "Each token's mean and variance" in text
    assert "γ and β" in text
    open_tab(at, ENCODER_TABS[1], "steps_tab")
    assert_ok(at)
    text = " ".join(charts(at))
    assert "W_1 · 384 × 1536" in text and "W_2 · 1536 × 384" in text and "after the activation (GELU)" in text
    assert any("1536" in m.value and "2048" in m.value for m in at.markdown)
    open_tab(at, ENCODER_TABS[2], "steps_tab")
    assert_ok(at)
    assert "Residual sum x + FFN(x)" in " ".join(charts(at))
    assert _check_diff(at, layer) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("block", ["decoder_self", "cross"])
def test_seq2seq_decoder_layer_in_order(block):
    at = _page(model="seq2seq-tiny", text="the cat sat on the mat")
    at.radio(key="block").set_value(block).run()
    assert_ok(at)
    last = len(at.selectbox(key="layer").options) - 1
    at.selectbox(key="layer").set_value(last).run()
    assert_ok(at)
    assert [tab.label for tab in at.get("tab")][5:] == [*DECODER_TABS, VOCAB_TAB]
    for name in DECODER_TABS[:2]:
        open_tab(at, name, "steps_tab")
        assert_ok(at)
    assert "Cross-attention output" in " ".join(charts(at))
    open_tab(at, DECODER_TABS[3], "steps_tab")
    assert_ok(at)
    assert _check_diff(at, last) < 1e-5
    open_tab(at, VOCAB_TAB, "steps_tab")
    assert_ok(at)
    assert "Top next tokens" in " ".join(charts(at))
    assert any("model's own logits" in s.value for s in at.success)
    assert at.dataframe


@pytest.mark.slow
def test_seq2seq_first_decoder_layer_has_no_vocabulary_tab():
    at = _page(model="seq2seq-tiny", text="the cat sat", block="decoder_self", layer=0)
    labels = [tab.label for tab in at.get("tab")]
    assert labels[5:] == DECODER_TABS
    open_tab(at, DECODER_TABS[3], "steps_tab")
    assert _check_diff(at, 0) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("model,block", [("minilm-l6", "encoder"), ("seq2seq-tiny", "cross")])
def test_layer_tabs_on_hostile_text(model, block):
    """Every new tab on every hostile input of the suite (empty, HTML/script, Korean, emoji, RTL, control
    characters): a message or the figures, never an exception or st.error."""
    from apptest_support import HOSTILE

    tabs = ENCODER_TABS if block == "encoder" else [*DECODER_TABS, VOCAB_TAB]
    for name, text in HOSTILE.items():
        at = _page(text=text, model=model, block=block, layer=(5 if model == "minilm-l6" else 1))
        for tab in tabs:
            open_tab(at, tab, "steps_tab")
            assert_ok(at)
            if text.strip():
                assert charts(at), (name, tab)  # a non-empty text: the tab's figures
