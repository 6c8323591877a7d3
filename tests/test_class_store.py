"""classroom/store.py, the class's shared store: rooms and their codes, idempotent answers (the last one counts, once),
expiry after 12 h (an injected clock), ending a class, sentences and moderation, isolation between rooms, the
versioned schema, a restart, and several processes writing one SQLite file at once with no "database is locked".
Every store test runs on SQLite and on a real PostgreSQL server (tests/pg_support.py) with the same code."""

from __future__ import annotations

import math
import multiprocessing
import sqlite3
import time

import pytest
from pg_support import PostgresServer

from classroom import sentences
from classroom import store as cs
from classroom.store import (
    ALPHABET,
    CODE_CHARS,
    MAX_TEXT_CHARS,
    ROOM_TTL_S,
    QuestionClosed,
    TooMany,
    UnknownItem,
    UnknownRoom,
    normalize_code,
    open_store,
)

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def pg():
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "class.sqlite3")
    return request.getfixturevalue("pg").create_db()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(url, clock):
    s = open_store(url, clock=clock)
    yield s
    s.close()


def rows(store, table: str) -> int:
    return store._read(lambda ex: ex(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


# ---- codes -----------------------------------------------------------------------------------------------------------
def test_room_codes_are_short_unguessable_and_forgiving():
    codes = {cs.new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(len(c) == CODE_CHARS and set(c) <= set(ALPHABET) for c in codes)
    assert CODE_CHARS * math.log2(len(ALPHABET)) >= 30 and not set("ILOU") & set(ALPHABET)
    assert set("".join(codes)) == set(ALPHABET)  # every character is drawn
    assert normalize_code("7k3m-9x2a") == "7K3M9X2A" and normalize_code(" 7K3M 9X2A ") == "7K3M9X2A"
    assert normalize_code("oooo-iiii") == "00001111" and normalize_code("LLLLLLLL") == "11111111"
    for bad in ("", "7K3M9X2", "7K3M9X2AB", "7K3M9X2U", "<script>", None, 12345678, "7" * 1000):
        assert normalize_code(bad) is None, bad


# ---- rooms -----------------------------------------------------------------------------------------------------------
def test_open_find_and_end_a_room(store, clock):
    room = store.open_room()
    assert store.room(room.code) == room and room.expires == room.created + ROOM_TTL_S == T0 + ROOM_TTL_S
    assert store.room(room.code.lower()) == room and store.room(room.code[:4] + "-" + room.code[4:]) == room
    assert store.room("ZZZZZZZZ") is None and store.room("nonsense") is None
    other = store.open_room()
    assert other.code != room.code
    store.join(room.code, "s1")
    q = store.start_question(room.code, "attend", {"text": "it"})
    store.answer(room.code, q.id, "s1", "a")
    store.submit_sentence(room.code, "s1", "minilm-l6", "The cat slept because it was tired",
                          ["the", "cat", "it"], 2, 1)
    store.join(other.code, "s9")
    store.end_room(room.code)
    assert store.room(room.code) is None and store.room(other.code) == other
    for table in ("answers", "questions", "sentences"):
        assert rows(store, table) == 0, table
    assert rows(store, "students") == 1 and rows(store, "rooms") == 1  # the other room's
    with pytest.raises(UnknownRoom):
        store.answer(room.code, q.id, "s1", "b")
    with pytest.raises(UnknownRoom):
        store.summary(room.code)
    store.end_room(room.code)  # again: nothing to do
    store.end_room("not a code")


def test_rooms_expire_after_12_hours(store, clock):
    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    store.answer(room.code, q.id, "s1", "a")
    clock.t = T0 + ROOM_TTL_S - 1
    assert store.room(room.code) == room and store.summary(room.code)["answers"] == 1
    clock.t = T0 + ROOM_TTL_S
    assert store.room(room.code) is None and store.current_question(room.code) is None
    assert store.answers(room.code, q.id) == {} and store.students(room.code) == 0 and store.sentences(room.code) == []
    for write in (lambda: store.join(room.code, "s2"), lambda: store.answer(room.code, q.id, "s1", "b"),
                  lambda: store.start_question(room.code, "attend", {}), lambda: store.summary(room.code)):
        with pytest.raises(UnknownRoom):
            write()
    fresh = store.open_room()  # deletes the expired room's rows
    assert fresh.expires == T0 + 2 * ROOM_TTL_S
    clock.t = T0  # even with the clock set back, the old room is gone
    assert store.room(room.code) is None and rows(store, "answers") == 0 and rows(store, "questions") == 0


# ---- answers ---------------------------------------------------------------------------------------------------------
def test_the_last_answer_counts_once(store):
    room = store.open_room()
    q = store.start_question(room.code, "attend", {"text": "The animal was tired", "query": 2})
    assert store.current_question(room.code) == q and store.question(room.code, q.id) == q
    assert q.payload == {"text": "The animal was tired", "query": 2} and q.revealed is None
    for s, a in [("s1", "animal"), ("s2", "street"), ("s1", "street"), ("s1", "animal"), ("s3", "animal"),
                 ("s2", "street")]:
        store.answer(room.code, q.id, s, a)
    assert store.answers(room.code, q.id) == {"animal": 2, "street": 1}
    assert store.my_answer(room.code, q.id, "s1") == "animal" and store.my_answer(room.code, q.id, "s9") is None
    assert store.students(room.code) == 3  # answering joins
    store.join(room.code, "s1")
    store.join(room.code, "s4")
    assert store.students(room.code) == 4
    s = store.summary(room.code)
    assert s == {"room": room.code, "students": 4, "answers": 3,
                 "questions": [{"id": q.id, "kind": "attend", "answers": 3, "right": None}],
                 "sentences": 0, "approved": 0}
    store.reveal(room.code, q.id, {"answer": "animal", "weights": {"animal": 0.61, "street": 0.12}})
    assert store.question(room.code, q.id).revealed["answer"] == "animal"
    with pytest.raises(QuestionClosed):
        store.answer(room.code, q.id, "s2", "animal")
    assert store.summary(room.code)["questions"][0]["right"] == 2
    q2 = store.start_question(room.code, "previous-token", {"layer": 1})
    assert store.current_question(room.code) == q2 and q2.id != q.id
    store.answer(room.code, q2.id, "s1", "3")
    store.reveal(room.code, q2.id, {"answers": [3, 5]})  # several right answers
    s = store.summary(room.code)
    assert s["answers"] == 4 and s["questions"][1] == {"id": q2.id, "kind": "previous-token", "answers": 1, "right": 1}
    assert [x.id for x in store.questions(room.code)] == [q.id, q2.id]
    with pytest.raises(UnknownItem):
        store.answer(room.code, 10_000, "s1", "a")
    with pytest.raises(UnknownItem):
        store.reveal(room.code, 10_000, {})
    with pytest.raises(ValueError):
        store.answer(room.code, q2.id, "s1", "x" * 201)
    with pytest.raises(ValueError):
        store.answer(room.code, q2.id, "", "a")
    with pytest.raises(ValueError):
        store.start_question(room.code, "attend", {"big": "x" * 300_000})


def test_a_room_never_sees_another(store):
    a, b = store.open_room(), store.open_room()
    qa = store.start_question(a.code, "attend", {"secret": "a"})
    store.answer(a.code, qa.id, "s1", "x")
    store.submit_sentence(a.code, "s1", "m", "only in a, it is", ["only", "a", "it"], 2, 1)
    assert store.question(b.code, qa.id) is None and store.current_question(b.code) is None
    assert store.answers(b.code, qa.id) == {} and store.sentences(b.code) == []
    with pytest.raises(UnknownItem):
        store.answer(b.code, qa.id, "s1", "y")  # a question id of room a, through room b
    with pytest.raises(UnknownItem):
        store.reveal(b.code, qa.id, {"answer": "y"})
    sid = store.sentences(a.code)[0].id
    with pytest.raises(UnknownItem):
        store.moderate(b.code, sid, "approved")
    assert store.moderate_all(b.code, "approved") == 0
    assert store.sentences(a.code)[0].status == "pending" and store.answers(a.code, qa.id) == {"x": 1}
    assert store.summary(b.code)["answers"] == 0 and store.summary(b.code)["questions"] == []


# ---- sentences -------------------------------------------------------------------------------------------------------
def test_sentences_limits_idempotency_and_moderation(store):
    room = store.open_room()
    c = room.code
    toks = ["the", "cat", "sat", "because", "it", "was", "tired"]
    s1 = store.submit_sentence(c, "s1", "minilm-l6", "The cat sat because it was tired", toks, 4, 1)
    assert (s1.status, s1.query, s1.referent, s1.tokens, s1.room) == ("pending", 4, 1, toks, c)
    assert store.submit_sentence(c, "s1", "minilm-l6", "The cat sat because it was tired", toks, 4, 1) == s1
    assert len(store.sentences(c)) == 1  # one row per (room, session, text)
    store.moderate(c, s1.id, "approved")
    assert store.submit_sentence(c, "s1", "minilm-l6", "The cat sat because it was tired", toks, 4, 1).status \
        == "approved"  # sent again unchanged: still approved
    again = store.submit_sentence(c, "s1", "minilm-l6", "The cat sat because it was tired", toks, 4, 0)
    assert again.id == s1.id and again.referent == 0 and again.status == "pending"  # changed: to be approved again
    s2 = store.submit_sentence(c, "s2", "minilm-l6", "The cat sat because it was tired", toks, 4, 1)
    assert s2.id != s1.id  # another student's, same text
    hostile = "<script>alert(1)</script> [x](javascript:alert(1)) \x00\x1b[31m\r\nit"
    s3 = store.submit_sentence(c, "s3", "minilm-l6", hostile, ["<b>", "it"], 1, 0)
    assert s3.text == "<script>alert(1)</script> [x](javascript:alert(1))   [31m  it"  # stored as text, no controls
    exact = "a" * (MAX_TEXT_CHARS - 3) + " it"
    assert store.submit_sentence(c, "s4", "m", exact, ["a", "it"], 1, 0).text == exact
    for bad in ("a" * (MAX_TEXT_CHARS + 1), "x" * 10_000, "   ", "\x00\x01"):
        with pytest.raises(ValueError):
            store.submit_sentence(c, "s4", "m", bad, ["a", "it"], 1, 0)
    for tokens, q, r in ((["a", "it"], 1, 1), (["a", "it"], 2, 0), (["a", "it"], -1, 0), (["it"], 0, 0),
                         (["a", 3], 1, 0), (["a", "it"], True, 0)):
        with pytest.raises(ValueError):
            store.submit_sentence(c, "s4", "m", "a it", tokens, q, r)
    assert [s.status for s in store.sentences(c)] == ["pending"] * 4
    assert store.sentences(c, "approved") == []
    store.moderate(c, s2.id, "approved")
    store.moderate(c, s3.id, "hidden")
    assert [s.id for s in store.sentences(c, "approved")] == [s2.id]
    assert [s.id for s in store.sentences(c, "hidden")] == [s3.id]
    assert store.moderate_all(c, "approved", only="pending") == 2
    assert [s.id for s in store.sentences(c, "hidden")] == [s3.id]
    assert store.summary(c)["sentences"] == 4 and store.summary(c)["approved"] == 3
    assert store.moderate_all(c, "pending") == 4
    with pytest.raises(ValueError):
        store.moderate(c, s1.id, "deleted")
    with pytest.raises(ValueError):
        store.sentences(c, "deleted")
    with pytest.raises(UnknownItem):
        store.moderate(c, 99_999, "approved")


def test_one_student_cannot_flood_the_room(store, monkeypatch):
    monkeypatch.setattr(sentences, "MAX_SENTENCES_PER_SESSION", 3)  # where the limit is read
    room = store.open_room()
    for i in range(3):
        store.submit_sentence(room.code, "s1", "m", f"sentence {i} it", ["s", "it"], 1, 0)
    store.submit_sentence(room.code, "s1", "m", "sentence 0 it", ["s", "it"], 1, 0)  # the same again: fine
    with pytest.raises(TooMany):
        store.submit_sentence(room.code, "s1", "m", "one more it", ["s", "it"], 1, 0)
    store.submit_sentence(room.code, "s2", "m", "one more it", ["s", "it"], 1, 0)


# ---- schema, restart -------------------------------------------------------------------------------------------------
def test_schema_is_versioned_and_migrated_once(store, url):
    assert store.schema_version() == cs.SCHEMA_VERSION and rows(store, "schema_version") == len(cs.MIGRATIONS)
    again = open_store(url)  # a second process opening it: nothing to do
    assert rows(again, "schema_version") == len(cs.MIGRATIONS)
    again._write(lambda ex: ex("INSERT INTO schema_version (version, applied, note) VALUES (?, ?, ?)",
                               (cs.SCHEMA_VERSION + 1, 0.0, "from the future")))
    again.close()
    with pytest.raises(cs.ClassError, match="schema version"):
        open_store(url)


def test_a_room_carries_the_lecturers_model_and_language(store):
    room = store.open_room("multilingual-e5-small", "ko")
    assert (room.model, room.lang) == ("multilingual-e5-small", "ko") and store.room(room.code) == room
    assert store.open_room().model == "" and store.open_room().lang == ""  # the door's endpoint names none
    moved = store.set_room_model(room.code, "minilm-l6")
    assert moved == store.room(room.code) and (moved.model, moved.lang, moved.expires) == ("minilm-l6", "ko",
                                                                                             room.expires)
    with pytest.raises(UnknownRoom):
        store.set_room_model("ZZZZZZZZ", "minilm-l6")
    with pytest.raises(ValueError):
        store.open_room("m" * 201)
    store.end_room(room.code)
    with pytest.raises(UnknownRoom):
        store.set_room_model(room.code, "minilm-l6")


def test_a_version_1_database_is_migrated_and_its_rooms_kept(url, clock, monkeypatch):
    """A class store written before rooms carried a model (schema 1): opened by this code, it gains the columns and
    the key-failure table; its open rooms live on, with no model ("")."""
    monkeypatch.setattr(cs, "MIGRATIONS", cs.MIGRATIONS[:1])
    monkeypatch.setattr(cs, "SCHEMA_VERSION", 1)
    old = open_store(url, clock=clock)
    old._write(lambda ex: ex("INSERT INTO rooms (code, created, expires) VALUES (?, ?, ?)",
                             ("7K3M9X2A", T0, T0 + ROOM_TTL_S)))
    old.close()
    monkeypatch.undo()
    new = open_store(url, clock=clock)
    assert new.schema_version() == cs.SCHEMA_VERSION >= 3 and rows(new, "schema_version") == len(cs.MIGRATIONS)
    assert new.room("7K3M9X2A") == cs.Room("7K3M9X2A", T0, T0 + ROOM_TTL_S, "", "")
    assert new.set_room_model("7K3M9X2A", "minilm-l6").model == "minilm-l6"
    assert new.key_failure("10.0.0.1", T0, 60.0, 10) == 0
    new.close()


def test_wrong_keys_are_counted_per_address_and_shared_by_stores(url):
    """The wrong-key count (classroom/lecturer.py's Gate) in the store: two stores on one database (two processes)
    see one count; at most `limit` kept per address; the window slides; stale addresses are deleted."""
    a, b = open_store(url), open_store(url)
    assert [a.key_failure("10.0.0.7", T0 + i, 60.0, 10) for i in range(6)] == [0, 1, 2, 3, 4, 5]
    assert [b.key_failure("10.0.0.7", T0 + 6 + i, 60.0, 10) for i in range(6)] == [6, 7, 8, 9, 10, 10]
    assert a.key_failures("10.0.0.7", T0 + 12, 60.0) == [T0 + i for i in range(10)]  # the limit: no more kept
    assert b.key_failures("10.0.0.8", T0 + 12, 60.0) == [] and b.key_failure("10.0.0.8", T0, 60.0, 10) == 0
    assert a.key_failures("10.0.0.7", T0 + 60.5, 60.0) == [T0 + i for i in range(1, 10)]  # the oldest left
    assert a.key_failure("10.0.0.7", T0 + 61, 60.0, 10) == 8  # 0 and 1 gone: room for one more
    assert b.key_failure("10.0.0.9", T0 + 200, 60.0, 10) == 0
    assert rows(a, "key_failures") == 1  # 10.0.0.7 and 10.0.0.8 had nothing left in the window: deleted
    assert a.key_failure("x" * 1000, T0 + 200, 60.0, 10) == 0 and a.key_failures("x" * 1000, T0 + 200, 60.0) \
        == [T0 + 200]  # an absurd address is cut, still counted
    a.close()
    b.close()


def test_a_restart_keeps_the_room_and_its_answers(url, clock):
    first = open_store(url, clock=clock)
    room = first.open_room()
    q = first.start_question(room.code, "attend", {"text": "x"})
    for i in range(20):
        first.answer(room.code, q.id, f"s{i}", "ab"[i % 2])
    first.close()
    del first
    second = open_store(url, clock=clock)
    assert second.room(room.code) == room and second.current_question(room.code) == q
    assert second.answers(room.code, q.id) == {"a": 10, "b": 10}
    second.close()


def test_postgres_server_restart_reconnects(pg, clock):
    """The pooled connections die with the server; the next call opens new ones and nothing is lost."""
    store = open_store(pg.create_db(), clock=clock)
    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    store.answer(room.code, q.id, "s1", "a")
    pg.restart()
    store.answer(room.code, q.id, "s2", "b")
    assert store.answers(room.code, q.id) == {"a": 1, "b": 1} and store.retries >= 1
    store.close()


def test_default_location(tmp_path, monkeypatch):
    monkeypatch.delenv(cs.DB_ENV, raising=False)
    monkeypatch.setenv(cs.DATA_DIR_ENV, str(tmp_path / "data"))
    s = open_store()
    assert (tmp_path / "data" / "class.sqlite3").exists() and s.dialect == "sqlite"
    assert (tmp_path / "data").stat().st_mode & 0o077 == 0  # the owner's only
    with sqlite3.connect(tmp_path / "data" / "class.sqlite3") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    monkeypatch.delenv(cs.DATA_DIR_ENV)
    monkeypatch.chdir(tmp_path)
    assert open_store().dialect == "sqlite" and (tmp_path / ".headlight" / "class.sqlite3").exists()
    assert open_store(f"sqlite://{tmp_path}/x.sqlite3").dialect == "sqlite" and (tmp_path / "x.sqlite3").exists()
    monkeypatch.setattr(cs, "_SHARED", {})
    one = cs.shared_store()  # one per process and location, for the door and the Class page
    assert cs.shared_store() is one and one.room(one.open_room().code) is not None
    monkeypatch.setenv(cs.DATA_DIR_ENV, str(tmp_path / "elsewhere"))
    assert cs.shared_store() is not one and (tmp_path / "elsewhere" / "class.sqlite3").exists()


def test_the_environment_names_postgres(pg, monkeypatch):
    monkeypatch.setenv(cs.DB_ENV, pg.create_db())
    s = open_store()
    assert s.dialect == "postgresql" and s.room(s.open_room().code) is not None
    assert "headlight@" not in repr(s)  # no user or password in messages
    s.close()


# ---- several processes at once ---------------------------------------------------------------------------------------
ANSWERS_PER_PROCESS = 300
SHARED = 100  # sessions every process answers for (the same students reconnecting to several processes)


def _writer(url: str, fresh: str, code: str, qid: int, p: int, start, out) -> None:
    """One app process: opens a fresh store together with the others (the schema's migration race), then writes
    ANSWERS_PER_PROCESS answers into the shared room as fast as it can."""
    errors: list[str] = []
    try:
        start.wait(30)
        open_store(fresh).close()
        s = open_store(url)
        t0 = time.time()
        for i in range(ANSWERS_PER_PROCESS):
            session = f"shared{i}" if i < SHARED else f"p{p}s{i}"
            try:
                s.answer(code, qid, session, f"answer{i % 4}")
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(e).__name__}: {e}")
        out.put((p, t0, time.time(), s.retries, errors))
    except Exception as e:  # noqa: BLE001
        out.put((p, 0.0, 0.0, 0, [f"{type(e).__name__}: {e}"]))


def concurrent_answers(url: str, fresh: str, procs: int) -> tuple[float, int]:
    store = open_store(url)
    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    ctx = multiprocessing.get_context("spawn")  # the test process has torch loaded: no fork
    start, out = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_writer, args=(url, fresh, room.code, q.id, p, start, out)) for p in range(procs)]
    for w in workers:
        w.start()
    time.sleep(0.3)
    start.set()
    results = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(30)
    errors = [e for r in results for e in r[4]]
    assert errors == [], f"{len(errors)} errors, e.g. {errors[:3]}"
    counts = store.answers(room.code, q.id)
    total = procs * (ANSWERS_PER_PROCESS - SHARED) + SHARED
    assert sum(counts.values()) == total and store.summary(room.code)["answers"] == total  # each session once
    assert set(counts) == {"answer0", "answer1", "answer2", "answer3"}
    assert store.students(room.code) == total
    assert open_store(fresh).schema_version() == cs.SCHEMA_VERSION
    seconds = max(r[2] for r in results) - min(r[1] for r in results)
    rate = procs * ANSWERS_PER_PROCESS / seconds
    print(f"\n{store.dialect}: {procs} processes x {ANSWERS_PER_PROCESS} answers in {seconds:.2f} s "
          f"({rate:.0f} answers/s), {sum(r[3] for r in results)} retries, 0 errors")
    store.close()
    return rate, sum(r[3] for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("procs", [2, 4])
def test_several_processes_write_one_sqlite_file_without_locked_errors(tmp_path, procs):
    concurrent_answers(str(tmp_path / "class.sqlite3"), str(tmp_path / "fresh.sqlite3"), procs)


@pytest.mark.slow
def test_several_processes_write_one_postgres_database(pg):
    concurrent_answers(pg.create_db(), pg.create_db(), 4)


def _acknowledging_writer(url: str, code: str, qid: int, acks: str) -> None:
    """An app process in a burst: each answer is acknowledged (a line in `acks`) only after the store returned."""
    s = open_store(url)
    with open(acks, "a", buffering=1) as f:
        for i in range(100_000):
            s.answer(code, qid, f"s{i}", "first")
            f.write(f"s{i}\n")


@pytest.mark.slow
def test_a_process_killed_mid_burst_loses_no_acknowledged_answer(url, tmp_path):
    """SIGKILL during a burst of answers: every answer acknowledged before the kill is in the store (the database is
    not corrupted, no lock is left behind); the students answer again through another process and are counted once,
    with their new answer."""
    import os
    import signal

    store = open_store(url)
    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    acks = tmp_path / "acks"
    ctx = multiprocessing.get_context("spawn")
    writer = ctx.Process(target=_acknowledging_writer, args=(url, room.code, q.id, str(acks)))
    writer.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not acks.exists() or len(acks.read_text().splitlines()) < 200):
        time.sleep(0.01)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(10)
    acknowledged = [s for s in acks.read_text().splitlines() if s]
    assert len(acknowledged) >= 200
    stored = store.answers(room.code, q.id)["first"]
    assert stored >= len(acknowledged)  # at most the one answer in flight more than was acknowledged
    assert stored <= len(acknowledged) + 1
    for s in acknowledged:  # they reconnect to another process and answer again
        store.answer(room.code, q.id, s, "second")
    counts = store.answers(room.code, q.id)
    assert counts.get("second") == len(acknowledged) and sum(counts.values()) == stored
    assert store.summary(room.code)["answers"] == stored
    store.close()


def test_threads_of_one_process_share_a_store(store):
    """A Streamlit process's script threads share one store: each takes its own pooled connection (and, on SQLite, its
    own place in the writers' queue)."""
    import threading

    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    errors = []

    def student_group(t: int) -> None:
        try:
            for i in range(40):
                store.answer(room.code, q.id, f"t{t}s{i}", "ab"[i % 2])
                store.answers(room.code, q.id)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=student_group, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert errors == [] and store.answers(room.code, q.id) == {"a": 160, "b": 160}
    assert len(store._idle) <= cs.MAX_IDLE_CONNECTIONS


def test_ending_a_class_while_students_answer_leaves_no_row(store):
    """End class in the middle of a burst: every write either lands before the end (and is deleted with the room) or
    finds no room; no row of the room outlives it."""
    import threading

    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    done, refused, errors = [], [], []

    def student_group(t: int) -> None:
        for i in range(10_000):
            try:
                store.answer(room.code, q.id, f"t{t}s{i}", "a")
                store.submit_sentence(room.code, f"t{t}s{i}", "m", "it was tired", ["it", "was"], 0, 1) \
                    if i % 10 == 0 else store.join(room.code, f"t{t}j{i}")
                done.append(1)
            except UnknownRoom:
                refused.append(1)
                return
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    threads = [threading.Thread(target=student_group, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + 30
    while len(done) < 100 and time.monotonic() < deadline:
        time.sleep(0.005)
    store.end_room(room.code)
    for th in threads:
        th.join(60)
    assert errors == [] and len(refused) == 6 and len(done) >= 100
    for table, column in cs.ROOM_TABLES:
        n = store._read(lambda ex, t=table, c=column: ex(f"SELECT COUNT(*) FROM {t} WHERE {c} = ?",
                                                          (room.code,)).fetchone()[0])
        assert n == 0, table
