"""The live questions of a room and the students' answers to them: the part of ClassStore (classroom/store.py) that
peer instruction runs on (one answer per student and question, the last one counting; closed at the reveal). Pure
Python."""

from __future__ import annotations

import json

from .records import (
    MAX_ANSWER_CHARS,
    MAX_KIND_CHARS,
    MAX_SESSION_CHARS,
    Question,
    QuestionClosed,
    UnknownItem,
    bounded,
    normalize_code,
    payload_json,
)


class QuestionStore:
    """ClassStore's questions and answers (a mixin: it runs in ClassStore's transactions)."""

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
        k = bounded(kind, "kind", MAX_KIND_CHARS)
        p = payload_json(payload, "payload")

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
        s = bounded(session, "session", MAX_SESSION_CHARS)
        a = bounded(answer, "answer", MAX_ANSWER_CHARS)
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
        r = payload_json(result, "result")

        def fn(ex):
            self._hold(ex, c, self.clock())
            if ex("UPDATE questions SET revealed = ? WHERE room = ? AND id = ?", (r, c, qid)).rowcount != 1:
                raise UnknownItem("no such question in this class")

        self._write(fn)
