"""AppTest of the Head lab (through app.py): the preset minimal pair ranks Layer 3 · Head 1 first and marks
Layer 4 · Head 0 flipped; every tab renders; head surgery and the rank-all grid; hostile pairs get messages; the
pair and the heads live in the URL."""

from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok as _ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGE = page_file("heads")


def _lab(tab: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(PAGE).run()
    if tab:
        at.session_state["hl_tab"] = tab
        at.run()
    return at


def test_preset_pair_surfaces_the_two_heads():
    at = _lab()
    _ok(at)
    table = at.table[0].value
    assert table["Head"].iloc[0] == "Layer 3 · Head 1"
    flipped = table[table["Flipped"] != ""]["Head"].tolist()
    assert flipped == ["Layer 4 · Head 0"]
    assert len(_charts(at)) == 2  # the change grid and the Δ heatmap


@pytest.mark.parametrize("a,b,query,expect", [
    ("The animal didn't cross the street because it was tired", "", "it", "empty"),
    ("it is what it is", "it was what it was", "it", "2 times"),
    ("The animal crossed the street", "The animal crossed the road", "it", "not"),
])
def test_hostile_pairs_get_a_message(a, b, query, expect):
    at = _lab()
    at.text_input(key="hl_a").set_value(a)
    at.text_input(key="hl_b").set_value(b)
    at.text_input(key="hl_query").set_value(query).run()
    _ok(at)
    assert any(expect in i.value.lower() for i in at.info), [i.value for i in at.info]


def test_a_link_reopens_the_pair_and_the_heads():
    at = _lab("Head surgery", hl_b="The animal didn't cross the street because it was wide", hl_heads="3.1")
    _ok(at)
    assert at.multiselect(key="hl_heads").value == ["3.1"]
    at.session_state["hl_tab"] = "Minimal pairs"
    at.run()
    assert at.text_input(key="hl_b").value.endswith("wide")


def test_pair_of_different_lengths_aligns():
    at = _lab()
    at.text_input(key="hl_b").set_value("The old animal didn't cross the busy street because it was very tired").run()
    _ok(at)
    assert at.table and len(_charts(at)) == 2


@pytest.mark.parametrize("tab", ["Head surgery", "Beyond raw weights", "Head atlas"])
def test_every_tab_renders(tab):
    at = _lab(tab)
    _ok(at)
    assert _charts(at)


def test_surgery_changes_the_output_and_rank_all():
    at = _lab("Head surgery")
    before = _charts(at)
    at.multiselect(key="hl_heads").set_value(["3.1", "4.0"]).run()
    _ok(at)
    assert _charts(at) != before
    at.toggle(key="hl_rank").set_value(True).run()
    _ok(at)
    assert len(at.dataframe[0].value) == 12


def test_seq2seq_tiny_surgery_and_logit_lens():
    at = _lab("Head surgery", model="seq2seq-tiny", text="the cat sat on the mat")
    _ok(at)
    # no head ablated, task Copy: the output is unchanged and is the right answer, so a success and no warning
    assert at.multiselect(key="hl_heads").value == [] and at.radio(key="hl_task").value == "copy"
    assert [c.value for c in at.code] == ["before: the cat sat on the mat <eos>\nafter:  the cat sat on the mat <eos>"]
    assert [s.value for s in at.success] == ["After the ablation the output is still the Copy answer."]
    assert not at.warning
    # every cross-attention head ablated: the decoder no longer sees the source, the answer is lost: a warning only
    at.multiselect(key="hl_heads").set_value([f"cross:{i}.{h}" for i in range(2) for h in range(4)]).run()
    _ok(at)
    before, after = at.code[0].value.split("\n")
    assert before == "before: the cat sat on the mat <eos>" and after != "after:  the cat sat on the mat <eos>"
    assert [w.value for w in at.warning] == ["After the ablation the output is no longer the Copy answer."]
    assert not at.success
    at.session_state["hl_tab"] = "Beyond raw weights"
    at.run()
    _ok(at)
    assert sum("Logit lens at step " in c for c in _charts(at)) == 1  # the lens figure's own title (viz.heads)


def _z(spec: str):
    import base64
    import json

    import numpy as np

    z = json.loads(spec)["data"][0]["z"]
    if isinstance(z, dict):  # plotly's typed array
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"])
    return np.asarray(z, dtype=float).ravel()


def _maps(at) -> tuple:
    charts = dict(zip([c.proto.id for c in at.get("plotly_chart")], _charts(at)))
    specs = [s for s in charts.values() if "Before, " in s or "After ablation, " in s]
    assert len(specs) == 2, list(charts)
    return tuple(specs)


def test_surgery_maps_show_a_layer_after_the_removed_heads_and_differ():
    at = _lab("Head surgery", hl_heads=["3.1", "4.0"])
    _ok(at)
    assert at.selectbox(key="hl_map_layer").options == ["Layer 5"]  # the only layer after Layer 4
    before, after = _maps(at)
    assert "Layer 5 · Head 0" in before and "Layer 5 · Head 0" in after  # the sidebar's head, in Layer 5
    assert not np.allclose(_z(before), _z(after))  # the ablation reached this head: the maps differ
    assert any("after the removed heads" in c.value and "Largest change of a weight here" in c.value
               for c in at.caption)
    (delta,) = [c for c in _charts(at) if "After − before, Layer 5 · Head 0" in c]
    assert np.allclose(_z(delta), _z(after) - _z(before), atol=1e-6)


def test_surgery_maps_follow_the_sidebar_layer_when_it_is_after_the_heads():
    at = _lab("Head surgery", hl_heads="1.0", layer="4", head="2")
    _ok(at)
    assert at.selectbox(key="hl_map_layer").value == 4 and at.selectbox(key="hl_map_layer").options == [
        "Layer 2", "Layer 3", "Layer 4", "Layer 5"]
    before, after = _maps(at)
    assert "Layer 4 · Head 2" in before and not np.allclose(_z(before), _z(after))
    at.selectbox(key="hl_map_layer").set_value(2).run()
    before, after = _maps(at)
    assert "Layer 2 · Head 2" in after and not np.allclose(_z(before), _z(after))


def test_surgery_in_the_last_layer_says_no_map_can_change_and_shows_the_output_change():
    at = _lab("Head surgery", hl_heads="5.3", lang="ko")
    _ok(at)
    assert any("마지막 레이어(레이어 5)" in i.value for i in at.info)
    assert at.metric and float(at.metric[0].value) > 0  # the sentence embedding changed
    assert not [c for c in _charts(at) if "제거 전" in c]


def _query(at: AppTest, key: str) -> list[str]:
    """A parameter of the page's URL as the app last wrote it (AppTest keeps a single value as a string)."""
    v = at.query_params.get(key, [])
    return [v] if isinstance(v, str) else list(v)


def test_the_ablation_lives_in_the_link_by_its_id_in_either_language():
    """A bound selectbox would write its shown label ("Keep only the chosen heads of the layer", or the Korean one)
    into the URL, and a link from the other language would reopen as "zero": the ablation is bound by its id, and the
    label a link of before holds reads as its id."""
    from i18n import t

    at = _lab("Head surgery", hl_heads="3.1", hl_mode="keep", lang="ko")
    _ok(at)
    assert at.selectbox(key="hl_mode").value == "keep"
    assert _query(at, "hl_mode") == ["keep"]
    old = _lab("Head surgery", hl_heads="3.1", hl_mode=t("heads.ablation.mean", "ko"))  # a Korean link of before
    _ok(old)
    assert old.selectbox(key="hl_mode").value == "mean" and _query(old, "hl_mode") == ["mean"]
    old.selectbox(key="hl_mode").set_value("zero").run()
    _ok(old)
    assert _query(old, "hl_mode") == []  # the default is not written
    junk = _lab("Head surgery", hl_heads="3.1", hl_mode="<script>")
    _ok(junk)
    assert junk.selectbox(key="hl_mode").value == "zero"
