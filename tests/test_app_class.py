"""AppTest of class mode (issue 29) through app.py: the lecturer key, a room and its student link, students answering
a live question in their own sessions, moderation of hostile student text, the class's head ranking, Korean. Each
test has its own store (HEADLIGHT_DATA_DIR = a temporary folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_support import assert_ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from classroom.store import open_store
from ui import class_lecturer as cl
from ui import class_room as cr
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
KEY = "lecturer-key-7f3a9c"
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


def test_the_key_is_required(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(cr, "clock", lambda: now[0])  # the rate limit's clock, stopped
    at = _app("class")
    assert_ok(at)
    assert not [b for b in at.button if b.key == "class_open"]
    at = _unlock(at, "not-the-key")
    assert "That is not the lecturer key." in [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "class_open"]
    assert _store().summary  # the store is there, yet no room was opened by a wrong key
    at = _unlock(at, KEY)  # at once: the wait after a wrong key refuses even the right one
    assert "Too many wrong keys" in "".join(e.value for e in at.error)
    assert not [b for b in at.button if b.key == "class_open"]
    now[0] += 1.5
    at = _unlock(at, "still-wrong")  # the wait doubles: 2 s now
    now[0] += 1.5
    assert "Too many wrong keys" in "".join(e.value for e in _unlock(at, KEY).error)
    now[0] += 1.0
    at = _unlock(at, KEY)
    assert_ok(at)
    assert [b for b in at.button if b.key == "class_open"]


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
