"""Class mode's shared pieces (issue 29), no drawing of pages: the shared store (classroom/store.py) for this
process, the student's anonymous session id and room, the lecturer key, and the live questions built from the
quizzes (ui/quiz.py's three kinds) on the lecturer's sentence.

- The room: a student's link is `/?room=CODE` (ui/state.py reads `room` into the session state and keeps it in the
  URL on every page); `student_room()` is the code once the store knows it.
- The room's model (issue 34): a room carries the lecturer's model and language (classroom/store.py `Room`). A
  student's session takes the room's model when it joins, and again whenever the lecturer moves the class to
  another model (`follow_room`, first in every run; the live question notices a move within REFRESH_S and
  reruns the page); it takes the room's language when it joins, unless the link names one. The sentences students
  send are tokenized on the room's model (ui/class_student.py), and the class's heads are ranked on it
  (ui/class_lecturer.py). The room's model is what counts: the lecturer's sidebar may show another model (the Class
  page then says so and offers to move the class).
- The lecturer key: `HEADLIGHT_LECTURER_KEY`, compared in constant time (classroom/lecturer.py, as the door's
  class endpoints). The right key always opens, whatever wrong keys came before from the same address (a hall
  behind one campus address shares it); wrong keys are counted per client address in the class store (every
  process's), and after the Gate's limit (10 a minute) a wrong key is told to wait. The key itself is never kept
  in the session: only the fact that this session gave it.
- A question's payload holds what every student needs to draw it (the sentence, the options, layer / head / step)
  and, for the reveal, the model's answer and the weight it gave each option. Students answer an option's index;
  the store counts one answer per student session (the last one).
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

import numpy as np
import streamlit as st

from classroom.lecturer import Gate, lecturer_key
from classroom.store import ClassError, ClassStore, Question, Room, normalize_code, shared_store
from i18n import LANGS, head_name, t
from model import models_with

from . import runs
from .quiz import next_options
from .state import available_models
from .view import K_LANG, K_MODEL, K_ROOM, SESSION_ID, View, md_escape

# SESSION_ID (ui/view.py): a random id per browser session, the store's "student"; kept in a student's URL (K_SID)
LECTURER = "_hl_class_lecturer"  # True once this session gave the key
LECTURER_ROOM = "_hl_class_lecturer_room"  # the room this lecturer runs
JOINED = "_hl_class_joined"  # the room this session joined
FOLLOWED = "_hl_class_followed"  # (room code, model) this session last took from its room
MAX_SENTENCE = 200  # characters of a student's sentence
KINDS = ("attend", "prev_head", "next_token")
clock = time.time  # the wrong-key limit's clock, seconds since the epoch (shared by processes; a test stops it)
NEXT_MODEL, NEXT_TASK = models_with(tasks=True)[0], "copy"  # the decoder a "which token next" question runs


def normalize(code: object) -> str | None:
    """A room code as typed or linked, upper case; None when it cannot be one (classroom.store.normalize_code)."""
    return normalize_code(code)


def store() -> ClassStore:
    """This process's store (classroom.store.shared_store: one per location, shared with the door's endpoints; a
    test's temporary HEADLIGHT_DATA_DIR is its own)."""
    return shared_store()


def session_id() -> str:
    """This browser session's anonymous id (random; nothing personal). A student's is kept in the link beside the
    room (ui/state.py write_url), so that a reconnect to another app process is still the same student."""
    return st.session_state.setdefault(SESSION_ID, secrets.token_urlsafe(16))


def student_room() -> str | None:
    """The room of a student's link, when the store knows it (joined once per session and room)."""
    code = normalize_code(st.session_state.get(K_ROOM))
    if code is None:
        return None
    if st.session_state.get(JOINED) == code and store().room(code) is not None:
        return code
    try:
        store().join(code, session_id())
    except ClassError:
        return None
    st.session_state[JOINED] = code
    return code


def live_room(code: str | None) -> Room | None:
    """The live room of a code (its model and language), or None (also when the store cannot be read: logged)."""
    try:
        return store().room(code) if code else None
    except Exception:  # noqa: BLE001 - called before the page's error boundary; the banner says the class is gone
        logging.getLogger("headlight").exception("the class store could not be read")
        return None


def room_model(room: Room | None) -> str | None:
    """The room's model when this app has it (a room opened by the door's endpoint has none: None)."""
    return room.model if room is not None and room.model in available_models() else None


def follow_room() -> None:
    """A student's session takes its room's model: when it joins, and when the lecturer moves the class to another
    model; and the room's language when it joins, unless the link names one. First thing in a run (ui/shell.py),
    before the page menu and the sidebar are drawn in the session's language; the link's room on a session's first
    run (ui/state.py reads it into the session state later in that run). A session without a room reads nothing."""
    ss = st.session_state
    code = normalize_code(ss.get(K_ROOM) or st.query_params.get(K_ROOM))
    if code is None:
        return
    room = live_room(code)
    if room is None:
        return
    done = ss.get(FOLLOWED)
    if done == (code, room.model):
        return
    if room_model(room):
        ss[K_MODEL] = room.model
    if (done is None or done[0] != code) and room.lang in LANGS and st.query_params.get(K_LANG) is None:
        ss[K_LANG] = room.lang
    ss[FOLLOWED] = (code, room.model)


def moved(room: Room) -> bool:
    """Whether the lecturer moved the class to another model since this session followed it (the page reruns)."""
    done = st.session_state.get(FOLLOWED)
    return done is not None and done[0] == room.code and done[1] != room.model


# ---- the lecturer key ----------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _gate() -> Gate:
    """The key check; wrong keys counted per client address in the class store, with the door's and every other
    process's (classroom/lecturer.py)."""
    return Gate(failures=store, clock=lambda: clock())


def client_address() -> str:
    """The browser's address: Streamlit's peer, or, when the peer is this machine (HAProxy of `make serve`), the
    last address of X-Forwarded-For (the one HAProxy added), as serve/door.py reads it."""
    ip = getattr(st.context, "ip_address", None)
    if ip:
        return ip
    forwarded = (st.context.headers or {}).get("X-Forwarded-For") or ""
    return forwarded.split(",")[-1].strip() or "local"


def key_set() -> bool:
    return lecturer_key() is not None


def is_lecturer() -> bool:
    return bool(st.session_state.get(LECTURER)) and key_set()


def try_key(given: str) -> str:
    """Check a key: "ok" (the right key, always), "wrong", or "wait" (a wrong key after too many from this address
    within a minute)."""
    verdict = _gate().check(client_address(), given)
    if verdict == "ok":
        st.session_state[LECTURER] = True
        return "ok"
    return "wait" if verdict == "limited" else "wrong"


def lecturer_room() -> str | None:
    """The room this lecturer runs, while it exists."""
    code = st.session_state.get(LECTURER_ROOM)
    if code and is_lecturer() and store().room(code) is not None:
        return code
    return None


# ---- questions ---------------------------------------------------------------------------------------------------
def attend_payload(view: View) -> dict:
    """Where will the sidebar's query token attend in the sidebar's layer and head (the model's own row of A)."""
    tr = runs.get_trace(view.model_name, view.device, view.text)
    rows, cols = tr.axis_tokens(view.block)
    i = min(view.token, len(rows) - 1)
    w = np.asarray(tr.attention(view.block)[view.layer, view.head, i], dtype=np.float64)
    return dict(model=view.model_name, text=view.text, block=view.block, layer=view.layer, head=view.head, query=i,
                query_token=rows[i], options=[f"{j}: {c}" for j, c in enumerate(cols)], answer=int(w.argmax()),
                weights=[round(float(x), 6) for x in w])


def prev_head_payload(view: View) -> dict:
    """Which head of the sidebar's layer is the previous-token head (analysis.metrics' "prev")."""
    prev = np.asarray(runs.block_metrics(view.model_name, view.device, view.text, view.block)["prev"][view.layer])
    prev = np.nan_to_num(prev, nan=0.0)
    return dict(model=view.model_name, text=view.text, block=view.block, layer=view.layer,
                options=[str(h) for h in range(len(prev))], answer=int(prev.argmax()),
                weights=[round(float(x), 6) for x in prev])


def next_token_payload(view: View, step: int) -> dict:
    """Which token will seq2seq-tiny's decoder emit at `step` (its copy task on the lecturer's sentence)."""
    run = runs.greedy_run(NEXT_MODEL, view.device, view.text, NEXT_TASK)
    step = max(1, min(step, len(run.steps)))
    s = run.steps[step - 1]
    options = next_options(run, step)
    probs = dict(zip(s.top_tokens, (float(p) for p in s.top_probs)))
    return dict(model=NEXT_MODEL, text=view.text, task=NEXT_TASK, step=step, last=s.inputs[-1], options=options,
                answer=options.index(s.chosen), weights=[round(probs[o], 6) if o in probs else None for o in options])


def make_payload(kind: str, view: View, step: int = 1) -> dict:
    if kind == "attend":
        return attend_payload(view)
    if kind == "prev_head":
        return prev_head_payload(view)
    if kind == "next_token":
        return next_token_payload(view, step)
    raise ValueError(f"unknown question kind {kind!r}; kinds: {', '.join(KINDS)}")


def question_text(q: Question, lang: str) -> str:
    """The question in the viewer's language (markdown; the tokens escaped)."""
    p = q.payload
    if q.kind == "attend":
        return t("quiz.attend.q", lang, token=md_escape(p["query_token"]), where=head_name(p["layer"], p["head"], lang))
    if q.kind == "prev_head":
        return t("quiz.prev.q", lang, layer=p["layer"])
    return t("quiz.next.q", lang, step=p["step"], last=md_escape(p["last"]))


def option_label(q: Question, i: int, lang: str) -> str:
    """Option i as plain text (a chart's axis, a table)."""
    return t("tour.head_n", lang, i=i) if q.kind == "prev_head" else str(q.payload["options"][i])


OWN = "own:"  # a student's answer on their own sentence: "own:1" right, "own:0" wrong (kept off the spread)
OWN_KINDS = ("attend", "prev_head")  # the questions a student may answer on their own sentence


def own_question(q: Question, text: str, device: str, query: int | None = None) -> tuple[list[str], int] | None:
    """(options, the model's answer) of question `q` asked on another sentence (a student's own, read by the
    question's model): for "where will it attend", from the `query` token the student chose; None when it cannot be
    asked there (no text, no query chosen, or a layer / head the text's trace lacks)."""
    p = q.payload
    if q.kind not in OWN_KINDS or not text.strip():
        return None
    if q.kind == "attend":
        tr = runs.get_trace(p["model"], device, text)
        rows, cols = tr.axis_tokens(p["block"])
        if query is None or not 0 <= query < len(rows):
            return None
        w = np.asarray(tr.attention(p["block"])[p["layer"], p["head"], query], dtype=np.float64)
        return [f"{j}: {c}" for j, c in enumerate(cols)], int(w.argmax())
    prev = np.asarray(runs.block_metrics(p["model"], device, text, p["block"])["prev"][p["layer"]])
    return [str(h) for h in range(len(prev))], int(np.nan_to_num(prev, nan=0.0).argmax())


@dataclass(frozen=True)
class Tally:
    counts: list[int]  # answers per option (on the lecturer's sentence)
    answered: int  # students who answered (each counted once), on either sentence
    own: int = 0  # of them, on their own sentence
    own_right: int = 0  # of those, right


def tally(code: str, q: Question) -> Tally:
    """The answers per option (answers that name no option are left out), and those on students' own sentences."""
    got = store().answers(code, q.id)
    n = len(q.payload["options"])
    counts = [0] * n
    own = own_right = 0
    for ans, c in got.items():
        ans = str(ans)
        if ans.isdigit() and int(ans) < n:
            counts[int(ans)] += int(c)
        elif ans.startswith(OWN):
            own += int(c)
            own_right += int(c) if ans == OWN + "1" else 0
    return Tally(counts, sum(counts) + own, own, own_right)


def reveal_result(code: str, q: Question) -> dict:
    """What the reveal shows: the model's answer, how many were right (on the lecturer's sentence and on their own),
    the weight the model gave each option. "answers": what the store's summary counts as right."""
    tl = tally(code, q)
    answer = int(q.payload["answer"])
    return dict(answer=answer, answers=[str(answer), OWN + "1"], right=tl.counts[answer] + tl.own_right,
                answered=tl.answered, own=tl.own, own_right=tl.own_right, counts=tl.counts,
                weights=q.payload["weights"])


# ---- students' sentences -------------------------------------------------------------------------------------------
def sentence_problem(text: str) -> str | None:
    """Why a student's sentence is refused (a catalogue key), or None: empty, or over MAX_SENTENCE characters."""
    if not text.strip():
        return "class.send.empty"
    if len(text) > MAX_SENTENCE:
        return "class.send.long"
    return None


def plain(text: str) -> str:
    """Student text for st.text: non-printable characters written as \\xNN (never markdown or HTML anyway)."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))
