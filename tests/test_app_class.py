"""AppTest of class mode (issue 29) through app.py: the lecturer key, a room and its student link, students answering
a live question in their own sessions, moderation of hostile student text, the class's head ranking, Korean. Each
test has its own store (HEADLIGHT_DATA_DIR = a temporary folder)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from classroom.store import open_store
from model import load_model
from ui import class_lecturer as cl
from ui import class_room as cr
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
KEY = "lecturer-key-7f3a9c-0123"
T_KEYS = 1_800_000_000.0
TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("HEADLIGHT_LECTURER_KEY", KEY)


def _store():
    return open_store()


def _app(page: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page_file(page)).run()
    return at


def _everything(at) -> str:
    """Every text the run drew (markdown, code, captions, messages, plain text, html, labels)."""
    out = []
    for kind in ("markdown", "code", "caption", "text", "info", "warning", "success", "error", "title"):
        out += [str(e.value) for e in at.get(kind)]
    out += [str(getattr(e, "body", "")) for e in at.get("html")]
    out += [str(getattr(e, "label", "")) for e in at.get("button")]
    return "\n".join(out)


def _unlock(at: AppTest, key: str = KEY) -> AppTest:
    at.text_input(key="class_key").input(key)
    return next(b for b in at.button if b.label in ("Unlock", "열기")).click().run()


def _lecturer(**params) -> tuple[AppTest, str]:
    at = _unlock(_app("class", **params))
    at.button(key="class_open").click().run()
    assert_ok(at)
    code = next(c.value for c in at.code if "?room=" in c.value).rsplit("=", 1)[1]
    return at, code


def _tab(at: AppTest, name: str) -> AppTest:
    at.session_state["class_tab"] = name
    return at.run()


def test_the_key_is_required_and_wrong_keys_never_lock_the_lecturer_out(monkeypatch):
    """Issue 34: a hall behind one address. Wrong keys from many sessions (AppTest's are all one address) are refused,
    and past the limit told to wait; the right key opens at once, in a fresh session and in one that just gave
    wrong keys, whatever came before. The wrong keys are counted in the class store."""
    from classroom.lecturer import MAX_FAILURES

    now = [T_KEYS]
    monkeypatch.setattr(cr, "clock", lambda: now[0])  # the limit's clock, stopped
    monkeypatch.setattr(cr, "client_address", lambda: "192.0.2.10")  # the hall's one address
    at = _app("class")
    assert_ok(at)
    assert not [b for b in at.button if b.key == "class_open"]
    at = _unlock(at, "not-the-key")
    assert "That is not the lecturer key." in [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "class_open"]
    at = _unlock(at, KEY)  # at once, in the same session: the right key is never refused
    assert_ok(at)
    assert [b for b in at.button if b.key == "class_open"]
    students = [_app("class") for _ in range(3)]
    verdicts = [_unlock(students[i % 3], f"guess-{i}").error[0].value for i in range(MAX_FAILURES + 5)]
    assert verdicts.count("That is not the lecturer key.") == MAX_FAILURES - 1  # one came from the lecturer's typo
    assert all("Too many wrong keys" in v for v in verdicts[MAX_FAILURES - 1:])
    rows = _store()._read(lambda ex: ex("SELECT address, times FROM key_failures").fetchall())
    assert rows == [("192.0.2.10", json.dumps([T_KEYS] * MAX_FAILURES))]  # one address, counted in the store
    for lecturer in (_app("class"), students[0]):  # a fresh session, and one that gave wrong keys
        lecturer = _unlock(lecturer, KEY)
        assert_ok(lecturer)
        assert [b for b in lecturer.button if b.key == "class_open"]


def test_without_a_configured_key_nothing_opens(monkeypatch):
    monkeypatch.delenv("HEADLIGHT_LECTURER_KEY")
    at = _app("class")
    assert_ok(at)
    assert "HEADLIGHT_LECTURER_KEY" in at.warning[0].value
    assert not at.text_input and not [b for b in at.button if b.key == "class_open"]


def test_a_room_shows_its_student_link_without_the_key():
    at, code = _lecturer()
    assert _store().room(code) is not None and len(code) == 8
    links = [c.value for c in at.code if "?room=" in c.value]
    assert links and links[0].endswith(f"/?room={code}")
    assert KEY not in _everything(at) and KEY not in str(dict(at.query_params))
    assert len(at.get("imgs")) >= 1 or at.get("image")  # the QR code
    assert "class_key" not in at.session_state or at.session_state["class_key"] == ""  # the key is not kept
    at.button(key="class_end").click().run()
    assert _store().room(code) is None


def _question(at: AppTest) -> AppTest:
    _tab(at, "Question")
    at.button(key="class_start").click().run()
    assert_ok(at)
    return at


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_two_students_answer_and_the_projector_counts_them_once():
    lec, code = _lecturer()
    _question(lec)
    q = _store().current_question(code)
    assert q.kind == "attend" and q.payload["text"] == TEXT
    a, b = _app(room=code), _app(room=code)
    for s in (a, b):
        assert_ok(s)
        assert any(code in m.value for m in s.markdown)  # the banner names the class
    key = f"class_answer_{q.id}"
    a.pills(key=key).set_value(2).run()
    b.pills(key=key).set_value(5).run()
    assert _metrics(lec.run()) == {"Students": "2", "Answered": "2"}
    a.pills(key=key).set_value(4).run()  # a student changes their mind: counted once, with the last answer
    a.pills(key=key).set_value(5).run()
    assert _store().answers(code, q.id) == {"5": 2}
    assert _metrics(lec.run())["Answered"] == "2"
    lec.button(key=f"class_reveal_{q.id}").click().run()
    assert_ok(lec)
    answer = q.payload["answer"]
    right = 2 if answer == 5 else 0
    assert f"{right} of 2 students got it right" in lec.success[0].value
    assert len(_charts(lec)) == 1
    a.run()
    assert (a.success if answer == 5 else a.warning)  # the student sees the verdict
    assert a.pills(key=key).disabled
    data = cl.export_data(code, "cpu")  # the export: counts only, never a student's session
    assert data["questions"][0]["answers"][5] == 2 and data["questions"][0]["revealed"]
    sessions = [a.session_state[cr.SESSION_ID], b.session_state[cr.SESSION_ID]]
    answers_csv, ranking_csv = cl.export_csv(data)
    text = json.dumps(data) + answers_csv + ranking_csv
    assert not any(s in text for s in sessions) and KEY not in text
    assert answers_csv.splitlines()[0] == "question,kind,option,label,answers,model_answer"


def test_other_kinds_of_question():
    lec, code = _lecturer()
    _tab(lec, "Question")
    lec.segmented_control(key="class_kind").set_value("prev_head").run()
    lec.button(key="class_start").click().run()
    assert_ok(lec)
    q = _store().current_question(code)
    assert q.kind == "prev_head" and len(q.payload["options"]) == 12
    lec.segmented_control(key="class_kind").set_value("next_token").run()
    lec.button(key="class_start").click().run()
    assert_ok(lec)
    q = _store().current_question(code)
    assert q.kind == "next_token" and q.payload["options"][q.payload["answer"]]
    assert "Which token will it emit next?" in _everything(lec)


HOSTILE = ["<script>alert(1)</script> the cat saw it", "[click me](http://evil.example) the dog and it",
           "<img src=x onerror=alert(1)> it\x07 was **bold**"]


def _send(s: AppTest, text: str, query: int = 1, referent: int = 2) -> AppTest:
    s.text_input(key="class_send_text").input(text).run()
    if s.error:
        return s
    s.pills(key="class_send_query").set_value(query).run()
    s.pills(key="class_send_ref").set_value(referent).run()
    return s.button(key="class_send_go").click().run()


def test_moderation_keeps_hostile_text_off_the_projector():
    lec, code = _lecturer()
    st_ = _app(room=code)
    for text in HOSTILE:
        _send(st_, text)
        assert_ok(st_)
    st_.text_input(key="class_send_text").input("it " * 3400).run()  # 10 KB: refused, nothing to send
    assert_ok(st_)
    assert not [b for b in st_.button if b.key == "class_send_go"]
    assert cr.sentence_problem("it " * 3400) == "class.send.long" and cr.sentence_problem(" \n") == "class.send.empty"
    assert len(_store().sentences(code)) == 3 and not _store().sentences(code, "approved")
    _tab(lec, "Heads")
    assert "No approved sentences yet" in lec.info[0].value
    _tab(lec, "Sentences")
    shown = "\n".join(m.value for m in lec.markdown)
    assert "<script>" not in shown and "evil.example" not in shown
    sid = _store().sentences(code)[0].id
    lec.button(key=f"class_hide_{sid}").click().run()
    lec.button(key="class_approve_all").click().run()
    assert_ok(lec)
    assert [s.status for s in _store().sentences(code)] == ["hidden", "approved", "approved"]
    texts = [e.value for e in lec.text]
    assert any("[click me](http://evil.example)" in x for x in texts)  # as plain text, not a link
    assert not any("<script>" in x for x in texts)  # hidden, so not shown
    assert not any("<img" in m.value or "evil.example" in m.value for m in lec.markdown)
    assert not any("\x07" in x for x in texts)


def test_the_head_ranking_from_approved_sentences(minilm):
    from analysis.class_heads import ClassSentence, rank_heads

    lec, code = _lecturer()
    store = _store()
    sents = [(TEXT, "it", "animal"), ("The trophy didn't fit in the suitcase because it was too big", "it", "trophy"),
             ("Mary called John because she needed help", "she", "mary")]
    for i, (text, q, r) in enumerate(sents):
        toks = minilm.trace(text).source_tokens
        store.submit_sentence(code, f"s{i}", "minilm-l6", text, toks, toks.index(q), toks.index(r))
    hidden = store.submit_sentence(code, "s9", "minilm-l6", "it it cat", ["[CLS]", "it", "it", "cat", "[SEP]"], 1, 3)
    store.moderate_all(code, "approved", only="pending")
    store.moderate(code, hidden.id, "hidden")
    _tab(lec, "Heads")
    assert_ok(lec)
    want = rank_heads(minilm, [ClassSentence(s.text, s.query, s.referent)
                               for s in store.sentences(code, "approved")])
    la, h = want.best
    assert want.used == 3
    assert f"Layer {la} · Head {h}" in _everything(lec)  # the best head, named as the page names heads
    figs = _charts(lec)
    assert len(figs) == 2 and "Heads ranked by the class" in figs[0]
    _tab(lec, "Export")
    assert_ok(lec)
    names = [b.proto.label for b in lec.get("download_button")]
    assert len(names) == 3


def test_korean():
    lec, code = _lecturer(lang="ko")
    assert lec.title[0].value == "수업"
    assert any("수업" in m.value and code in m.value for m in lec.markdown)
    _question(lec)
    s = _app(room=code, lang="ko")
    assert_ok(s)
    assert any("수업" in m.value and "참여 중" in m.value for m in s.markdown)
    assert any("어텐션" in m.value for m in s.markdown)  # the question, in Korean
    assert s.text_input(key="class_send_text").placeholder == "영희는 그녀가 피곤하다고 말했다"  # not English
    s = _app(room=code)  # the room's language, with a link that names none
    assert s.session_state["lang"] == "ko" and any("참여 중" in m.value for m in s.markdown)


def test_a_wrong_room_link_says_so():
    s = _app(room="ZZZZZZZZ")
    assert_ok(s)
    assert any("ended" in w.value for w in s.warning)


def test_a_student_answers_on_their_own_sentence(minilm):
    lec, code = _lecturer()
    _question(lec)
    q = _store().current_question(code)
    own = "The dog chased the cat because it was hungry"
    s = _app(room=code, text=own)
    s.toggle(key=f"class_own_{q.id}").set_value(True).run()
    assert_ok(s)
    toks = minilm.trace(own).source_tokens
    query = toks.index("it")
    s.pills(key=f"class_ownq_{q.id}").set_value(query).run()
    att = minilm.trace(own).encoder_attention[q.payload["layer"], q.payload["head"], query]
    answer = int(att.argmax())
    s.pills(key=f"class_owna_{q.id}_{query}").set_value(answer).run()
    assert_ok(s)
    assert _store().answers(code, q.id) == {"own:1": 1}
    lec.run()
    assert _metrics(lec)["Answered"] == "1"
    lec.button(key=f"class_reveal_{q.id}").click().run()
    assert "1 of 1 students got it right" in lec.success[0].value
    assert _store().summary(code)["questions"][0]["right"] == 1
    s.run()
    assert s.success and s.pills(key=f"class_owna_{q.id}_{query}").disabled


def test_a_students_link_carries_an_anonymous_id_and_never_the_key():
    """The student's id is in the link beside the room (a reconnect to another process is the same student), and a
    link that brings one back is that student."""
    _, code = _lecturer()
    at = _app(room=code)
    assert_ok(at)
    sid = at.query_params["sid"][0] if isinstance(at.query_params["sid"], list) else at.query_params["sid"]
    assert sid == at.session_state[cr.SESSION_ID] and len(sid) >= 16
    assert KEY not in json.dumps(dict(at.query_params))
    again = _app(room=code, sid=sid)
    assert again.session_state[cr.SESSION_ID] == sid


# ---- the room's model (issue 34) ------------------------------------------------------------------------------------
E5 = "multilingual-e5-small"
KO_SENTENCE = "영희는 철수에게 그녀가 피곤하다고 말했다"


def _z(chart) -> np.ndarray:
    """A heatmap's z as numbers (plotly writes typed arrays as base64)."""
    z = json.loads(chart.proto.spec)["data"][0]["z"]
    if isinstance(z, dict):
        shape = tuple(int(x) for x in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape)
    return np.array(z, dtype=np.float64)


def _pill_labels(at: AppTest, key: str) -> list[str]:
    """A pills widget's labels as shown (markdown escapes removed)."""
    return [str(x).replace("\\", "") for x in at.pills(key=key).options]


def test_a_korean_class_on_e5_students_read_and_rank_on_the_room_model():
    """The room carries the lecturer's model and language: a student whose link is only `?room=` gets both; a Korean
    sentence becomes Hangul subwords of multilingual-e5-small (no jamo, no notice) and the student picks 그녀 and
    영희;
    the class's ranking is a grid of e5's 12 layers x 12 heads, equal to analysis.class_heads on e5's traces."""
    from analysis.class_heads import ClassSentence, rank_heads

    lec, code = _lecturer(lang="ko", model=E5)
    room = _store().room(code)
    assert (room.model, room.lang) == (E5, "ko")
    assert any(E5 in c.value for c in lec.caption)  # the page says which model the class runs on
    s = _app(room=code)  # the link as the QR code carries it: the room only
    assert_ok(s)
    assert s.session_state["model"] == E5 and s.session_state["lang"] == "ko"
    s.text_input(key="class_send_text").input(KO_SENTENCE).run()
    assert_ok(s)
    e5 = load_model(E5, "cpu")
    toks = e5.trace(KO_SENTENCE).source_tokens
    assert toks[1:4] == ["▁영", "희", "는"] and "▁그녀" in toks
    labels = _pill_labels(s, "class_send_query")
    assert labels == [f"{i}: {tok}" for i, tok in enumerate(toks)][1:-1]  # Hangul subwords, the model's own
    assert {"▁그녀", "▁영", "희"} <= set(toks) and not any("\u1100" <= ch <= "\u11ff" for ch in "".join(labels))
    assert not [w for w in s.warning if E5 in w.value]  # e5 reads it: no notice
    query, referent = toks.index("▁그녀"), toks.index("▁영")
    s.pills(key="class_send_query").set_value(query).run()
    s.pills(key="class_send_ref").set_value(referent).run()
    s.button(key="class_send_go").click().run()
    assert_ok(s)
    sent = _store().sentences(code)
    assert [(x.model, x.tokens, x.query, x.referent) for x in sent] == [(E5, toks, query, referent)]
    _store().submit_sentence(code, "s2", E5, KO_SENTENCE, toks, query, referent + 1)  # "희": the same word 영희
    _store().moderate_all(code, "approved")
    _tab(lec, "헤드")
    assert_ok(lec)
    grid = _z(lec.get("plotly_chart")[0])
    assert grid.shape == (e5.n_layers(), e5.n_heads()) == (12, 12)
    want = rank_heads(e5, [ClassSentence(KO_SENTENCE, query, r) for r in (referent, referent + 1)])
    assert want.used == 2 and cl.ranking_for(code, "cpu")[2].best == want.best
    np.testing.assert_allclose(grid, want.agreement, atol=1e-6)
    assert sorted(np.unique(want.agreement)) == [0.0, 1.0]  # both pieces of 영희 count as 영희: 0 or 2 of 2


def test_a_korean_sentence_on_a_room_model_that_cannot_read_it_gets_the_notice_and_the_switch():
    lec, code = _lecturer(lang="ko")  # the default model, MiniLM: no Hangul in its vocabulary
    assert _store().room(code).model == "minilm-l6"
    s = _app(room=code)
    s.text_input(key="class_send_text").input(KO_SENTENCE).run()
    assert_ok(s)
    notice = [w.value for w in s.warning if E5 in w.value]
    assert notice and "minilm-l6" in notice[0]
    s.button(key="class_send_switch").click().run()
    assert_ok(s)
    toks = load_model(E5, "cpu").trace(KO_SENTENCE).source_tokens
    assert _pill_labels(s, "class_send_query") == [f"{i}: {tok}" for i, tok in enumerate(toks)][1:-1]
    s.pills(key="class_send_query").set_value(toks.index("▁그녀")).run()
    s.pills(key="class_send_ref").set_value(toks.index("▁영")).run()
    s.button(key="class_send_go").click().run()
    assert [(x.model, x.tokens) for x in _store().sentences(code)] == [(E5, toks)]


def test_the_room_model_counts_when_the_lecturer_changes_the_sidebar_model():
    """Mid-class the lecturer picks another model in the sidebar: the class stays on the room's model (said, and
    questions on the sidebar's sentence wait) until the lecturer moves it; the students then follow."""
    lec, code = _lecturer()
    s = _app(room=code)
    assert s.session_state["model"] == "minilm-l6"
    lec.selectbox(key="model").set_value(E5).run()
    assert_ok(lec)
    assert _store().room(code).model == "minilm-l6"
    assert any("minilm-l6" in i.value and E5 in i.value for i in lec.info)
    _tab(lec, "Question")
    assert lec.button(key="class_start").disabled
    lec.button(key="class_move").click().run()
    assert_ok(lec)
    assert _store().room(code).model == E5 and not lec.button(key="class_start").disabled
    s.run()
    assert_ok(s)
    assert s.session_state["model"] == E5
    s.selectbox(key="model").set_value("minilm-l6").run()  # a student may still explore on another model
    assert s.session_state["model"] == "minilm-l6"
    s.text_input(key="class_send_text").input(TEXT).run()
    assert any(E5 in c.value for c in s.caption)  # the class's model reads the sentence


def test_a_repeated_token_is_chosen_as_itself(minilm):
    """Streamlit's pills tell options apart by their labels: the first "the" of a sentence, labelled like the second,
    was stored as the second (a browser click on one chose the other). Each token's pill is its own."""
    _, code = _lecturer()
    s = _app(room=code)
    text = "The dog saw the cat because it was hungry"
    toks = minilm.trace(text).source_tokens
    first, second = [i for i, tok in enumerate(toks) if tok == "the"]
    s.text_input(key="class_send_text").input(text).run()
    s.pills(key="class_send_query").set_value(toks.index("it")).run()
    s.pills(key="class_send_ref").set_value(first).run()
    assert s.pills(key="class_send_ref").value == first
    s.button(key="class_send_go").click().run()
    assert [(x.query, x.referent) for x in _store().sentences(code)] == [(toks.index("it"), first)]
    assert second != first
