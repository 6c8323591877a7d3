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
import re
import secrets
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl  # the writers' queue on one host (POSIX); without it SQLite's busy handler alone
except ImportError:  # pragma: no cover - Windows
    fcntl = None

ROOM_TTL_S = 12 * 3600
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: 5 bits a character, no I L O U
CODE_CHARS = 8  # 40 bits
_CODE = re.compile(f"[{ALPHABET}]{{{CODE_CHARS}}}")
_READ_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})

STATUSES = ("pending", "approved", "hidden")
MAX_TEXT_CHARS = 200  # a student's sentence
MAX_ANSWER_CHARS = 200
MAX_SESSION_CHARS = 128
MAX_KIND_CHARS = 64
MAX_MODEL_CHARS = 200
MAX_TOKENS = 512
MAX_TOKEN_CHARS = 100
MAX_LANG_CHARS = 16
MAX_ADDRESS_CHARS = 128  # a client address kept for the wrong-key limit (longer ones are cut)
MAX_PAYLOAD_BYTES = 256 * 1024  # a question's payload or result, as JSON
MAX_SENTENCES_PER_SESSION = 50  # in one room
MAX_SENTENCES_PER_ROOM = 5000

BUSY_TIMEOUT_S = 5.0  # SQLite waits this long for the write lock before reporting busy
RETRY_S = 30.0  # a write that still meets a busy database (or a lost PostgreSQL connection) is retried this long
SQLITE_SYNCHRONOUS = "FULL"  # every commit reaches the disk: an acknowledged answer survives a power cut too
MAX_IDLE_CONNECTIONS = 8  # per process
_PG_MIGRATION_LOCK = 7_243_001  # pg_advisory_xact_lock key: one migrating process at a time

DATA_DIR_ENV = "HEADLIGHT_DATA_DIR"
DB_ENV = "HEADLIGHT_CLASS_DB"
SQLITE_NAME = "class.sqlite3"


class ClassError(Exception):
    """Base of the store's own errors."""


class UnknownRoom(ClassError, LookupError):
    """The room code is malformed, unknown, expired or ended."""


class UnknownItem(ClassError, LookupError):
    """No such question or sentence in this room."""


class QuestionClosed(ClassError):
    """The question was revealed: answers are closed."""


class TooMany(ClassError, ValueError):
    """A student (or a room) has sent as many sentences as the store takes."""


@dataclass(frozen=True)
class Room:
    code: str
    created: float
    expires: float
    model: str = ""  # the lecturer's model: students' sentences are tokenized and ranked on it ("" unset)
    lang: str = ""  # the lecturer's interface language, a joining student's default ("" unset)


@dataclass(frozen=True)
class Question:
    id: int
    room: str
    kind: str
    payload: dict
    revealed: dict | None  # the reveal's result; None while the class is answering
    created: float


@dataclass(frozen=True)
class Sentence:
    id: int
    room: str
    text: str
    tokens: list[str]
    query: int  # index in tokens of the query word (the pronoun)
    referent: int  # index in tokens of the word the student says it refers to
    status: str  # "pending" | "approved" | "hidden"
    model: str


# ---- the schema ------------------------------------------------------------------------------------------------------
# {id}: an auto-numbered primary key (SQLite: never reused, so an old question id never names a new question)
ID_COLUMN = {"sqlite": "INTEGER PRIMARY KEY AUTOINCREMENT",
             "postgresql": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"}
MIGRATIONS: list[tuple[int, str, tuple[str, ...]]] = [
    (1, "rooms, students, questions, answers, sentences", (
        "CREATE TABLE rooms (code TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL,"
        " expires DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX rooms_expires ON rooms (expires)",
        "CREATE TABLE students (room TEXT NOT NULL, session TEXT NOT NULL, seen DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (room, session))",
        "CREATE TABLE questions (id {id}, room TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,"
        " revealed TEXT, created DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX questions_room ON questions (room, id)",
        "CREATE TABLE answers (room TEXT NOT NULL, question BIGINT NOT NULL, session TEXT NOT NULL,"
        " answer TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (room, question, session))",
        "CREATE TABLE sentences (id {id}, room TEXT NOT NULL, session TEXT NOT NULL, model TEXT NOT NULL,"
        " text TEXT NOT NULL, tokens TEXT NOT NULL, query_index INTEGER NOT NULL, referent_index INTEGER NOT NULL,"
        " status TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, UNIQUE (room, session, text))",
        "CREATE INDEX sentences_room ON sentences (room, status, id)",
    )),
    (2, "rooms carry the lecturer's model and language", (
        "ALTER TABLE rooms ADD COLUMN model TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE rooms ADD COLUMN lang TEXT NOT NULL DEFAULT ''",
    )),
    (3, "wrong lecturer keys per client address, shared by every process", (
        "CREATE TABLE key_failures (address TEXT PRIMARY KEY, times TEXT NOT NULL, last DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX key_failures_last ON key_failures (last)",
    )),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
# the room's own row first: on PostgreSQL a write in flight holds it (_hold), so the delete waits for that write
ROOM_TABLES = (("rooms", "code"), ("answers", "room"), ("questions", "room"), ("students", "room"),
               ("sentences", "room"))


# ---- room codes and input --------------------------------------------------------------------------------------------
def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_CHARS))


def normalize_code(code: object) -> str | None:
    """A room code as typed or linked ("7k3m-9x2a", "7K3M9X2A"), upper case; None when it cannot be one."""
    if not isinstance(code, str) or len(code) > 4 * CODE_CHARS:
        return None
    c = code.strip().upper().replace("-", "").replace(" ", "").translate(_READ_AS)
    return c if _CODE.fullmatch(c) else None


def clean_text(text: str) -> str:
    """Control characters (newlines, escapes, NUL, bidi controls excepted: they are format characters, kept) become
    spaces; surrounding space goes."""
    return "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text).strip()


def _bounded(value: object, what: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    if len(value) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    if not value and not empty:
        raise ValueError(f"{what} is empty")
    return value


def _json(value: object, what: str) -> str:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict")
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    if len(text.encode("utf-8")) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"{what} is over {MAX_PAYLOAD_BYTES} bytes as JSON")
    return text


def right_answers(revealed: dict | None) -> set[str] | None:
    """The answers a reveal counts as right: its "answer", or every one of its "answers"; None before the reveal."""
    if revealed is None:
        return None
    right = {str(a) for a in revealed.get("answers") or ()}
    if revealed.get("answer") is not None:
        right.add(str(revealed["answer"]))
    return right


# ---- the two databases -----------------------------------------------------------------------------------------------
class _LockedConnection(sqlite3.Connection):
    """A SQLite connection with its own descriptor of the writers' lock file (see _SQLite)."""

    lock_fd: int = -1


class _SQLite:
    """SQLite in WAL mode. Writers on this host also queue on an flock of a lock file beside the database
    (`class.sqlite3.lock`; one descriptor per connection, so threads queue too) before BEGIN IMMEDIATE: a waiter
    sleeps in the kernel and wakes when the lock is free, where SQLite's busy handler polls with sleeps of up to 100 ms
    and lets a late writer overtake (measured, 16 processes on 2 cores: answers waited up to 2 s). The busy
    timeout and the retries stay for writers the lock does not cover (another host on a network disk is not
    supported anyway, a checkpoint)."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = Path(f"{path}.lock")

    def connect(self):
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False,
                               factory=_LockedConnection)
        try:
            if fcntl is not None:
                conn.lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path}: WAL mode refused ({mode}); a network file system?")
            conn.execute(f"PRAGMA synchronous = {SQLITE_SYNCHRONOUS}")
        except BaseException:
            self.close(conn)
            raise
        return conn

    @staticmethod
    def close(conn) -> None:
        try:
            conn.close()
        finally:
            if conn.lock_fd >= 0:
                os.close(conn.lock_fd)
                conn.lock_fd = -1

    @staticmethod
    def begin(conn, write: bool) -> None:
        if not write:
            conn.execute("BEGIN")
            return
        if conn.lock_fd >= 0:
            fcntl.flock(conn.lock_fd, fcntl.LOCK_EX)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            _SQLite.end(conn)
            raise

    @staticmethod
    def end(conn) -> None:
        """After COMMIT or ROLLBACK (or a failed BEGIN): the next writer may go."""
        if conn.lock_fd >= 0:
            fcntl.flock(conn.lock_fd, fcntl.LOCK_UN)

    @staticmethod
    def sql(text: str) -> str:
        return text

    @staticmethod
    def retryable(exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and any(
            w in str(exc).lower() for w in ("locked", "busy"))

    @staticmethod
    def broken(exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and not _SQLite.retryable(exc)

    def lock_migrations(self, ex) -> None:  # BEGIN IMMEDIATE holds the write lock already
        pass

    def __str__(self) -> str:
        return f"sqlite:///{self.path}"


class _PostgreSQL:
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        import psycopg  # only when PostgreSQL is asked for

        self.psycopg = psycopg
        self.url = url
        self._sql: dict[str, str] = {}

    def connect(self):
        return self.psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    @staticmethod
    def begin(conn, write: bool) -> None:
        # a read (the summary's several counts) sees one snapshot; a read-only repeatable-read transaction never
        # fails to serialise. Writes: read committed, with the room's row locked (ClassStore._hold)
        conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    @staticmethod
    def end(conn) -> None:
        pass

    @staticmethod
    def close(conn) -> None:
        conn.close()

    def sql(self, text: str) -> str:
        out = self._sql.get(text)
        if out is None:
            out = self._sql[text] = text.replace("?", "%s")
        return out

    def retryable(self, exc: BaseException) -> bool:
        e = self.psycopg.errors
        return isinstance(exc, (e.SerializationFailure, e.DeadlockDetected, self.psycopg.OperationalError))

    def broken(self, exc: BaseException) -> bool:
        return isinstance(exc, (self.psycopg.OperationalError, self.psycopg.InterfaceError))

    def lock_migrations(self, ex) -> None:
        ex("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))

    def __str__(self) -> str:  # no password in messages
        return re.sub(r"//[^@/]*@", "//…@", self.url)


class _Exec:
    """`ex(sql, params)` inside one transaction: the cursor, the SQL in the database's placeholders."""

    __slots__ = ("conn", "db")

    def __init__(self, conn, db) -> None:
        self.conn, self.db = conn, db

    def __call__(self, sql: str, params: tuple = ()):
        return self.conn.execute(self.db.sql(sql), params)


# ---- the store -------------------------------------------------------------------------------------------------------
class ClassStore:
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

    def _transaction(self, fn: Callable[[_Exec], Any], *, write: bool):
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
                    result = fn(_Exec(conn, self._db))
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

    def _migrate(self, ex: _Exec) -> int:
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
    def _live(ex: _Exec, code: str | None, now: float) -> Room | None:
        if code is None:
            return None
        row = ex(ClassStore._R + " WHERE code = ? AND expires > ?", (code, now)).fetchone()
        return Room(*row) if row else None

    def _need(self, ex: _Exec, code: str | None, now: float) -> Room:
        room = self._live(ex, code, now)
        if room is None:
            raise UnknownRoom("no such class (unknown, ended or expired)")
        return room

    def _hold(self, ex: _Exec, code: str | None, now: float) -> Room:
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
        m = _bounded(model, "model", MAX_MODEL_CHARS, empty=True)
        lg = _bounded(lang, "lang", MAX_LANG_CHARS, empty=True)
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
        m = _bounded(model, "model", MAX_MODEL_CHARS, empty=True)

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
    def _delete_rooms(ex: _Exec, codes: list[str]) -> None:
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
        c, s = normalize_code(code), _bounded(session, "session", MAX_SESSION_CHARS)

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

    # -- questions --
    @staticmethod
    def _question(row) -> Question:
        qid, room, kind, payload, revealed, created = row
        return Question(qid, room, kind, json.loads(payload), None if revealed is None else json.loads(revealed),
                        created)

    _Q = "SELECT id, room, kind, payload, revealed, created FROM questions"

    def start_question(self, code: str, kind: str, payload: dict) -> Question:
        """A new question in the room; it becomes the current one."""
        c = normalize_code(code)
        k = _bounded(kind, "kind", MAX_KIND_CHARS)
        p = _json(payload, "payload")

        def fn(ex):
            now = self.clock()
            self._hold(ex, c, now)
            qid = ex("INSERT INTO questions (room, kind, payload, created) VALUES (?, ?, ?, ?) RETURNING id",
                     (c, k, p, now)).fetchone()[0]
            return Question(qid, c, k, json.loads(p), None, now)

        return self._write(fn)

    def current_question(self, code: str) -> Question | None:
        """The room's newest question, revealed or not; None when there is none (or no such room)."""
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return None
            row = ex(self._Q + " WHERE room = ? ORDER BY id DESC LIMIT 1", (c,)).fetchone()
            return self._question(row) if row else None

        return self._read(fn)

    def question(self, code: str, qid: int) -> Question | None:
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None or not isinstance(qid, int):
                return None
            row = ex(self._Q + " WHERE room = ? AND id = ?", (c, qid)).fetchone()
            return self._question(row) if row else None

        return self._read(fn)

    def questions(self, code: str) -> list[Question]:
        """Every question of the room, oldest first."""
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return []
            return [self._question(r) for r in ex(self._Q + " WHERE room = ? ORDER BY id", (c,)).fetchall()]

        return self._read(fn)

    def answer(self, code: str, qid: int, session: str, answer: str) -> None:
        """The student's answer to the question (insert or replace: the last one counts, once). The student joins
        the room too. QuestionClosed after the reveal."""
        c = normalize_code(code)
        s = _bounded(session, "session", MAX_SESSION_CHARS)
        a = _bounded(answer, "answer", MAX_ANSWER_CHARS)
        if not isinstance(qid, int):
            raise UnknownItem("no such question in this class")

        def fn(ex):
            now = self.clock()
            if self.dialect == "postgresql":
                self._hold(ex, c, now)
            n = ex("INSERT INTO answers (room, question, session, answer, at)"
                   " SELECT q.room, q.id, ?, ?, ? FROM questions q JOIN rooms r ON r.code = q.room"
                   " WHERE q.room = ? AND q.id = ? AND q.revealed IS NULL AND r.expires > ?"
                   " ON CONFLICT (room, question, session) DO UPDATE SET answer = excluded.answer, at = excluded.at",
                   (s, a, now, c, qid, now)).rowcount
            if n != 1:  # why not: the room, the question, or the reveal
                self._need(ex, c, now)
                row = ex("SELECT revealed FROM questions WHERE room = ? AND id = ?", (c, qid)).fetchone()
                if row is None:
                    raise UnknownItem("no such question in this class")
                raise QuestionClosed("this question has been revealed")
            ex("INSERT INTO students (room, session, seen) VALUES (?, ?, ?) ON CONFLICT (room, session) DO NOTHING",
               (c, s, now))

        self._write(fn)

    def answers(self, code: str, qid: int) -> dict[str, int]:
        """answer -> how many students gave it (each student once, with their last answer)."""
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return {}
            rows = ex("SELECT answer, COUNT(*) FROM answers WHERE room = ? AND question = ? GROUP BY answer"
                      " ORDER BY answer", (c, qid)).fetchall()
            return {a: n for a, n in rows}

        return self._read(fn)

    def my_answer(self, code: str, qid: int, session: str) -> str | None:
        """This student's current answer to the question, or None."""
        c = normalize_code(code)

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return None
            row = ex("SELECT answer FROM answers WHERE room = ? AND question = ? AND session = ?",
                     (c, qid, session)).fetchone()
            return row[0] if row else None

        return self._read(fn)

    def reveal(self, code: str, qid: int, result: dict) -> None:
        """Close the question with the model's result ({"answer": ..., or "answers": [...], anything else the
        projector shows}); a second reveal replaces the first."""
        c = normalize_code(code)
        r = _json(result, "result")

        def fn(ex):
            self._hold(ex, c, self.clock())
            if ex("UPDATE questions SET revealed = ? WHERE room = ? AND id = ?", (r, c, qid)).rowcount != 1:
                raise UnknownItem("no such question in this class")

        self._write(fn)

    # -- sentences --
    @staticmethod
    def _sentence(row) -> Sentence:
        sid, room, text, tokens, query, referent, status, model = row
        return Sentence(sid, room, text, json.loads(tokens), query, referent, status, model)

    _S = "SELECT id, room, text, tokens, query_index, referent_index, status, model FROM sentences"

    def submit_sentence(self, code: str, session: str, model: str, text: str, tokens: list[str], query: int,
                        referent: int) -> Sentence:
        """A student's sentence (at most MAX_TEXT_CHARS characters; control characters become spaces), its tokens
        under `model`, the query token and the token it refers to; pending until the lecturer approves it. One row
        per (room, session, text): sending it again with other tokens or words replaces it and makes it pending
        again; sending it again unchanged changes nothing."""
        c = normalize_code(code)
        s = _bounded(session, "session", MAX_SESSION_CHARS)
        m = _bounded(model, "model", MAX_MODEL_CHARS)
        t = clean_text(_bounded(text, "text", MAX_TEXT_CHARS))
        if not t:
            raise ValueError("text is empty")
        if not isinstance(tokens, (list, tuple)) or not 2 <= len(tokens) <= MAX_TOKENS:
            raise ValueError(f"tokens must be a list of 2 to {MAX_TOKENS} strings")
        toks = [clean_text(_bounded(x, "a token", MAX_TOKEN_CHARS, empty=True)) for x in tokens]
        for name, i in (("query", query), ("referent", referent)):
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(toks):
                raise ValueError(f"{name} must be a token index (0 to {len(toks) - 1})")
        if query == referent:
            raise ValueError("the referent must be another token than the query")
        tj = json.dumps(toks, ensure_ascii=False)

        def fn(ex):
            now = self.clock()
            self._hold(ex, c, now)
            mine, total, same = ex(
                "SELECT COUNT(CASE WHEN session = ? THEN 1 END), COUNT(*), COUNT(CASE WHEN session = ? AND text = ?"
                " THEN 1 END) FROM sentences WHERE room = ?", (s, s, t, c)).fetchone()
            if not same and mine >= MAX_SENTENCES_PER_SESSION:
                raise TooMany(f"at most {MAX_SENTENCES_PER_SESSION} sentences from one student")
            if not same and total >= MAX_SENTENCES_PER_ROOM:
                raise TooMany(f"at most {MAX_SENTENCES_PER_ROOM} sentences in one class")
            row = ex("INSERT INTO sentences (room, session, model, text, tokens, query_index, referent_index, status,"
                     " created) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)"
                     " ON CONFLICT (room, session, text) DO UPDATE SET model = excluded.model,"
                     " tokens = excluded.tokens, query_index = excluded.query_index,"
                     " referent_index = excluded.referent_index,"
                     " status = CASE WHEN sentences.model = excluded.model AND sentences.tokens = excluded.tokens"
                     " AND sentences.query_index = excluded.query_index"
                     " AND sentences.referent_index = excluded.referent_index THEN sentences.status ELSE 'pending' END"
                     " RETURNING id, room, text, tokens, query_index, referent_index, status, model",
                     (c, s, m, t, tj, query, referent, now)).fetchone()
            ex("INSERT INTO students (room, session, seen) VALUES (?, ?, ?) ON CONFLICT (room, session) DO NOTHING",
               (c, s, now))
            return self._sentence(row)

        return self._write(fn)

    def sentences(self, code: str, status: str | None = None) -> list[Sentence]:
        """The room's sentences, oldest first; only those of `status` when given."""
        c = normalize_code(code)
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}")

        def fn(ex):
            if self._live(ex, c, self.clock()) is None:
                return []
            if status is None:
                rows = ex(self._S + " WHERE room = ? ORDER BY id", (c,)).fetchall()
            else:
                rows = ex(self._S + " WHERE room = ? AND status = ? ORDER BY id", (c, status)).fetchall()
            return [self._sentence(r) for r in rows]

        return self._read(fn)

    def moderate(self, code: str, sid: int, status: str) -> None:
        """Approve, hide or set back to pending one sentence of the room."""
        c = normalize_code(code)
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}")

        def fn(ex):
            self._hold(ex, c, self.clock())
            if ex("UPDATE sentences SET status = ? WHERE room = ? AND id = ?", (status, c, sid)).rowcount != 1:
                raise UnknownItem("no such sentence in this class")

        self._write(fn)

    def moderate_all(self, code: str, status: str, only: str | None = None) -> int:
        """Give every sentence of the room (only those now `only`, when given: "approve all pending") this status;
        how many."""
        c = normalize_code(code)
        if status not in STATUSES or (only is not None and only not in STATUSES):
            raise ValueError(f"status must be one of {', '.join(STATUSES)}")

        def fn(ex):
            self._hold(ex, c, self.clock())
            if only is None:
                return ex("UPDATE sentences SET status = ? WHERE room = ?", (status, c)).rowcount
            return ex("UPDATE sentences SET status = ? WHERE room = ? AND status = ?", (status, c, only)).rowcount

        return self._write(fn)

    # -- wrong lecturer keys (classroom/lecturer.py Gate) --
    def key_failure(self, address: str, now: float, window_s: float, limit: int) -> int:
        """Count a wrong key from `address` at `now`: how many recent ones (within `window_s`) it had before this
        one. At most `limit` are kept per address (one over the limit is not stored: the limit ends `window_s` after
        the oldest); addresses with none left in the window are deleted. One transaction, the address's row locked
        (PostgreSQL) or the write lock held (SQLite): processes counting at once never exceed the limit."""
        a = str(address)[:MAX_ADDRESS_CHARS]

        def fn(ex):
            ex("DELETE FROM key_failures WHERE last <= ?", (now - window_s,))
            ex("INSERT INTO key_failures (address, times, last) VALUES (?, '[]', ?) ON CONFLICT (address) DO NOTHING",
               (a, now))
            lock = " FOR UPDATE" if self.dialect == "postgresql" else ""
            times = [x for x in json.loads(ex("SELECT times FROM key_failures WHERE address = ?" + lock,
                                              (a,)).fetchone()[0]) if x > now - window_s]
            before = len(times)
            if before < limit:
                times.append(now)
            ex("UPDATE key_failures SET times = ?, last = ? WHERE address = ?", (json.dumps(times), max(times, default=now), a))
            return before

        return self._write(fn)

    def key_failures(self, address: str, now: float, window_s: float) -> list[float]:
        """The times of `address`'s wrong keys within `window_s` before `now`, oldest first."""
        a = str(address)[:MAX_ADDRESS_CHARS]

        def fn(ex):
            row = ex("SELECT times FROM key_failures WHERE address = ?", (a,)).fetchone()
            return sorted(x for x in json.loads(row[0]) if x > now - window_s) if row else []

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
        return ClassStore(_PostgreSQL(url), clock)
    if url is None:
        path = default_sqlite_path()
    else:
        path = Path(url[len("sqlite:///") - 1:] if url.startswith("sqlite:///") else url)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    return ClassStore(_SQLite(path), clock)
