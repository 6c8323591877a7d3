"""Class mode's records, limits and input checks (classroom/store.py keeps them): rooms, questions and sentences as
frozen records, the store's errors, the limits on what a student sends, room codes. Pure Python."""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
from dataclasses import dataclass

ROOM_TTL_S = 12 * 3600
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: 5 bits a character, no I L O U
CODE_CHARS = 8  # 40 bits
CODE_PATTERN = re.compile(f"[{ALPHABET}]{{{CODE_CHARS}}}")
READ_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})

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


# ---- room codes and input --------------------------------------------------------------------------------------------
def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_CHARS))


def normalize_code(code: object) -> str | None:
    """A room code as typed or linked ("7k3m-9x2a", "7K3M9X2A"), upper case; None when it cannot be one."""
    if not isinstance(code, str) or len(code) > 4 * CODE_CHARS:
        return None
    c = code.strip().upper().replace("-", "").replace(" ", "").translate(READ_AS)
    return c if CODE_PATTERN.fullmatch(c) else None


def clean_text(text: str) -> str:
    """Control characters (newlines, escapes, NUL, bidi controls excepted: they are format characters, kept) become
    spaces; surrounding space goes."""
    return "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text).strip()


def bounded(value: object, what: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    if len(value) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    if not value and not empty:
        raise ValueError(f"{what} is empty")
    return value


def payload_json(value: object, what: str) -> str:
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
