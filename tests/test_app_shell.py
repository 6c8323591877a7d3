"""AppTest of the app shell: navigation, the shared sidebar, URL state (read once, validated, mirrored), state that
survives page switches, lecture mode, and the error boundary that turns exceptions into a short st.error."""

from pathlib import Path

import pytest
from apptest_support import assert_ok as _ok
from streamlit.testing.v1 import AppTest

from ui.pages import page_file

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGES = [page_file("explorer"), page_file("positional"), page_file("masks"), page_file("steps"), page_file("seq2seq")]


def _app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def _qp(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v




def test_default_view_and_url_mirror():
    at = _app()
    _ok(at)
    assert at.text_area(key="text").value == "The animal didn't cross the street because it was tired"
    assert at.selectbox(key="model").value == "minilm-l6"
    assert {k: _qp(at, k) for k in ("model", "layer", "head", "token")} == \
        {"model": "minilm-l6", "layer": "0", "head": "0", "token": "10"}
    assert _qp(at, "text") == at.text_area(key="text").value


def test_link_reopens_the_exact_view():
    at = _app(text="A dog ate the food because it was hungry", model="minilm-l6", layer="3", head="1", token="2")
    _ok(at)
    assert not at.warning
    assert at.text_area(key="text").value == "A dog ate the food because it was hungry"
    assert (at.session_state["layer"], at.session_state["head"], at.session_state["token"]) == (3, 1, 2)
    assert at.selectbox(key="layer").value == 3 and at.selectbox(key="head").value == 1


@pytest.mark.parametrize("params,expect", [
    ({"layer": "99"}, "Layer 99"),
    ({"head": "-1"}, "Head -1"),
    ({"layer": "two"}, "not a whole number"),
    ({"token": "999"}, "Token 999"),
    ({"model": "gpt-17"}, "Unknown model"),
    ({"device": "tpu"}, "Device"),
    ({"block": "cross"}, "does not exist for minilm-l6"),
    ({"text": "x" * 100_000}, "100,000 characters"),
])
def test_invalid_url_values_fall_back_with_a_notice(params, expect):
    at = _app(**params)
    _ok(at)
    assert any(expect in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["layer"] in range(6) and at.session_state["head"] in range(12)
    if "model" in params:
        assert at.selectbox(key="model").value == "minilm-l6"
    if "text" in params:
        assert at.text_area(key="text").value.startswith("The animal")


def test_link_values_in_notices_are_literal_text():
    at = _app(model="[x](javascript:alert(1)) <img src=x onerror=alert(1)>", layer="**9**")
    _ok(at)
    text = " ".join(w.value for w in at.warning)
    assert r"\[x\]\(javascript" in text and r"\<img" in text  # escaped: shown as text, never a link or HTML
    assert r"\*\*9\*\*" in text


def test_notice_goes_away_once_the_user_changes_something():
    at = _app(layer="99")
    assert at.warning
    at.selectbox(key="head").set_value(2).run()
    _ok(at)
    assert not at.warning


def test_layer_and_head_clamped_when_the_model_changes():
    at = _app(layer="5", head="11")
    at.selectbox(key="model").set_value("paper-base").run()
    _ok(at)
    assert at.session_state["head"] == 7 and at.session_state["layer"] == 5  # paper-base has 8 heads
    assert _qp(at, "model") == "paper-base" and _qp(at, "head") == "7"


def test_preset_fills_the_text_box():
    at = _app()
    at.selectbox(key="preset").set_value("I am good").run()
    _ok(at)
    assert at.text_area(key="text").value == "I am good"
    assert _qp(at, "text") == "I am good"


def test_lecture_mode_is_mirrored_and_enlarges_figures():
    at = _app()
    normal = at.get("plotly_chart")[0].proto.spec
    at.toggle(key="lecture").set_value(True).run()
    _ok(at)
    assert _qp(at, "lecture") == "1"
    big = at.get("plotly_chart")[0].proto.spec
    assert '"font":{"size":20}' in big and '"font":{"size":20}' not in normal


@pytest.mark.parametrize("page", [p for p in PAGES[1:] if (ROOT / p).exists()])
def test_state_survives_page_switches(page):
    at = _app()
    at.text_area(key="text").input("I am good")
    at.selectbox(key="layer").set_value(2)
    at.toggle(key="ex_hide_special").set_value(True)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]  # (the page may show its own st.error content)
    assert at.text_area(key="text").value == "I am good" and at.session_state["layer"] == 2
    at.switch_page(page_file("explorer")).run()
    _ok(at)
    assert at.text_area(key="text").value == "I am good" and at.selectbox(key="layer").value == 2
    assert at.toggle(key="ex_hide_special").value is True  # the explorer's own options survive too


def test_error_boundary_shows_a_short_error_not_a_traceback(monkeypatch):
    import ui.explorer

    def boom(*a, **k):
        raise RuntimeError("internal detail that users should not see")

    monkeypatch.setattr(ui.explorer, "heatmap", boom)
    at = _app()
    assert not at.exception
    assert len(at.error) == 1 and "Something went wrong" in at.error[0].value
    assert "internal detail" not in at.error[0].value


def test_headlight_errors_are_shown_as_they_are(monkeypatch):
    import ui.explorer
    from model.errors import InputError

    def bad(*a, **k):
        raise InputError("That option needs a square matrix.")

    monkeypatch.setattr(ui.explorer, "heatmap", bad)
    at = _app()
    assert not at.exception
    assert [e.value for e in at.error] == ["That option needs a square matrix."]


def test_callback_errors_become_a_notice():
    """Callbacks run before the page, outside app.py's boundary: safe_callback logs, stores a notice, never raises."""
    from ui.state import CALLBACK_ERROR, safe_callback

    @safe_callback
    def broken():
        raise KeyError(0)

    assert broken() is None  # swallowed (outside a script run there is no session to store the notice in)
    at = _app()
    at.session_state[CALLBACK_ERROR] = "That action failed (KeyError); the view is unchanged."
    at.run()
    assert not at.exception
    assert any("That action failed" in w.value for w in at.warning)
    at.run()
    assert not any("That action failed" in w.value for w in at.warning)  # shown once


def test_error_boundary_also_guards_reruns(monkeypatch):
    """Reruns go through app.py too (the pages live in app_pages/, so Streamlit's legacy pages/ mode, which would
    run the page file directly and skip the boundary, never starts)."""
    import ui.explorer

    at = _app()
    _ok(at)

    def boom(*a, **k):
        raise RuntimeError("internal")

    monkeypatch.setattr(ui.explorer, "heatmap", boom)
    at.selectbox(key="head").set_value(2).run()
    assert not at.exception
    assert len(at.error) == 1 and "Something went wrong" in at.error[0].value


def test_server_settings_for_a_lecture_hall():
    """The settings `make run` serves with: no source-file watcher (with it, 0.20 s of server CPU per script run under
    30 students, ~75 % of it watchdog and module-path mapping; off: 0.02 s), no post-run gc.collect(2), no
    tracebacks to users."""
    import tomllib

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert cfg["server"]["fileWatcherType"] == "none"
    assert cfg["server"]["runOnSave"] is False
    assert cfg["runner"]["postScriptGC"] is False
    assert cfg["client"]["showErrorDetails"] == "none"
