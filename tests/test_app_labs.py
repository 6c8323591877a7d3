"""AppTest of the positional-encoding lab, the mask lab and the step-by-step page, through app.py (so the shared
sidebar and the error boundary are real): the default sentence, a 512-token text, hostile inputs, and widgets
changed by key change what is drawn."""

import json
from pathlib import Path

import pytest
from apptest_support import HOSTILE, charts_in_tabs
from apptest_support import assert_ok as _ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PE_TABS = ["Sinusoidal table", "Your sentence: X, PE and X + PE", "Learned vs fixed", "RoPE: rotary positions"]
STEP_TABS = ["1 · X", "2 · W_Q, W_K, W_V and Q, K, V", "3 · QKᵀ, ÷√d_k, mask", "4 · Softmax and Z = A V",
             "5 · Concat and W_O"]
MASK_TABS = ["Padding mask on a batch", "Look-ahead mask and the combined decoder mask"]
LAZY = {page_file("positional"): ("pe_tab", PE_TABS), page_file("steps"): ("steps_tab", STEP_TABS),
        page_file("masks"): ("mask_tab", MASK_TABS)}


def _all_charts(at, page: str) -> list[str]:
    """Every chart of the page (tab by tab on pages with lazy tabs)."""
    return charts_in_tabs(at, *LAZY[page]) if page in LAZY else _charts(at)
PAGES = [page_file("positional"), page_file("masks"), page_file("steps")]


def _page(page: str, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(page)
    return at.run()






@pytest.mark.parametrize("page,n_charts", [(page_file("positional"), 10), (page_file("masks"), 11),
                                           (page_file("steps"), 14)])
def test_default_sentence(page, n_charts):
    at = _page(page)
    _ok(at)
    assert at.get("popover"), "every figure has an Export popover"
    if page in LAZY:
        assert len(_charts(at)) < n_charts  # only the open tab is built and sent
    assert len(_all_charts(at, page)) == n_charts


def test_positional_sliders_change_the_table_and_stay_small_at_the_maximum():
    at = _page(page_file("positional"))
    assert "50 positions × 128 dims" in _charts(at)[0]  # the lecture's own example
    at.slider(key="pe_n").set_value(2048)
    at.slider(key="pe_d").set_value(1024)
    at.run()
    _ok(at)
    charts = _charts(at)
    assert "2048 positions × 1024 dims" in charts[0] and "averaged" in charts[0]
    assert any("averaged" in c.value for c in at.caption)
    assert sum(len(c.proto.spec) for c in at.get("plotly_chart")) < 4_000_000
    at.slider(key="pe_d").set_value(4).run()  # dims chosen for d = 1024 must not break a smaller d
    _ok(at)
    assert set(at.session_state["pe_dims"]) <= {0, 1, 2, 3}


def test_positional_cosine_toggle_and_curve_dims():
    at = _page(page_file("positional"))
    before = _charts(at)
    at.toggle(key="pe_cosine").set_value(True)
    at.multiselect(key="pe_dims").set_value([4, 5]).run()
    _ok(at)
    after = _charts(at)
    assert after[2] != before[2] and "cosine" in after[2]
    assert '"dim 4 (sin' in after[1] and "dim 0 " not in after[1]


def test_positional_shows_both_models_for_the_sentence():
    at = _page(page_file("positional"))
    charts = _all_charts(at, page_file("positional"))  # the sentence tab opens on MiniLM, its first sub-tab
    at.session_state["pe_tab"] = PE_TABS[1]
    at.session_state["pe_parts_tab"] = "seq2seq-tiny: sinusoidal positions"
    charts += _charts(at.run())
    assert any("X: word embeddings" in c for c in charts)
    assert any("PE: sinusoidal" in c for c in charts)
    assert any("Learned: 512" in c for c in charts) and any("Sinusoidal: 512" in c for c in charts)


@pytest.mark.parametrize("key,value", [("layer", 3), ("head", 7)])
def test_masks_layer_and_head_change_the_stages(key, value):
    at = _page(page_file("masks"))
    before = _charts(at)
    at.selectbox(key=key).set_value(value).run()
    _ok(at)
    after = _charts(at)
    assert after[0] == before[0]  # the batch's padding mask does not depend on the head
    assert after[1] != before[1] and after[3] != before[3]  # raw scores and weights do
    assert (f"Layer {value}" if key == "layer" else f"Head {value}") in after[1]


def test_masks_presets_and_pad_column_is_exactly_zero():
    at = _page(page_file("masks"))
    at.button(key="mask_preset_pad").click().run()
    _ok(at)
    assert at.session_state["text"] == "this is my car" and at.session_state["mask_second"] == "that is not"
    batch = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert batch["text"][1] == ["[CLS]", "that", "is", "not", "[SEP]", "[PAD]"]
    assert any("sums to 1" in s.value and "weight 0.0 exactly" in s.value for s in at.success)
    at.session_state["mask_tab"] = MASK_TABS[1]
    at.run()
    at.number_input(key="mask_pads").set_value(3).run()
    _ok(at)
    decoder_input = [c.value.split("teacher-forced as")[1] for c in at.caption if "teacher-forced as" in c.value]
    assert decoder_input and decoder_input[0].split(";")[0].lower().count("pad") == 3  # [PAD] or <pad>, by model
    at.button(key="mask_preset_sam").click().run()
    assert at.session_state["mask_lookahead"] == "I am sam" and at.session_state["mask_pads"] == 1


@pytest.mark.parametrize("key,value", [("layer", 4), ("head", 9)])
def test_steps_layer_and_head_change_every_stage(key, value):
    at = _page(page_file("steps"))
    before = _all_charts(at, page_file("steps"))
    at.selectbox(key=key).set_value(value).run()
    _ok(at)
    after = _all_charts(at, page_file("steps"))
    changed = [a != b for a, b in zip(after, before)]
    assert changed[0] == (key == "layer")  # X is the layer's input: the same for every head
    assert sum(changed) >= 10
    assert any(f"{'Layer 4 · Head 0' if key == 'layer' else 'Layer 0 · Head 9'}" in c.value for c in at.caption)
    assert any("largest difference" in s.value for s in at.success)


def test_steps_encoder_decoder_blocks():
    at = _page(page_file("steps"), model="paper-base")
    _ok(at)
    for block in ("decoder_self", "cross"):
        at.radio(key="block").set_value(block).run()
        _ok(at)
        assert any("largest difference" in s.value for s in at.success)
    assert "M: encoder output" in " ".join(_charts(at))


@pytest.mark.parametrize("page", PAGES)
def test_512_token_text(page):
    at = _page(page, text="word " * 600)
    _ok(at)
    assert any("only the first 512" in w.value for w in at.warning)
    assert at.get("plotly_chart")
    assert sum(len(c.proto.spec) for c in at.get("plotly_chart")) < 5_000_000


@pytest.mark.parametrize("page", PAGES)
def test_hostile_inputs(page):
    at = _page(page)
    for name, text in HOSTILE.items():
        at.sidebar.text_area(key="text").input(text).run()
        _ok(at)
        charts = "".join(_charts(at))
        if name in ("empty", "whitespace"):
            assert any("Type a sentence" in i.value for i in at.info), name
            continue
        assert charts, name  # every page draws its figures (or a notice with them) on any non-empty text
        if name == "script":
            assert "<script" not in charts


def test_lab_inputs_survive_a_page_switch():
    at = _page(page_file("positional"))
    at.slider(key="pe_n").set_value(80).run()
    at.switch_page(page_file("explorer")).run()
    _ok(at)
    at.switch_page(page_file("positional")).run()
    _ok(at)
    assert at.slider(key="pe_n").value == 80


KO = "철수는 영희에게 책을 빌려주었는데, 그녀는 그것을 아직 돌려주지 않았다."
E5 = "multilingual-e5-small"


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_positional_korean_on_minilm_has_the_notice_and_the_switch_moves_the_lab():
    at = _page(page_file("positional"), text=KO)
    _ok(at)
    assert any("minilm-l6 cannot read 9 of the 9 words" in w for w in _warnings(at))
    at.session_state["pe_tab"] = PE_TABS[1]
    at.run()
    _ok(at)
    assert at.selectbox(key="pe_parts_model").value == "minilm-l6"  # the lab follows the sidebar
    at.button(key="_hl_switch_e5").click().run()  # the one-click switch of the sidebar's notice
    _ok(at)
    assert at.session_state["model"] == E5 and at.selectbox(key="pe_parts_model").value == E5
    assert not any("cannot read" in w for w in _warnings(at))
    charts = _charts(at)
    assert any(f"{E5}: " in c and "▁" in c for c in charts)  # e5's Hangul pieces, with word-start marks


def test_positional_lab_model_picker_warns_for_minilm_and_switches_to_e5():
    at = _page(page_file("positional"), text=KO, model=E5, pe_tab=PE_TABS[1])
    _ok(at)
    assert set(at.selectbox(key="pe_parts_model").options) == {"minilm-l6", E5}  # from the configs: learned only
    at.selectbox(key="pe_parts_model").set_value("minilm-l6").run()
    _ok(at)
    assert any("minilm-l6 cannot read 9 of the 9 words" in w for w in _warnings(at))  # the lab's own notice
    at.button(key="pe_parts_model_switch").click().run()
    _ok(at)
    assert at.selectbox(key="pe_parts_model").value == E5 and not _warnings(at)


def test_positional_learned_comparison_offers_e5():
    at = _page(page_file("positional"), text=KO, model=E5, pe_tab=PE_TABS[2])
    _ok(at)
    picker = at.selectbox(key="pe_cmp_model")
    assert picker.value == E5 and "minilm-l6" in picker.options and "smollm2-135m" not in picker.options
    charts = _charts(at)
    assert any("Learned: 512 × 384" in c for c in charts) and any("Sinusoidal: 512 × 384" in c for c in charts)
    assert any(f"Learned ({E5})" in s.value for s in at.subheader)
    minilm = _charts(picker.set_value("minilm-l6").run())
    assert any("Learned (minilm-l6)" in s.value for s in at.subheader)
    assert minilm[0] != charts[0] and minilm[2] == charts[2]  # another learned table; the same sinusoidal one


def test_positional_rotary_model_says_its_positions_are_rotations():
    at = _page(page_file("positional"), model="smollm2-135m", lang="ko")
    _ok(at)
    assert any("회전" in i.value and "q" in i.value and "smollm2-135m은" in i.value for i in at.info)
    at = _page(page_file("positional"), model="smollm2-135m")
    assert any("rotations of each head's queries q and keys k" in i.value for i in at.info)
