"""Korean interface of the PE lab, the Mask lab, Step by step and Encoder-decoder decoding (issue 11): with lang=ko
and every lazy tab opened (by its Korean label), no user-visible string is English-only outside model names, token
text and formulas (tests/i18n_support.py). Also: the English labels stay what the other suites open tabs by, and a
tab label of the other language (after a language switch) or an unknown one opens a tab without an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_support import assert_ok
from i18n_support import english_only, page_texts
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import mask_lab, pe_lab
from ui.pages import page_file
from ui.state import PRESETS
from viz.steps import step_tabs

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TEXT = "The animal didn't cross the street because it was tired"
# token text a page may show: the sentence, the sidebar's example sentences, the mask lab's sentences
TOKENS = [TEXT, *PRESETS, "this is my car", "that is not", "I am sam"]
CASES = {
    "positional": (page_file("positional"), {}, "pe_tab", pe_lab.PE_TAB_KEYS),
    "masks": (page_file("masks"), {}, "mask_tab", mask_lab.MASK_TAB_KEYS),
    "steps-minilm": (page_file("steps"), {}, "steps_tab", [f"steps.tab.{n}" for n in step_tabs("encoder", False)]),
    "steps-decoder": (page_file("steps"), {"model": "seq2seq-tiny", "block": "cross", "layer": 1}, "steps_tab",
                      [f"steps.tab.{n}" for n in step_tabs("cross", True)]),
    "seq2seq": (page_file("seq2seq"), {}, None, []),
}


def _page(page: str, lang: str = "ko", **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["lang"] = lang
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page(page).run()
    assert_ok(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_korean_page_has_no_english_only_text(case):
    page, state, key, tabs = CASES[case]
    at = _page(page, **state)
    texts = page_texts(at)
    for name in tabs:
        at.session_state[key] = t(name, "ko")
        at.run()
        assert_ok(at)
        texts += page_texts(at)
    if page == page_file("seq2seq"):  # the other controls' option labels, and the teacher-forcing view
        at.toggle(key="teacher_forcing").set_value(True).run()
        assert_ok(at)
        texts += page_texts(at)
    assert texts and any("\uac00" <= ch <= "\ud7a3" for ch in " ".join(texts))
    assert english_only(texts, TOKENS) == []


def test_english_tab_labels_unchanged():
    assert pe_lab.PE_TABS == ["Sinusoidal table", "Your sentence: X, PE and X + PE", "Learned vs fixed",
                             "RoPE: rotary positions"]
    assert mask_lab.MASK_TABS == ["Padding mask on a batch", "Look-ahead mask and the combined decoder mask"]
    assert [t(f"steps.tab.{n}") for n in step_tabs("encoder", False)][:5] == [
        "1 · X", "2 · W_Q, W_K, W_V and Q, K, V", "3 · QKᵀ, ÷√d_k, mask", "4 · Softmax and Z = A V",
        "5 · Concat and W_O"]


@pytest.mark.slow
def test_tab_survives_a_language_switch_and_a_bad_label_falls_back():
    at = _page(page_file("masks"), lang="en")
    at.session_state["mask_tab"] = mask_lab.MASK_TABS[1]
    at.run()
    at.sidebar.selectbox(key="lang").set_value("ko").run()
    assert_ok(at)
    assert at.session_state["mask_tab"] == t(mask_lab.MASK_TAB_KEYS[1], "ko")
    assert at.text_input(key="mask_lookahead").label == t("masks.decoder_sentence", "ko")
    at.session_state["steps_tab"] = "no such tab"
    at.switch_page(page_file("steps")).run()
    assert_ok(at)
    assert at.session_state["steps_tab"] == t("steps.tab.x", "ko")


OWN = [page_file("positional"), page_file("masks"), page_file("steps"), page_file("seq2seq"), "ui/labs.py", "ui/pe_lab.py",
       "ui/mask_lab.py", "ui/steps_page.py",
       "ui/seq2seq.py", "viz/positional.py", "viz/masks.py", "viz/seq2seq.py", "viz/steps.py", "viz/tour.py"]


def test_keys_used_by_the_lab_pages_exist():
    import re

    from i18n import catalogue
    from model.data import TASKS
    from viz.steps import ATTENTION_TABS, LAYER_TABS, VOCAB_TAB

    root = Path(__file__).resolve().parents[1]
    used = set()
    for path in OWN:
        used |= set(re.findall(r"\bt\(\s*[\"']([a-z_]+\.[A-Za-z_.]+)[\"']", (root / path).read_text(encoding="utf-8")))
    names = [*ATTENTION_TABS, *LAYER_TABS["encoder"], *LAYER_TABS["decoder"], VOCAB_TAB]
    used |= {f"steps.tab.{n}" for n in names} | {f"steps.{n}.note" for n in names if n not in ATTENTION_TABS}
    used |= {f"s2s.task.{x}" for x in TASKS} | {f"s2s.task_help.{x}" for x in TASKS}
    used |= {f"masks.example.{x}" for x in mask_lab.MASK_EXAMPLES} | set(pe_lab.PE_TAB_KEYS) | set(mask_lab.MASK_TAB_KEYS)
    used |= {f"pe.part.{kind}.{p}" for kind, parts in pe_lab.EMBEDDING_PARTS.items() for p in parts}
    missing = sorted(k for k in used if k not in catalogue("en") or k not in catalogue("ko"))
    assert not missing
    assert len(used) > 120
