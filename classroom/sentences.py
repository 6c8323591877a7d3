"""The sentences students send and their moderation, and the wrong lecturer keys per client address: the part of
ClassStore (classroom/store.py) that is not rooms, questions and answers. Pure Python."""

from __future__ import annotations

import json

from .records import (
    MAX_ADDRESS_CHARS,
    MAX_MODEL_CHARS,
    MAX_SENTENCES_PER_ROOM,
    MAX_SENTENCES_PER_SESSION,
    MAX_SESSION_CHARS,
    MAX_TEXT_CHARS,
    MAX_TOKEN_CHARS,
    MAX_TOKENS,
    STATUSES,
    Sentence,
    TooMany,
    UnknownItem,
    bounded,
    clean_text,
    normalize_code,
)


class SentenceStore:
    """ClassStore's sentences, moderation and wrong-key counts (a mixin: it runs in ClassStore's transactions)."""

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
        s = bounded(session, "session", MAX_SESSION_CHARS)
        m = bounded(model, "model", MAX_MODEL_CHARS)
        t = clean_text(bounded(text, "text", MAX_TEXT_CHARS))
        if not t:
            raise ValueError("text is empty")
        if not isinstance(tokens, (list, tuple)) or not 2 <= len(tokens) <= MAX_TOKENS:
            raise ValueError(f"tokens must be a list of 2 to {MAX_TOKENS} strings")
        toks = [clean_text(bounded(x, "a token", MAX_TOKEN_CHARS, empty=True)) for x in tokens]
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
