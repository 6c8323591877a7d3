"""AppTest of the Training page (issue 36) through app.py: every tab in English and Korean, the link's task and
snapshot (a step outside the run, an unknown task: one notice each), a sentence outside the small model's
vocabulary, the snapshot slider, the lesson deck's "Add to deck", the tour's link, and the live run: closed without
the lecturer key, opened by the key or the server flag, one at a time, stopped, time-limited."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_support import assert_ok, charts
from streamlit.testing.v1 import AppTest

from analysis import training_live as live
from i18n import t
from ui import class_room as cr
from ui import training_page as tp
from ui import training_run as tr
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
KEY = "lecturer-key-train-42"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))
    monkeypatch.delenv(tr.LIVE_FLAG, raising=False)
    monkeypatch.delenv("HEADLIGHT_LECTURER_KEY", raising=False)


def _page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page_file("training")).run()
    assert_ok(at)
    return at


def _tab(at: AppTest, i: int, lang: str = "en") -> AppTest:
    at.session_state[tp.K_TAB] = t(tp.TAB_KEYS[i], lang)
    at.run()
    assert_ok(at)
    return at


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_tab_draws(lang):
    at = _page(lang=lang)
    assert at.title[0].value == t("train.title", lang)
    seen = {}
    for i in range(5):
        _tab(at, i, lang)
        seen[i] = charts(at)
    assert len(seen[0]) == 2 and t("train.sched.paper", lang, d=512, w=4000) in seen[0][0]  # the paper, the lab
    assert len(seen[1]) == 1 and t("train.smooth.onehot", lang) in seen[1][0]
    assert len(seen[2]) == 3 and len(seen[3]) == 2 and len(seen[4]) == 3
    assert not _warnings(at)
    # the two loss tables of label smoothing: torch's column equals the lab's
    _tab(at, 1, lang)
    for df in at.dataframe[:2]:
        frame = df.value
        assert (frame[t("train.col.torch", lang)] - frame[t("train.col.smoothed", lang, eps=0.1)]).abs().max() < 1e-3


def test_the_snapshot_slider_moves_the_view_and_the_link():
    at = _tab(_page(), tp.RUN_TAB)
    slider = at.select_slider(key=tp.K_SNAP)
    assert slider.value == 400 and len(slider.options) == 41
    assert at.query_params["snap"] == "400" and at.query_params["task"] == "reverse"
    slider.set_value(0).run()
    assert_ok(at)
    assert at.query_params["snap"] == "0" and at.metric[0].value == "0 / 400"
    figs = charts(at)
    assert "Step 0: cross-attention" in figs[1]
    at.select_slider(key=tp.K_SNAP).set_value(200).run()
    assert "Step 200: cross-attention" in charts(at)[1] and at.metric[0].value == "200 / 400"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_link_to_a_snapshot_and_a_bad_one(lang):
    at = _page(task="copy", snap="120", lang=lang)
    assert at.session_state[tp.K_TAB] == t(tp.TAB_KEYS[tp.RUN_TAB], lang)  # a snapshot's link opens the run
    assert at.select_slider(key=tp.K_SNAP).value == 120 and at.session_state[tp.K_TASK] == "copy"
    assert not _warnings(at)
    bad = _page(snap="999", lang=lang)
    warn = _warnings(bad)
    assert len(warn) == 1 and "999" in warn[0] and bad.select_slider(key=tp.K_SNAP).value == 400
    assert warn[0] == t("train.bad_snap", lang, value="999", first=0, last=400, every=10)
    for raw in ("abc", "-5", "15"):
        assert len(_warnings(_page(snap=raw, lang=lang))) == 1
    task = _page(task="sort", lang=lang)
    assert len(_warnings(task)) == 1 and "sort" in _warnings(task)[0] and task.session_state[tp.K_TASK] == "reverse"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_sentence_outside_the_vocabulary(lang):
    at = _tab(_page(lang=lang), 2, lang)
    at.text_input(key=tp.K_SENTENCE).input("the zebra saw a <script>alert(1)</script>").run()
    assert_ok(at)
    warn = _warnings(at)
    assert len(warn) == 1 and "zebra" in warn[0] and not charts(at)
    at.text_input(key=tp.K_SENTENCE).input("cat " * 12).run()
    assert len(_warnings(at)) == 1 and "12" in _warnings(at)[0]
    at.text_input(key=tp.K_SENTENCE).input("나는 고양이가 졸리다").run()
    assert not _warnings(at) and len(charts(at)) == 3
    _tab(at, 3, lang)  # dropout reads the same sentence
    assert not _warnings(at) and len(charts(at)) == 2


def test_the_page_can_be_added_to_the_deck():
    at = _tab(_page(task="swap"), tp.RUN_TAB)
    at.select_slider(key=tp.K_SNAP).set_value(100).run()
    at.button(key="deck_add").click().run()
    assert_ok(at)
    deck = at.session_state["_deck"]
    slide = deck.slides[-1]
    assert slide.page == "training" and slide.query["task"] == "swap" and slide.query["snap"] == "100"
    assert slide.query["train_tab"] == "run" and "train_tab" not in slide.options  # the tab by its id, in the link


def test_a_deck_slide_of_the_page_opens_its_snapshot():
    at = _tab(_page(task="swap"), tp.RUN_TAB)
    at.select_slider(key=tp.K_SNAP).set_value(100).run()
    at.button(key="deck_add").click().run()
    at.switch_page(page_file("deck")).run()
    assert_ok(at)
    at.button(key="deck_from_0").click().run()  # present it: the Training page, its task, tab and snapshot
    assert_ok(at)
    assert at.title[0].value == t("train.title", "en")
    assert at.session_state[tp.K_TASK] == "swap" and at.select_slider(key=tp.K_SNAP).value == 100
    assert at.metric[0].value == "100 / 400" and not _warnings(at)


def test_the_tour_links_to_the_page():
    from ui import tour

    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["step"] = str(tour.STEPS.index("output") + 1)
    at.run()
    at.switch_page(page_file("tour")).run()
    assert_ok(at)
    links = [e for e in at.get("page_link")]
    assert any(t("train.tour_link", "en") in str(e.proto.label) for e in links)


# ---- the live run -------------------------------------------------------------------------------------------------
def _live(at: AppTest) -> AppTest:
    return _tab(at, 5)


def test_live_run_closed_without_key_or_flag():
    at = _live(_page())
    assert any(tr.LIVE_FLAG in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "train_live_start"]


def test_live_run_needs_the_lecturer_key(monkeypatch):
    monkeypatch.setenv("HEADLIGHT_LECTURER_KEY", KEY)
    ticks = iter(range(0, 100_000, 100))  # 100 s between tries: past the wait a wrong key earns
    monkeypatch.setattr(cr, "clock", lambda: next(ticks))
    at = _live(_page())
    assert not [b for b in at.button if b.key == "train_live_start"]
    at.text_input(key="train_key").input("wrong")
    next(b for b in at.button if b.label == t("class.key_submit", "en")).click().run()
    assert [e.value for e in at.error] == [t("class.key_wrong", "en")]
    at.text_input(key="train_key").input(KEY)
    next(b for b in at.button if b.label == t("class.key_submit", "en")).click().run()
    assert_ok(at)
    assert [b for b in at.button if b.key == "train_live_start"]


@pytest.fixture
def runner(monkeypatch):
    r = live.LiveRunner(limit_s=1.0)
    monkeypatch.setattr(live, "RUNNER", r)
    monkeypatch.setenv(tr.LIVE_FLAG, "1")
    yield r
    for run in list(r._runs.values()):
        run.stop()
        run.join(60)


def test_live_run_starts_shows_and_ends(runner):
    at = _live(_page())
    at.button(key="train_live_start").click().run()
    assert_ok(at)
    run = runner.get(at.session_state[tr.K_LIVE])
    assert run is not None
    run.join(120)
    at.run()
    assert_ok(at)
    state = run.status().state
    assert state in ("done", "limit")
    shown = [w.value for w in at.warning] + [s.value for s in at.success]
    assert shown and ("1 s" in shown[0] or "Done" in shown[0])
    assert len(charts(at)) == 3 and at.metric[0].value.endswith("/ 400")


def test_live_run_while_one_runs_and_a_stopped_run(runner):
    runner.limit_s = 120.0
    other = runner.start(tr.an.LabSettings(task="copy", seed=1))  # another session's run
    at = _live(_page())
    assert at.caption and t("train.live.other", "en") in [c.value for c in at.caption]
    at.button(key="train_live_start").click().run()
    assert _warnings(at) == [t("train.live.busy", "en")]
    other.stop()
    other.join(120)
    at.button(key="train_live_start").click().run()
    mine = runner.get(at.session_state[tr.K_LIVE])
    at.button(key="train_live_stop").click().run()
    mine.join(120)
    at.run()
    assert mine.status().state == "stopped"
    assert any(t("train.live.state.stopped", "en", step=mine.status().step, steps=400, s=mine.status().elapsed_s,
                 limit=120, task="", seed=0)[:20] in w for w in _warnings(at))
    at.button(key="train_live_stop").click().run()  # stopping a run that ended: one message
    assert t("train.live.not_running", "en") in [i.value for i in at.info]
