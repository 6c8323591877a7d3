"""AppTest of the Attention explorer page (through app.py, so the shared sidebar and error boundary are real):
the default sentence, a 512-token text, hostile inputs, widgets by key change what is drawn, options, and the
encoder-decoder block selector."""

import json
from pathlib import Path

import pytest
from apptest_support import HOSTILE, open_tab
from apptest_support import assert_ok as _ok
from apptest_support import charts as _charts
from apptest_support import explorer_charts as _all_charts
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()






def test_default_sentence_draws_every_section():
    at = _app()
    _ok(at)
    assert at.title[0].value == "Attention explorer"
    assert len(_charts(at)) == 1  # only the open tab is built and sent
    charts = _all_charts(at)
    assert len(charts) == 3  # one head, all heads, token view
    assert '"%{y} -> %{x}: %{z:.3f}<extra></extra>"' in charts[0]
    assert "Layer 0 · Head 0" in charts[0]  # the title counts from 0
    assert len(at.dataframe) == 1  # top-attended table (token view)
    assert len(open_tab(at, "Head metrics").dataframe) == 1  # head metrics
    assert at.session_state["token"] == 10  # "it" is preselected in the flagship sentence
    assert at.query_params["layer"] == ["0"] or at.query_params["layer"] == "0"


@pytest.mark.parametrize("key,value", [("layer", 3), ("head", 7), ("token", 4)])
def test_changing_layer_head_token_changes_the_drawing(key, value):
    at = _app()
    before = _all_charts(at)
    at.selectbox(key=key).set_value(value).run()
    _ok(at)
    after = _all_charts(at)
    assert after != before
    if key == "layer":
        assert "Layer 3 · Head 0" in after[0]
    if key == "head":
        assert "Layer 0 · Head 7" in after[0] and after[2] == before[2]  # the token view shows every head anyway
    if key == "token":
        assert after[2] != before[2]  # the token view is per token; the heatmap is per head, its chosen row framed
        a, b = json.loads(after[0]), json.loads(before[0])
        assert a["data"] == b["data"] and a["layout"]["shapes"] != b["layout"]["shapes"]
    qp = at.query_params[key]
    assert (qp[0] if isinstance(qp, list) else qp) == str(value)  # mirrored in the URL


@pytest.mark.parametrize("mode", ["mean", "rollout"])
@pytest.mark.parametrize("hide,merge", [(False, False), (True, True)])
def test_options_render(mode, hide, merge):
    at = _app()
    at.segmented_control(key="ex_mode").set_value(mode)
    at.toggle(key="ex_hide_special").set_value(hide)
    at.toggle(key="ex_merge_words").set_value(merge)
    at.run()
    _ok(at)
    heat = _charts(at)[0]
    assert ("mean of heads" if mode == "mean" else "Rollout through layers 0-0") in heat
    assert ("[CLS]" in heat) != hide
    assert ("didn't" in heat) == merge  # merged "didn ' t" is one word


def test_grid_coloured_by_metric_and_metrics_table_sortable_data():
    at = _app()
    open_tab(at, "All heads").selectbox(key="ex_grid_colour").set_value("special").run()
    _ok(at)
    assert "Mass on [CLS]/[SEP]" in _charts(at)[0]
    table = open_tab(at, "Head metrics").dataframe[0].value
    assert len(table) == 72 and {"Layer", "Head", "Entropy (bits)", "Mean distance (tokens)"} <= set(table.columns)
    assert table["Mass on [CLS]/[SEP]"].mean() > 0.3  # MiniLM sends a large share of attention to [CLS]/[SEP]


def test_top_attended_table_for_it():
    at = open_tab(_app(), "Token view")
    table = at.dataframe[0].value
    assert len(table) == 72 and set(table.columns) == {"Layer", "Head", "Most attended", "Position", "Weight"}
    assert (table["Weight"] > 0).all() and (table["Weight"] <= 1).all()


def test_token_heads_toggle():
    at = open_tab(_app(), "Token view")
    before = _charts(at)[0]
    at.multiselect(key="ex_heads-12").set_value([0, 3]).run()
    _ok(at)
    after = _charts(at)[0]
    assert after != before and '"Head 3"' in after and '"Head 5"' not in after


def test_512_token_text_is_truncated_and_still_works():
    at = _app(text="word " * 700)
    _ok(at)
    assert any("only the first 512" in w.value for w in at.warning)
    charts = _all_charts(at)
    assert len(charts) == 3
    assert sum(len(c) for c in charts) < 5_000_000  # what the page ships as figures, all tabs together
    at.selectbox(key="head").set_value(5).run()
    _ok(at)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_inputs(name):
    at = _app()
    at.text_area(key="text").input(HOSTILE[name]).run()
    _ok(at)
    if name in ("empty", "whitespace"):
        assert any("Type a sentence" in i.value for i in at.info)
        assert not _charts(at)
        return
    charts = _all_charts(at)
    assert len(charts) == 3
    if name == "script":
        assert "<script" not in "".join(charts)  # escaped in every label and title
        assert "&lt;" in charts[0]
    if name == "emoji":
        assert "[UNK]" in charts[0]  # shown as the tokenizer sees it


def test_encoder_decoder_blocks():
    at = _app(model="paper-base")
    _ok(at)
    assert any("Untrained" in c.value for c in at.sidebar.caption)
    for block in ("decoder_self", "cross"):
        at.radio(key="block").set_value(block).run()
        _ok(at)
        assert ("Cross-attention" if block == "cross" else "Decoder self-attention") in _charts(at)[0]
    assert "rollout" not in at.segmented_control(key="ex_mode").options


def test_grid_click_selection_maps_to_layer_and_head():
    from ui.widgets import head_from_selection

    # what st.plotly_chart keeps in session state after a click on the marker of layer 4, head 9
    state = {"selection": {"points": [{"customdata": [4, 9], "point_index": 57}], "point_indices": [57]}}
    assert head_from_selection(state) == (4, 9)
    # a typed-array slice of customdata arrives as an object with string indices
    assert head_from_selection({"selection": {"points": [{"customdata": {"0": 2, "1": 3}}]}}) == (2, 3)
    assert head_from_selection({"selection": {"points": [{"customdata": None}]}}) is None
    assert head_from_selection({"selection": {"points": []}}) is None
    assert head_from_selection(None) is None


@pytest.mark.parametrize("key", ["ex_head_chart-export", "ex_grid-export", "ex_token_chart-export"])
@pytest.mark.parametrize("fmt", ["png", "csv"])
def test_exports_render(key, fmt):
    at = _app(text="The 동물 didn't cross the $5 street because it was tired")
    open_tab(at, {"ex_head_chart-export": "One head", "ex_grid-export": "All heads", "ex_token_chart-export": "Token view"}[key])
    (pop,) = [p for p in at.get("popover") if p.proto.popover.id.endswith(f"{key}-popover")]
    assert pop.proto.popover.open is False and list(pop.children.values()) == []  # closed: nothing drawn in it
    at.session_state[f"{key}-popover"] = True  # the user opens it
    at.run()
    at.radio(key=f"{key}-fmt").set_value(fmt).run()
    _ok(at)
    assert any(b.proto.label.startswith("Download") for b in at.get("download_button"))


def test_trace_downloads_are_offered():
    at = open_tab(_app(), "Data")
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Trace as NPZ" in labels and "Trace as JSON" in labels


def test_trace_download_bytes_round_trip(minilm, tmp_path):
    import numpy as np

    from model.trace import AttentionTrace
    from ui.explorer import trace_json_bytes, trace_npz_bytes

    trace = minilm.trace("I am good", intermediates=True)
    path = tmp_path / "t.npz"
    path.write_bytes(trace_npz_bytes(trace))
    back = AttentionTrace.load_npz(path)
    assert back.source_tokens == trace.source_tokens
    np.testing.assert_allclose(back.encoder_attention, trace.encoder_attention)
    data = json.loads(trace_json_bytes(trace))
    assert data["source_tokens"] == trace.source_tokens
    assert np.asarray(data["encoder_attention"]).shape == trace.encoder_attention.shape
