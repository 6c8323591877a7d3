"""Korean interface of the Attention explorer, the Head lab and the shared shell (issue: with lang=ko, no
English-only string outside model names, token text and formulas), and the explorer's "predict, then reveal" quiz
(ui/quiz.py, shared with the tour) in both languages.

Every page is opened through app.py (the real shell and sidebar) with `?lang=ko`; every lazy tab is opened by its
Korean label; `english_only(page_texts(at), tokens)` must be empty, where tokens = the trace's token texts (the
sidebar's query-token options) plus the example sentences the sidebar offers (content, not interface)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok, charts, open_tab
from i18n_support import english_only, page_texts
from streamlit.testing.v1 import AppTest

from analysis import metrics as am
from i18n import head_name, t
from model.examples import EXAMPLE_SENTENCES, TRANSLATION_SENTENCES
from ui import explorer as ex
from ui import heads as uh
from ui import quiz
from ui.pages import page_file
from ui.view import md_escape

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
HEADS = page_file("heads")
BRIEF = "The animal didn't cross the street because it was tired"


def _app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    return at


def _tokens(at) -> list[str]:
    """The sentence's tokens (the sidebar's query-token options, "i: token") and the example sentences."""
    opts = [str(o).split(": ", 1)[-1] for o in at.selectbox(key="token").options]
    return [*opts, *EXAMPLE_SENTENCES, *TRANSLATION_SENTENCES]  # the presets are sentences, not interface text


def _no_english(at) -> None:
    assert_ok(at)
    left = english_only(page_texts(at), _tokens(at))
    assert left == [], left


# ---- Korean everywhere ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("model", ["minilm-l6", "seq2seq-tiny"])
def test_explorer_in_korean_has_no_english_only_text(model):
    at = _app(lang="ko", model=model)
    assert at.title[0].value == t("page.explorer", "ko")
    assert at.sidebar.selectbox(key="lang").value == "ko"
    _no_english(at)  # the sidebar (shell) and the first tab
    for key in ex.TAB_KEYS:
        open_tab(at, t(key, "ko"))
        _no_english(at)
        assert [tab.label for tab in at.tabs] == [t(k, "ko") for k in ex.TAB_KEYS]
    if model == "seq2seq-tiny":  # the other attention blocks
        for block in ("decoder_self", "cross"):
            at.radio(key="block").set_value(block).run()
            for key in ex.TAB_KEYS[:3]:
                open_tab(at, t(key, "ko"))
                _no_english(at)
    else:  # the options: average of heads, rollout, hidden specials, merged words, a grid coloured by a metric
        at.session_state[ex.K_MODE] = "rollout"
        at.session_state[ex.K_HIDE] = True
        at.session_state[ex.K_MERGE] = True
        for key in ex.TAB_KEYS[:3]:
            open_tab(at, t(key, "ko"))
            _no_english(at)
        at.session_state[ex.K_COLOUR] = "prev"
        open_tab(at, t("ex.tab.all", "ko"))
        _no_english(at)
        assert charts(at)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["minilm-l6", "seq2seq-tiny"])
def test_head_lab_in_korean_has_no_english_only_text(model):
    at = _app(lang="ko", model=model)
    at.switch_page(HEADS).run()
    assert at.title[0].value == t("heads.page", "ko")
    _no_english(at)
    tabs = uh.TAB_KEYS if model == "minilm-l6" else uh.TAB_KEYS[1:3]  # surgery / lens: the decoder branches
    for key in tabs:
        open_tab(at, t(key, "ko"), uh.K_TAB)
        _no_english(at)
        if key in ("heads.tab.generation", "heads.tab.cause") and model == "minilm-l6":  # an encoder: the notice
            assert at.info[0].value == t("cause.need_lm", "ko", model=model), key
        else:
            assert charts(at), key
        if key == "heads.tab.surgery" and model == "minilm-l6":
            at.toggle(key="hl_rank").set_value(True).run()
            _no_english(at)


def test_shell_notices_in_korean():
    """URL notices from the shell / state (read before the sidebar exists) are in the link's language."""
    at = _app(lang="ko", layer="99", head="x", model="gpt-17")
    notices = [w.value for w in at.warning]
    assert len(notices) == 3 and not english_only(notices, _tokens(at)), notices
    at = _app(layer="99")
    assert any("Layer 99 from the link does not exist" in w.value for w in at.warning)


def test_language_switch_keeps_the_open_tab():
    """The lazy tab's state is its label: switching the language maps it to the same tab in the new language, and a
    label of no language falls back to the first tab."""
    at = open_tab(_app(), "Head metrics")
    assert at.dataframe and at.session_state[ex.K_TAB] == "Head metrics"
    at.sidebar.selectbox(key="lang").set_value("ko").run()
    assert_ok(at)
    assert at.session_state[ex.K_TAB] == t("ex.tab.metrics", "ko")
    assert at.dataframe and "헤드" in " ".join(at.dataframe[0].value.columns)
    at.sidebar.selectbox(key="lang").set_value("en").run()
    assert at.session_state[ex.K_TAB] == "Head metrics" and at.dataframe
    open_tab(at, "No such tab")
    assert_ok(at)
    assert at.session_state[ex.K_TAB] == "One head" and charts(at)


def test_head_lab_tab_label_of_another_language():
    """The Head lab's tab is bound to the URL (hl_tab=<label>): an English label opens the same tab in Korean."""
    at = _app(lang="ko")
    at.switch_page(HEADS).run()
    at.session_state[uh.K_TAB] = "Head surgery"
    at.run()
    assert_ok(at)
    assert at.session_state[uh.K_TAB] == t("heads.tab.surgery", "ko")
    assert at.get("multiselect") and at.multiselect(key="hl_heads").label == t("heads.surgery.heads", "ko")


# ---- the explorer's quiz ----------------------------------------------------------------------------------------
def _reveal(at, qid: str, guess: int) -> AppTest:
    at.session_state[f"{qid}_guess"] = guess
    at.run()
    assert_ok(at)
    at.button(key=f"{qid}_reveal").click().run()
    assert_ok(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_explorer_quiz(lang, minilm):
    at = _app(lang=lang, text=BRIEF, layer="0", head="0", token="10")
    at.toggle(key=ex.K_QUIZ).set_value(True).run()
    assert_ok(at)
    assert at.toggle(key=ex.K_QUIZ).label == t("ex.quiz", lang)
    assert not charts(at), "One head: the heatmap (the answer) is hidden until the reveal"
    question = t("quiz.attend.q", lang, token="it", where=head_name(0, 0, lang))
    assert question in [w.label for w in at.get("button_group")]

    guess = 2  # "animal"
    row = np.asarray(minilm.trace(BRIEF).attention("encoder")[0, 0, 10], dtype=np.float64)
    weight, rank = row[guess], 1 + int((row > row[guess]).sum())
    qid = quiz._qid("attend", "minilm-l6", BRIEF, 0, 0, 10, "encoder", False, False)
    _reveal(at, qid, guess)
    verdicts = [v.value for v in (*at.success, *at.warning)]
    answer = int(row.argmax())
    label = md_escape(at.selectbox(key="token").options[answer])  # "j: token", as the quiz labels the keys
    assert t("quiz.right" if guess == answer else "quiz.wrong", lang, answer=label) in verdicts, verdicts
    detail = [m.value for m in at.markdown if f"{weight:.3f}" in m.value]
    assert detail and f"**{rank}**" in detail[0], [m.value for m in at.markdown]
    assert at.session_state[quiz.SCORE]["asked"] == 1
    assert any(c.value == t("quiz.score", lang, right=int(guess == answer), asked=1) for c in at.caption)
    heat = [c for c in charts(at) if "%{y} -> %{x}" in c]
    assert heat, "the reveal shows the real weights (the heatmap) again"
    if lang == "ko":
        _no_english(at)

    at = open_tab(at, t("ex.tab.all", lang))
    assert not charts(at), "All heads: the grid is hidden until the reveal"
    mass = am.head_metrics(minilm.trace(BRIEF).attention("encoder"))["prev"][0]  # mass on the previous token
    qid = quiz._qid("prev", "minilm-l6", BRIEF, 0)
    _reveal(at, qid, 0)
    assert at.session_state[quiz.SCORE]["asked"] == 2
    assert any(f"{mass[0]:.3f}" in m.value for m in at.markdown), [m.value for m in at.markdown]
    assert len(charts(at)) >= 2  # the per-head bars and the grid
    assert any(c.value.startswith(t("quiz.score", lang, right=0, asked=2)[:4]) for c in at.caption)
    if lang == "ko":
        _no_english(at)


# ---- the catalogue ---------------------------------------------------------------------------------------------
USERS = ["ui/explorer.py", "ui/heads.py", "ui/widgets.py", "ui/state.py", "ui/shell.py", page_file("explorer"),
         page_file("heads"), "viz/attention.py", "viz/heads.py", "viz/heatmap.py"]


def test_keys_used_exist_in_both_languages():
    import re

    from analysis import atlas
    from analysis.explore import MODES
    from analysis.heads import ABLATIONS
    from i18n import catalogue

    used = set()
    for path in USERS:
        src = (ROOT / path).read_text(encoding="utf-8")
        used |= set(re.findall(r"\btr?\(\s*[\"']([a-z_]+\.[a-z_.]+)[\"']", src))
    used |= set(ex.TAB_KEYS) | set(uh.TAB_KEYS) | {f"col.{c}" for c in ("layer", "head", "rank", "change", "flipped", "a_w", "b_w", "pref_a", "pref_b")}
    used |= {f"ex.mode.{m}" for m in MODES} | {f"ex.metric.{k}" for k in am.METRICS}
    used |= {f"ex.head_name.{m}" for m in ("mean", "rollout")} | {f"ex.block.{b}" for b in ("decoder_self", "cross")}
    used |= {f"heads.ablation.{m}" for m in ABLATIONS} | {f"heads.mode.{m}" for m in ABLATIONS}
    used |= {f"heads.atlas.{k}" for k in [*atlas.TOP_LABELS, "coref_mass"]}
    used |= {f"heads.atlas.cell.{k}" for k in atlas.TOP_LABELS}
    used |= {f"shell.unit.{u}" for u in ("layer", "head", "token")} | {"heads.beyond.weights", "heads.beyond.norms"}
    used |= {f"heads.note.{k}" for k in ("pairs", "norms", "flow", "surgery", "lens")}
    used |= {f"heads.viz.{w}_word" for w in ("before", "after")}
    for lang in ("en", "ko"):
        missing = sorted(k for k in used if k not in catalogue(lang))
        assert not missing, (lang, missing)
    assert len(used) > 150
    # the English text is what the pages showed before they were translated (existing tests match on it)
    assert [t(k, "en") for k in ex.TAB_KEYS] == ["One head", "All heads", "Token view", "Head metrics", "Data"]
    assert t("ex.metric.entropy", "en") == "Entropy (bits)" and t("heads.atlas.sink", "en", specials="[CLS]/[SEP]") == "[CLS]/[SEP] sink"
    assert all(t(f"heads.atlas.cell.{k}", "en") == k for k in atlas.TOP_LABELS)  # the codes, as before
    assert [t(f"ex.mode.{k}", "en") for k in MODES] == ["Per head", "Average of heads", "Rollout across layers"]
