"""A class answering one question, through Streamlit's own websocket (issue 29, part 7).

Each simulated student does what a phone does with the lecturer's link, over the same protocol as the lecture-hall
load test (bench/loadtest.py: its session, BackMsg and delta reading are imported, not copied):

1. GET /_stcore/host-config (the balancer's cookie), open the websocket and run `/?room=CODE&text=<a sentence of its
   own, unseen>`; the page shows the class banner and the room's live question, whose answer widget is `st.pills`
   with key `class_answer_<question id>` (ui/class_student.py). While it waits, the student's browser reruns that
   fragment every 2 s (its `run_every`), as a browser does: a `rerun_script` with the fragment's id and
   `is_auto_rerun` (`--no-refresh` leaves that out).
2. The answers are spread evenly over `--seconds`, starting once every student has loaded the page (a class that
   opened the link before the lecturer asked). A student answers as the browser does when a pill is clicked: a
   `rerun_script` of the fragment with the widget's new `string_array_value` (the chosen option's label, as
   Streamlit 1.67's button group serializes it).
3. **Acknowledged**: the rerun that followed finished (`script_finished`), without an error, and the page shows the
   answer as recorded ("Your answer is in", the `class.answered_you` caption; it appears only after the app's
   on_change callback stored it). Latency: from sending the answer to that.
4. If the websocket drops (its app process died), the student does what the browser does (Streamlit 1.67's
   frontend, on reconnecting: "Requesting a script run" with its widgets' current values): asks the balancer again
   with its cookie (HAProxy's `option redispatch` sends it to another process), opens a new websocket and reruns the
   page with its widgets' values, its answer included when it had chosen one. A student whose turn comes while its
   websocket is closed reconnects first (a browser shows "Connecting" and no clickable widget meanwhile); an answer
   sent just before the drop is acknowledged by the rerun after the reconnect, when the page says so.
   Reconnections are counted; an answer never acknowledged is an error.

The projector: every `--poll` s (0.25) from the first answer, `GET /_headlight/class/rooms/CODE/summary` with the
lecturer key (`--key` or HEADLIGHT_LECTURER_KEY), as the Class page's projector would read the store; the lag of the
k-th acknowledgement is the time until the summary's `answers` first reached k. At the end: every acknowledged
answer must be in the summary exactly once (the question's `answers` equals the students acknowledged), and, with
`--store` (the same HEADLIGHT_DATA_DIR's SQLite file, or the PostgreSQL URL), per option.

`--kill-at S`: S seconds into the answers, SIGKILL the app process behind the balancer that holds the most students
(the fault run; the app processes are found as loadtest.py's process_tree finds the server's tree). Answers
acknowledged before the kill are then checked in the summary.

    .venv/bin/python bench/class_load.py --url http://127.0.0.1:8641 --room 7K3M9X2A --students 300 --seconds 10

Only loopback URLs. Bounded: at most 400 students, and the run stops by itself after
`--seconds` + 3 x `--timeout` + 30 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

import websockets
from websockets.protocol import State

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadtest as lt  # noqa: E402

from i18n import t as tr  # noqa: E402

MAX_STUDENTS = lt.MAX_STUDENTS
ANSWER_KEY = "class_answer_"  # ui/class_student.py: the live question's pills, key class_answer_<question id>
ANSWERED = tr("class.answered_you", "en")  # the caption shown once the answer is stored
REFRESH_S = 2.0  # ui/class_student.py REFRESH_S: the question fragment's run_every
MAX_RECONNECTS = 3


@dataclass
class ClassStudent(lt.Student):
    option: int = 0  # the option index it answers
    qid: int | None = None
    widget_id: str | None = None
    fragment_id: str = ""
    labels: list[str] = field(default_factory=list)  # the pills' option labels, as sent back
    sent_at: float | None = None  # monotonic time the answer was first sent
    acked_at: float | None = None
    reconnects: int = 0
    refreshes: int = 0
    saw_answered: bool = False
    resent: bool = False  # its answer was in flight when the websocket dropped: re-sent by the reconnect's rerun
    loaded: bool = False

    @property
    def latency(self) -> float | None:
        return None if self.sent_at is None or self.acked_at is None else self.acked_at - self.sent_at


def _reader(st: ClassStudent):
    """A Delta hook for loadtest._wait_run: the answer widget, its fragment, and the "answer is in" caption."""
    def on_delta(delta) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        el = delta.new_element
        which = el.WhichOneof("type")
        if which == "button_group" and ANSWER_KEY in el.button_group.id:
            bg = el.button_group
            st.widget_id = bg.id
            st.qid = int(bg.id.rsplit(ANSWER_KEY, 1)[1])
            st.fragment_id = delta.fragment_id
            st.labels = [o.content for o in bg.options]
        elif which == "markdown" and el.markdown.body.strip() == ANSWERED:
            st.saw_answered = True
    return on_delta


async def _run(ws, sess: lt._Session, st: ClassStudent, deadline: float, **msg) -> None:
    st.saw_answered = False
    await ws.send(lt._rerun_msg(sess, **msg))
    await lt._wait_run(ws, sess, st, deadline, _reader(st))


async def run_student(st: ClassStudent, host: str, port: int, room: str, timeout: float, delay: float,
                      loaded: asyncio.Event | None, burst: dict, refresh: bool, stop_at: float) -> ClassStudent:
    """One student: load the room's link, wait for its turn (refreshing the question as the browser does), answer,
    wait for the acknowledgement; reconnect (up to MAX_RECONNECTS) when the websocket drops."""
    await asyncio.sleep(delay)
    t0 = time.monotonic()
    sess = lt._Session()
    on_delta = _reader(st)
    cookie = ""
    stage = "http"
    try:
        while True:
            try:
                cookie = await lt._host_config(st, host, port, timeout, t0, cookie)
                if cookie is None:
                    return st
                stage = "websocket"
                async with lt._stream(st, host, port, cookie, timeout) as ws:
                    stage = "first run" if not st.loaded else "rerun after reconnect"
                    sess.query_string = sess.query_string or urlencode({"room": room, "text": st.text1},
                                                                       quote_via=quote)
                    chosen = ([st.labels[st.option]] if st.sent_at is not None and st.labels else None)
                    st.resent = st.resent or bool(chosen and st.acked_at is None)  # in flight when it dropped
                    # the browser reruns the page it shows, with its widgets' values (the answer, once chosen)
                    await ws.send(lt._rerun_msg(sess, widget=(st.widget_id, chosen) if chosen else None))
                    await lt._wait_run(ws, sess, st, time.monotonic() + timeout, on_delta)
                    if st.sent_at is not None and st.acked_at is None and st.saw_answered and not st.errors:
                        st.acked_at = time.monotonic()  # the answer re-sent on reconnect, now shown as recorded
                    if not st.loaded:
                        st.first_s = time.monotonic() - t0
                        st.loaded = True
                        if loaded is not None:
                            loaded.set()
                    if st.widget_id is None:
                        st.errors.append("no class_answer pills on the page")
                        return st
                    stage = "waiting"
                    while st.sent_at is None:  # until its turn: the fragment's run_every, as the browser does
                        start = burst.get("start")
                        now = time.monotonic()
                        due = None if start is None else start + burst["offset"][st.index]
                        if due is not None and now >= due:
                            break
                        wait = REFRESH_S if due is None else min(REFRESH_S, due - now)
                        await asyncio.sleep(max(0.0, wait))
                        if refresh and (due is None or time.monotonic() < due):
                            await _run(ws, sess, st, time.monotonic() + timeout, fragment_id=st.fragment_id,
                                       auto=True)
                            st.refreshes += 1
                    if st.sent_at is None:
                        stage = "answer"
                        if ws.state is not State.OPEN:  # a browser sees the drop at once: it reconnects first
                            raise websockets.exceptions.ConnectionClosedError(None, None)
                        st.sent_at = time.monotonic()
                        await _run(ws, sess, st, st.sent_at + timeout, fragment_id=st.fragment_id,
                                   widget=(st.widget_id, [st.labels[st.option]]))
                        if st.saw_answered and not st.errors:
                            st.acked_at = time.monotonic()
                        elif not st.errors:
                            st.errors.append("the page did not show the answer as recorded")
                        # the class's browsers keep refreshing the question until the burst is over
                    while refresh and time.monotonic() + REFRESH_S < min(stop_at, burst["end"]):
                        await asyncio.sleep(REFRESH_S)
                        await _run(ws, sess, st, time.monotonic() + timeout, fragment_id=st.fragment_id, auto=True)
                        st.refreshes += 1
                    return st
            except (OSError, websockets.exceptions.ConnectionClosed, asyncio.IncompleteReadError) as exc:
                if st.reconnects >= MAX_RECONNECTS or time.monotonic() > stop_at:
                    st.errors.append(f"{stage} failed: {type(exc).__name__}: {str(exc)[:100]}")
                    return st
                st.reconnects += 1
                await asyncio.sleep(0.5 * st.reconnects)  # the browser's reconnect back-off, roughly
    except TimeoutError:
        st.errors.append(f"timeout ({stage}, {timeout:g} s)")
    except (OSError, websockets.exceptions.WebSocketException, asyncio.IncompleteReadError) as exc:
        st.errors.append(f"{stage} failed: {type(exc).__name__}: {str(exc)[:100]}")
    except Exception as exc:  # noqa: BLE001 - a client bug must show up as an error, not a silent success
        st.errors.append(f"{stage}: load-test client error {type(exc).__name__}: {str(exc)[:100]}")
    return st


# ---- the lecturer's side: the summary endpoint ------------------------------------------------------------------
def summary(host: str, port: int, room: str, key: str, timeout: float = 5.0) -> dict:
    req = urllib.request.Request(f"http://{lt._netloc(host, port)}/_headlight/class/rooms/{room}/summary",
                                 headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - loopback only (check_loopback)
        return json.loads(r.read())


def question_answers(s: dict, qid: int | None) -> int:
    """The summary's count of answers to question qid (all questions when None)."""
    if qid is None:
        return int(s["answers"])
    return sum(int(q["answers"]) for q in s["questions"] if q["id"] == qid)


async def projector(host: str, port: int, room: str, key: str, qid_of, poll: float, stop: asyncio.Event,
                    seen: list[tuple[float, int]], failures: list[str]) -> None:
    """Poll the summary every `poll` s; record (time, answers to the live question) each time."""
    while not stop.is_set():
        t = time.monotonic()
        try:
            s = await asyncio.to_thread(summary, host, port, room, key)
            seen.append((time.monotonic(), question_answers(s, qid_of())))
        except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
            failures.append(f"{type(exc).__name__}: {str(exc)[:80]}")
        await asyncio.sleep(max(0.0, poll - (time.monotonic() - t)))


def projector_lags(acks: list[float], seen: list[tuple[float, int]]) -> list[float]:
    """For the k-th acknowledgement (by time), the wait until a summary first showed k answers or more (0 when the
    summary showed it before the page did); None-free: acknowledgements never seen are left out (and reported)."""
    lags = []
    for k, t_ack in enumerate(sorted(acks), start=1):
        t_seen = next((t for t, n in seen if n >= k), None)
        if t_seen is not None:
            lags.append(max(0.0, t_seen - t_ack))
    return lags


def open_room(host: str, port: int, key: str, timeout: float = 10.0) -> str:
    """POST /_headlight/class/rooms with the lecturer key: the new room's code."""
    req = urllib.request.Request(f"http://{lt._netloc(host, port)}/_headlight/class/rooms", data=b"", method="POST",
                                 headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - loopback only (check_loopback)
        return json.loads(r.read())["room"]


QUESTION_TEXT = "The animal didn't cross the street because it was tired."


def start_question(where: str | None, room: str) -> int:
    """Start a "which head of layer 0 is the previous-token head" question in the room, through the store itself:
    there is no endpoint for it (the lecturer starts questions on the Class page). `where`: the store the app uses
    (None: HEADLIGHT_CLASS_DB, else $HEADLIGHT_DATA_DIR/class.sqlite3, as the app opens it). The payload is the
    shape ui/class_room.py's prev_head_payload makes, for minilm-l6 (12 heads); its answer and weights are
    placeholders (the load run never reveals)."""
    from classroom.store import open_store

    payload = dict(model="minilm-l6", text=QUESTION_TEXT, block="encoder", layer=0,
                   options=[str(h) for h in range(12)], answer=0, weights=[0.0] * 12)
    return open_store(where).start_question(room, "prev_head", payload).id


# ---- the fault: one app process killed ----------------------------------------------------------------------------
def app_processes(port: int) -> dict[str, int]:
    """{"app1": pid, ...}: the Streamlit processes of the server tree behind `port` (deploy/serve.sh's appN, N in
    the order of their ports), found as loadtest.py's process_tree finds them."""
    root = lt.server_root_pid(port)
    apps = []
    for pid in lt.process_tree(root) if root else []:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if "app.py" in args and "--server.port" in args:
            apps.append((int(args[args.index("--server.port") + 1]), pid))
    return {f"app{i}": pid for i, (_, pid) in enumerate(sorted(apps), start=1)}


def kill_busiest(port: int, students: list[ClassStudent]) -> tuple[str, int] | None:
    apps = app_processes(port)
    if not apps:
        return None
    load = {name: 0 for name in apps}
    for s in students:
        for b in s.backends:
            if b in load:
                load[b] += 1
    name = max(sorted(load), key=lambda n: load[n])
    os.kill(apps[name], signal.SIGKILL)
    return name, apps[name]


# ---- the run -----------------------------------------------------------------------------------------------------
def pct(xs: list[float], q: float) -> float | None:
    """The q-th percentile (0..100)."""
    return lt.pct(xs, q / 100)


def _f(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


@dataclass
class Result:
    students: list[ClassStudent]
    n_options: int
    sent: int
    acked: int
    errors: int
    lat: list[float]
    lags: list[float]
    not_seen: int
    summary_answers: int | None
    summary_before_end: list[tuple[float, int]]
    per_option_ok: bool | None
    killed: tuple[str, int] | None
    kill_at: float | None
    acked_before_kill: int
    answers_at_kill_check: int | None
    reconnects: int
    wall_s: float
    poll_failures: list[str]
    before_kill_ok: bool | None = None  # per option (--store): every answer acknowledged before the kill is stored
    exactly_once: bool = False
    notes: list[str] = field(default_factory=list)


async def run(args, host: str, port: int) -> Result:
    rng = random.Random(args.seed)
    first = 50_000 + 1000 * args.seed  # the sentences: unseen by a server that saw runs with other seeds
    students = [ClassStudent(index=i, page="", text1=lt.sentence(first + i), text2="") for i in range(args.students)]
    order = list(range(args.students))
    rng.shuffle(order)
    burst: dict = {"offset": {i: args.seconds * k / max(1, args.students) for k, i in enumerate(order)},
                   "end": float("inf")}
    t_start = time.monotonic()
    stop_at = t_start + args.max_seconds
    load_deadline = t_start + args.ramp + args.timeout
    loaded = asyncio.Event()
    tasks = [asyncio.create_task(run_student(s, host, port, args.room, args.timeout, args.ramp * s.index /
                                             max(1, args.students), loaded, burst, not args.no_refresh,
                                             stop_at)) for s in students]
    # the answers start once every student has loaded the page (or failed), or after ramp + timeout
    while time.monotonic() < load_deadline and not all(s.loaded or s.errors or t.done()
                                                       for s, t in zip(students, tasks)):
        await asyncio.sleep(0.1)
    qids = {s.qid for s in students if s.qid is not None}
    if len(qids) > 1:
        raise SystemExit(f"students saw different questions {sorted(qids)}: start one question and run again")
    n_options = max((len(s.labels) for s in students), default=0)
    for s in students:
        s.option = rng.randrange(n_options) if n_options else 0
    qid = next(iter(qids), None)
    seen: list[tuple[float, int]] = []
    poll_failures: list[str] = []
    stop_poll = asyncio.Event()
    base = 0
    if qid is not None and args.key:
        try:
            base = question_answers(await asyncio.to_thread(summary, host, port, args.room, args.key), qid)
        except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
            poll_failures.append(f"{type(exc).__name__}: {str(exc)[:80]}")
    if base:
        print(f"note: the question had {base} answers before this run (from an earlier run?): counted on top",
              file=sys.stderr)
    poller = asyncio.create_task(projector(host, port, args.room, args.key, lambda: qid, args.poll, stop_poll, seen,
                                           poll_failures)) if args.key else None
    burst["start"] = time.monotonic()
    burst["end"] = burst["start"] + args.seconds + REFRESH_S  # the browsers refresh until then, then close
    killed, kill_at, acked_before_kill, answers_at_kill = None, None, 0, None
    if args.kill_at is not None:
        await asyncio.sleep(args.kill_at)
        kill_at = time.monotonic()
        acked_before_kill = sum(1 for s in students if s.acked_at is not None)
        killed = kill_busiest(port, students)
        if killed is None:
            print("warning: no app process found behind the port: nothing killed", file=sys.stderr)
    done, pending = await asyncio.wait(tasks, timeout=max(1.0, stop_at - time.monotonic()))
    for t in pending:
        t.cancel()
    for s, t in zip(students, tasks):
        if t in pending:
            s.errors.append(f"stopped by the {args.max_seconds:g} s cap")
    acks = [s.acked_at for s in students if s.acked_at is not None]
    # the projector keeps looking until it has seen every acknowledged answer (or 2 x the target lag past the last)
    if poller is not None:
        until = (max(acks) if acks else time.monotonic()) + max(4.0, 2 * args.lag_target)
        while time.monotonic() < until and (not seen or seen[-1][1] - base < len(acks)):
            await asyncio.sleep(args.poll)
        stop_poll.set()
        await poller
    wall = time.monotonic() - burst["start"]
    final = None
    if args.key and qid is not None:
        try:
            final = question_answers(await asyncio.to_thread(summary, host, port, args.room, args.key), qid) - base
        except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
            poll_failures.append(f"final summary: {type(exc).__name__}: {str(exc)[:80]}")
    seen_rel = [(t, n - base) for t, n in seen]
    lags = projector_lags(acks, seen_rel)
    if kill_at is not None and final is not None:
        answers_at_kill = final  # every answer acknowledged before the kill must be among them (checked below)
    per_option_ok = before_kill_ok = None
    if args.store and qid is not None:
        per_option_ok, before_kill_ok = check_store(args.store, args.room, qid, students, base == 0, kill_at)
    res = Result(students=students, n_options=n_options, sent=sum(1 for s in students if s.sent_at is not None),
                 acked=len(acks), errors=sum(1 for s in students if s.errors),
                 lat=[s.latency for s in students if s.latency is not None], lags=lags,
                 not_seen=len(acks) - len(lags), summary_answers=final, summary_before_end=seen_rel,
                 per_option_ok=per_option_ok, killed=killed, kill_at=None if kill_at is None else
                 kill_at - burst["start"], acked_before_kill=acked_before_kill,
                 answers_at_kill_check=answers_at_kill, reconnects=sum(s.reconnects for s in students),
                 wall_s=wall, poll_failures=poll_failures, before_kill_ok=before_kill_ok)
    res.exactly_once = final is not None and final == res.acked == res.sent and not res.errors
    return res


def _choices(students: list[ClassStudent], before: float | None = None) -> dict[str, int]:
    want: dict[str, int] = {}
    for s in students:
        if s.acked_at is not None and (before is None or s.acked_at < before):
            want[str(s.option)] = want.get(str(s.option), 0) + 1
    return want


def check_store(where: str, room: str, qid: int, students: list[ClassStudent], fresh: bool,
                kill_at: float | None = None) -> tuple[bool, bool | None]:
    """Per option: (the store's answers to the question equal the acknowledged students' choices, and, with a kill,
    they hold at least the choices acknowledged before it). A fresh question only: an earlier run's answers would be
    counted too."""
    from classroom.store import open_store

    if not fresh:
        print("note: --store check skipped: the question had answers before this run", file=sys.stderr)
        return True, None
    counts = open_store(where).answers(room, qid)
    before = None if kill_at is None else all(counts.get(o, 0) >= n for o, n in _choices(students, kill_at).items())
    return counts == _choices(students), before


def report(args, r: Result) -> None:
    lat = r.lat
    print(f"class load: {args.students} students, room {args.room}, answers spread over {args.seconds:g} s "
          f"({r.n_options} options), refresh every {REFRESH_S:g} s: {'off' if args.no_refresh else 'on'}")
    print(f"  answers sent {r.sent}, acknowledged {r.acked}, errors {r.errors} (students), reconnects "
          f"{r.reconnects}, wall {r.wall_s:.1f} s")
    if lat:
        print(f"  answer -> acknowledgement: p50 {_f(pct(lat, 50))} s, p95 {_f(pct(lat, 95))} s, max "
              f"{_f(max(lat))} s (target p95 <= {args.p95_target:g} s)")
    loads = [s.first_s for s in r.students if s.first_s is not None]
    if loads:
        print(f"  page load before the answers: p50 {_f(statistics.median(loads))} s, max {_f(max(loads))} s; "
              f"refreshes {sum(s.refreshes for s in r.students)}")
    if r.summary_answers is not None:
        print(f"  summary: {r.summary_answers} answers to the question; acknowledged {r.acked}: "
              f"{'every acknowledged answer exactly once' if r.summary_answers == r.acked else 'MISMATCH'}")
    if r.per_option_ok is not None:
        print(f"  store, per option: {'matches the acknowledged choices' if r.per_option_ok else 'MISMATCH'}")
    if r.lags or r.not_seen:
        print(f"  projector lag (summary polled every {args.poll:g} s): p50 {_f(pct(r.lags, 50))} s, p95 "
              f"{_f(pct(r.lags, 95))} s, max {_f(max(r.lags) if r.lags else None)} s (target <= "
              f"{args.lag_target:g} s); acknowledged but never seen: {r.not_seen}")
    resent = sum(1 for s in r.students if s.resent)
    if resent:
        print(f"  answers in flight when their websocket dropped (re-sent by the rerun after reconnecting, as the "
              f"browser does; then acknowledged by the page): {resent}")
    if r.killed is not None:
        print(f"  fault: SIGKILL {r.killed[0]} (pid {r.killed[1]}) at {r.kill_at:.2f} s; acknowledged before it "
              f"{r.acked_before_kill}; in the summary at the end {r.summary_answers}; "
              f"{'not fewer' if (r.summary_answers or 0) >= r.acked_before_kill else 'FEWER'}"
              + ("" if r.before_kill_ok is None else f"; in the store per option: "
                 f"{'all there' if r.before_kill_ok else 'SOME MISSING'}"))
    if r.poll_failures:
        print(f"  summary requests failed: {len(r.poll_failures)} (first: {r.poll_failures[0]})")
    errs: dict[str, int] = {}
    for s in r.students:
        for e in s.errors:
            errs[e] = errs.get(e, 0) + 1
    for e, n in sorted(errs.items(), key=lambda x: -x[1])[:10]:
        print(f"  error x{n}: {e}")
    ok = r.exactly_once and (not lat or (pct(lat, 95) or 0) <= args.p95_target) and \
        (not r.lags or max(r.lags) <= args.lag_target) and not r.not_seen
    print(f"  targets: {'met' if ok else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result_dict(args, r), indent=1))


def result_dict(args, r: Result) -> dict:
    return dict(students=args.students, seconds=args.seconds, sent=r.sent, acknowledged=r.acked, errors=r.errors,
                p50=pct(r.lat, 50), p95=pct(r.lat, 95), max=max(r.lat) if r.lat else None,
                summary_answers=r.summary_answers, exactly_once=r.exactly_once, per_option_ok=r.per_option_ok,
                lag_p50=pct(r.lags, 50), lag_p95=pct(r.lags, 95), lag_max=max(r.lags) if r.lags else None,
                not_seen=r.not_seen, reconnects=r.reconnects, resent=sum(1 for s in r.students if s.resent), killed=r.killed, kill_at=r.kill_at,
                acked_before_kill=r.acked_before_kill, before_kill_ok=r.before_kill_ok, poll_failures=len(r.poll_failures),
                error_kinds=sorted({e for s in r.students for e in s.errors}))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8501", help="the app (loopback only)")
    p.add_argument("--room", required=True,
                   help="the room's code, or 'new': open one (POST /_headlight/class/rooms with the key)")
    p.add_argument("--start-question", action="store_true",
                   help="first start a question in the room, through the store (--store, else HEADLIGHT_CLASS_DB / "
                        "HEADLIGHT_DATA_DIR as the app): no endpoint starts questions")
    p.add_argument("--students", type=int, default=300, help=f"students (default 300, max {MAX_STUDENTS})")
    p.add_argument("--seconds", type=float, default=10.0, help="the answers are spread over this (default 10)")
    p.add_argument("--ramp", type=float, default=10.0, help="students open the link over this before (default 10)")
    p.add_argument("--key", default=os.environ.get("HEADLIGHT_LECTURER_KEY", ""),
                   help="the lecturer key for the summary (default HEADLIGHT_LECTURER_KEY)")
    p.add_argument("--store", help="also check per option in this store (a SQLite path or postgresql:// URL)")
    p.add_argument("--timeout", type=float, default=60.0, help="per run (default 60 s)")
    p.add_argument("--poll", type=float, default=0.25, help="the projector's summary poll (default 0.25 s)")
    p.add_argument("--kill-at", type=float, help="SIGKILL the busiest app process this many s into the answers")
    p.add_argument("--no-refresh", action="store_true", help="no run_every refresh of the question while waiting")
    p.add_argument("--p95-target", type=float, default=1.0)
    p.add_argument("--lag-target", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000,
                   help="the options chosen and the sentences (default: from the clock, so the sentences are new)")
    p.add_argument("--json", help="also write the numbers here")
    p.add_argument("--max-seconds", type=float, help="hard cap (default ramp + seconds + 3 x timeout + 30)")
    args = p.parse_args(argv)
    if not 1 <= args.students <= MAX_STUDENTS:
        p.error(f"--students must be 1..{MAX_STUDENTS}")
    if args.max_seconds is None:
        args.max_seconds = args.ramp + args.seconds + 3 * args.timeout + 30
    args.max_seconds = min(args.max_seconds, 1800.0)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    host, port = lt.check_loopback(args.url)
    if args.room == "new":
        if not args.key:
            raise SystemExit("--room new needs the lecturer key (--key or HEADLIGHT_LECTURER_KEY)")
        args.room = open_room(host, port, args.key)
        print(f"opened room {args.room}")
    if args.start_question:
        print(f"started question {start_question(args.store, args.room)} in room {args.room} (through the store)")
    if not args.key:
        print("note: no lecturer key (--key / HEADLIGHT_LECTURER_KEY): no summary check, no projector lag",
              file=sys.stderr)
    r = asyncio.run(run(args, host, port))
    report(args, r)
    return 0 if r.exactly_once and r.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
