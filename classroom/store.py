"""The class's shared store: every app process behind `make serve` (and every host, with PostgreSQL) reads and
writes the same rooms, questions, answers and sentences here. Pure Python: sqlite3 or psycopg, nothing else.

    store = open_store()                               # HEADLIGHT_CLASS_DB, else SQLite in HEADLIGHT_DATA_DIR
    room = store.open_room("multilingual-e5-small", "ko")  # Room(code="7K3M9X2A", ..., model=..., lang="ko")
    store.join(room.code, session)                     # a student's browser session seen in the room
    q = store.start_question(room.code, "attend", {"text": "...", "layer": 2, "head": 3})
    store.answer(room.code, q.id, session, "street")   # again with another answer: the last one counts, once
    store.answers(room.code, q.id)                     # {"street": 41, "animal": 12}
    store.reveal(room.code, q.id, {"answer": "animal", "weights": {...}})
    store.summary(room.code)                           # {"room", "students", "answers", "questions", "sentences"}

**Where.** `open_store(url)`: a `postgresql://…` URL (or `HEADLIGHT_CLASS_DB`) is PostgreSQL through psycopg, for
several hosts; anything else is SQLite: a path, `sqlite:///path`, or by default `$HEADLIGHT_DATA_DIR/class.sqlite3`
(`.headlight/` in the working directory). One SQL text serves both (`?` placeholders, rewritten to `%s` for
psycopg; `INSERT … ON CONFLICT … DO UPDATE`, `RETURNING`); only the id column's type differs.

**Several processes, one SQLite file.** WAL mode (readers never wait for the writer), a busy timeout, and every write
in a `BEGIN IMMEDIATE` transaction, which takes the write lock first and so waits in SQLite's busy handler instead of
failing with "database is locked" when a read transaction would have to be upgraded; a write that still meets a
locked or busy database is rolled back and retried with a growing pause for up to RETRY_S. Connections are pooled
per process (one per thread at a time), so a Streamlit process's script threads do not share one.

**Idempotent writes.** An answer is one row per (room, question, student session): answering again updates it, so
a student who changes their mind, or whose browser resends after a reconnect to another process, is counted once
with the last answer. A student is one row per (room, session); a sentence one per (room, session, text).

**Versioned schema.** `schema_version` holds every applied migration (MIGRATIONS: version, note, statements); a store
applies the missing ones when it opens, under the write lock (SQLite) or an advisory lock (PostgreSQL), so processes
starting together migrate once. A database newer than this code is refused.

**Rooms.** A room carries the lecturer's model and interface language (`model`, `lang`; "" when opened without
them, as the door's endpoint does): students' sentences are tokenized and the class's heads ranked on that model,
and a student who joins takes both. `set_room_model` moves a class to another model. A room's code is CODE_CHARS
characters of Crockford's base32 (no I, L, O, U; 8 characters are 40 bits),
drawn with `secrets`; `normalize_code` reads it back forgivingly (lower case, O for 0, I or L for 1, a dash). A room
expires ROOM_TTL_S (12 h) after it was opened: it is then unknown to every call, and the next `open_room` deletes
its rows. `end_room` deletes them at once. Every read and write names its room and sees nothing of another.

**Errors.** A write to an unknown or expired room raises UnknownRoom; to an unknown question or sentence of the room,
UnknownItem; an answer after the reveal, QuestionClosed (all LookupError but the last). Input over the limits
(MAX_TEXT_CHARS for a sentence, MAX_ANSWER_CHARS, ...) raises ValueError; too many sentences from one student,
TooMany (a ValueError). Reads of an unknown room return None, {} or [] (`summary` raises UnknownRoom).

**Wrong lecturer keys** (classroom/lecturer.py's Gate) are counted here per client address, so that the limit holds
across every process that shares the store: `key_failure` records one (at most `limit` kept per address, the older
than the window dropped), `key_failures` reads them back.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .backends import ID_COLUMN, MIGRATIONS, ROOM_TABLES, SCHEMA_VERSION, Exec, PostgreSQL, SQLite
from .questions import QuestionStore
from .records import (  # the store's records, limits and errors: its API (ClassError ... normalize_code)
    ALPHABET,
    CODE_CHARS,
    DATA_DIR_ENV,
    DB_ENV,
    MAX_IDLE_CONNECTIONS,
    MAX_LANG_CHARS,
    MAX_MODEL_CHARS,
    MAX_SESSION_CHARS,
    MAX_TEXT_CHARS,
    RETRY_S,
    ROOM_TTL_S,
    SQLITE_NAME,
    ClassError,
    Question,
    QuestionClosed,
    Room,
    Sentence,
    TooMany,
    UnknownItem,
    UnknownRoom,
    bounded,
    new_code,
    normalize_code,
    right_answers,
)
from .sentences import SentenceStore

__all__ = ["ALPHABET", "CODE_CHARS", "DATA_DIR_ENV", "DB_ENV", "MAX_TEXT_CHARS", "MIGRATIONS", "ROOM_TABLES",
           "ROOM_TTL_S", "SCHEMA_VERSION", "ClassError", "ClassStore", "Question", "QuestionClosed", "Room", "Sentence",
           "TooMany", "UnknownItem", "UnknownRoom", "default_sqlite_path", "new_code", "normalize_code", "open_store",
           "shared_store"]

# ---- the store -------------------------------------------------------------------------------------------------------
class ClassStore(QuestionStore, SentenceStore):
    """Rooms, questions, answers and sentences in one database; safe to share between threads and to open in many
    processes at once. `clock` (seconds since the epoch) is injectable for the expiry tests."""

    def __init__(self, db, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self.clock = clock
        self.dialect = db.dialect
        self._idle: list = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.retries = 0  # writes retried after a busy database or a lost connection (measured by the tests)
        self._transaction(self._migrate, write=True)

    def __repr__(self) -> str:
        return f"ClassStore({self._db})"

    # -- connections and transactions --
    def _take(self):
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connections are not ours
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
        return self._db.connect()

    def _give(self, conn, broken: bool) -> None:
        if not broken:
            with self._lock:
                if len(self._idle) < MAX_IDLE_CONNECTIONS and self._pid == os.getpid():
                    self._idle.append(conn)
                    return
        try:
            self._db.close(conn)
        except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is dropped either way
            pass

    def close(self) -> None:
        """Close the idle connections (a store keeps working: it opens new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self._give(conn, True)

    def _transaction(self, fn: Callable[[Exec], Any], *, write: bool):
        """fn(ex) in one transaction (BEGIN IMMEDIATE for a write on SQLite), committed; retried on a busy database
        or a lost connection for up to RETRY_S (every write is idempotent, so a retry after a commit whose answer
        was lost does no harm)."""
        deadline = time.monotonic() + RETRY_S
        pause = 0.002
        while True:
            conn = None
            try:
                conn = self._take()
                self._db.begin(conn, write)
                try:
                    result = fn(Exec(conn, self._db))
                    conn.execute("COMMIT")
                except BaseException:
                    try:
                        conn.execute("ROLLBACK")
                    except Exception:  # noqa: BLE001 - no transaction left, or the connection is gone
                        pass
                    raise
                finally:
                    self._db.end(conn)
            except Exception as exc:
                if conn is not None:
                    self._give(conn, self._db.broken(exc))
                if not self._db.retryable(exc) or time.monotonic() > deadline:
                    raise
                self.retries += 1
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, 0.1)
                continue
            self._give(conn, False)
            return result

    def _read(self, fn):
        return self._transaction(fn, write=False)

    def _write(self, fn):
        return self._transaction(fn, write=True)

    def _migrate(self, ex: Exec) -> int:
        self._db.lock_migrations(ex)
        ex("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL,"
           " note TEXT NOT NULL)")
        have = ex("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
        if have > SCHEMA_VERSION:
            raise ClassError(f"the class store {self._db} has schema version {have}; this code knows up to "
                             f"{SCHEMA_VERSION}: update Headlight")
        for version, note, statements in MIGRATIONS:
            if version > have:
                for statement in statements:
                    ex(statement.replace("{id}", ID_COLUMN[self.dialect]))
                ex("INSERT INTO schema_version (version, applied, note) VALUES (?, ?, ?)",
                   (version, time.time(), note))
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        return self._read(lambda ex: ex("SELECT MAX(version) FROM schema_version").fetchone()[0])

    # -- rooms --
    _R = "SELECT code, created, expires, model, lang FROM rooms"

    @staticmethod
    def _live(ex: Exec, code: str | None, now: float) -> Room | None:
        if code is None:
            return None
        row = ex(ClassStore._R + " WHERE code = ? AND expires > ?", (code, now)).fetchone()
        return Room(*row) if row else None

    def _need(self, ex: Exec, code: str | None, now: float) -> Room:
        room = self._live(ex, code, now)
        if room is None:
            raise UnknownRoom("no such class (unknown, ended or expired)")
        return room

    def _hold(self, ex: Exec, code: str | None, now: float) -> Room:
        """_need for a write: on PostgreSQL the room's row is also key-share locked until the commit, so a
        concurrent `end_room` (which deletes that row first) either waits for this write and then deletes its rows
        too, or ends first and this write finds no room; no row outlives its room. (SQLite runs one write at a
        time.)"""
        if self.dialect != "postgresql" or code is None:
            return self._need(ex, code, now)
        row = ex(self._R + " WHERE code = ? AND expires > ? FOR KEY SHARE", (code, now)).fetchone()
        if row is None:
            raise UnknownRoom("no such class (unknown, ended or expired)")
        return Room(*row)

    def open_room(self, model: str = "", lang: str = "") -> Room:
        """A new room with a fresh code, live for ROOM_TTL_S, on the lecturer's `model` and `lang`; the rows of
        expired rooms are deleted first."""
        m = bounded(model, "model", MAX_MODEL_CHARS, empty=True)
        lg = bounded(lang, "lang", MAX_LANG_CHARS, empty=True)
        self.purge_expired()

        def fn(ex):
            now = self.clock()
            for _ in range(20):  # 40 bits: a clash with a live room is all but impossible; then another code
                code = new_code()
                if ex("INSERT INTO rooms (code, created, expires, model, lang) VALUES (?, ?, ?, ?, ?)"
                      " ON CONFLICT (code) DO NOTHING", (code, now, now + ROOM_TTL_S, m, lg)).rowcount == 1:
                    return Room(code, now, now + ROOM_TTL_S, m, lg)
            raise ClassError("could not draw a free room code")

        return self._write(fn)

    def set_room_model(self, code: str, model: str) -> Room:
        """Move the class to another model (the lecturer's choice): sentences are tokenized and ranked on it from now
        on; those sent before keep the model they were sent with. UnknownRoom when the room is not live."""
        c = normalize_code(code)
        m = bounded(model, "model", MAX_MODEL_CHARS, empty=True)

        def fn(ex):
            self._hold(ex, c, self.clock())
            ex("UPDATE rooms SET model = ? WHERE code = ?", (m, c))
            return self._need(ex, c, self.clock())

        return self._write(fn)

    def room(self, code: str) -> Room | None:
        """The live room, or None (unknown, ended, expired or not a room code)."""
        c = normalize_code(code)
        return None if c is None else self._read(lambda ex: self._live(ex, c, self.clock()))

    def live_models(self, limit: int = 2) -> list[str]:
        """The models of the live rooms, newest room first, each once, at most `limit` (serve/preload.py loads them
        in every app process before the students come)."""
        def fn(ex):
            rows = ex("SELECT model FROM rooms WHERE expires > ? AND model <> '' ORDER BY created DESC LIMIT 200",
                      (self.clock(),)).fetchall()
            return list(dict.fromkeys(r[0] for r in rows))[:limit]

        return self._read(fn)

    def end_room(self, code: str) -> None:
        """Delete every row of the room (idempotent)."""
        c = normalize_code(code)
        if c is not None:
            self._write(lambda ex: self._delete_rooms(ex, [c]))

    @staticmethod
    def _delete_rooms(ex: Exec, codes: list[str]) -> None:
        for code in codes:
            for table, column in ROOM_TABLES:
                ex(f"DELETE FROM {table} WHERE {column} = ?", (code,))

    def purge_expired(self) -> int:
        """Delete every row of the rooms that have expired; how many rooms."""
        def fn(ex):
            codes = [r[0] for r in ex("SELECT code FROM rooms WHERE expires <= ?", (self.clock(),)).fetchall()]
            self._delete_rooms(ex, codes)
            return len(codes)

        return self._write(fn)

    # -- students --
    def join(self, code: str, session: str) -> None:
        """A student's browser session is in the room (idempotent; a student already in it costs one read, no
        write, so a page may call it on every run)."""
        c, s = normalize_code(code), bounded(session, "session", MAX_SESSION_CHARS)

        def seen(ex):
            self._need(ex, c, self.clock())
            return ex("SELECT 1 FROM students WHERE room = ? AND session = ?", (c, s)).fetchone() is not None

        if self._read(seen):
            return

        def fn(ex):
            now = self.clock()
            self._hold(ex, c, now)
            ex("INSERT INTO students (room, session, seen) VALUES (?, ?, ?) ON CONFLICT (room, session) DO NOTHING",
               (c, s, now))

        self._write(fn)

    def students(self, code: str) -> int:
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return 0
            return ex("SELECT COUNT(*) FROM students WHERE room = ?", (c,)).fetchone()[0]

        return self._read(fn)

    # -- the projector's and the tools' view --
    def summary(self, code: str) -> dict:
        """{"room", "students", "answers" (all questions), "questions": [{"id", "kind", "answers", "right"}] ("right":
        None before the reveal), "sentences" (all), "approved"}, read in one transaction. UnknownRoom when the room
        is not live."""
        c = normalize_code(code)

        def fn(ex):
            self._need(ex, c, self.clock())
            students = ex("SELECT COUNT(*) FROM students WHERE room = ?", (c,)).fetchone()[0]
            counts: dict[int, dict[str, int]] = {}
            for qid, answer, n in ex("SELECT question, answer, COUNT(*) FROM answers WHERE room = ?"
                                     " GROUP BY question, answer", (c,)).fetchall():
                counts.setdefault(qid, {})[answer] = n
            questions = []
            for qid, kind, revealed in ex("SELECT id, kind, revealed FROM questions WHERE room = ? ORDER BY id",
                                          (c,)).fetchall():
                given = counts.get(qid, {})
                right = right_answers(None if revealed is None else json.loads(revealed))
                questions.append({"id": qid, "kind": kind, "answers": sum(given.values()),
                                  "right": None if right is None else sum(n for a, n in given.items() if a in right)})
            by_status = dict(ex("SELECT status, COUNT(*) FROM sentences WHERE room = ? GROUP BY status",
                                (c,)).fetchall())
            return {"room": c, "students": students, "answers": sum(q["answers"] for q in questions),
                    "questions": questions, "sentences": sum(by_status.values()),
                    "approved": by_status.get("approved", 0)}

        return self._read(fn)


def default_sqlite_path() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or ".headlight") / SQLITE_NAME


_SHARED: dict[str, ClassStore] = {}
_SHARED_LOCK = threading.Lock()


def shared_store() -> ClassStore:
    """This process's store for the configured location (HEADLIGHT_CLASS_DB, else HEADLIGHT_DATA_DIR's SQLite file),
    opened once and shared by every thread: the door's endpoints and the Class page use the same connections."""
    where = os.environ.get(DB_ENV) or str(default_sqlite_path().resolve())
    with _SHARED_LOCK:
        store = _SHARED.get(where)
        if store is None:
            store = _SHARED[where] = open_store(where)
        return store


def open_store(url: str | None = None, *, clock: Callable[[], float] = time.time) -> ClassStore:
    """The store at `url`: `postgresql://…` (or `postgres://…`) is PostgreSQL; `sqlite:///path` or a plain path is
    SQLite. None: HEADLIGHT_CLASS_DB when set, else SQLite at $HEADLIGHT_DATA_DIR/class.sqlite3 (default
    `.headlight/class.sqlite3`; the folder is made, readable by its owner only)."""
    if url is None:
        url = os.environ.get(DB_ENV) or None
    if url is not None and url.startswith(("postgresql://", "postgres://")):
        return ClassStore(PostgreSQL(url), clock)
    if url is None:
        path = default_sqlite_path()
    else:
        path = Path(url[len("sqlite:///") - 1:] if url.startswith("sqlite:///") else url)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    return ClassStore(SQLite(path), clock)
