"""Class mode under `make serve` (deploy/serve.sh, 2 app processes behind HAProxy), through bench/class_load.py: a
small class answers one question over Streamlit's websocket while one app process is SIGKILLed mid-burst (its
students reconnect to the other process; every acknowledged answer is in the store, once), then serve.sh is stopped
and started again (the room and its answers are still there). The 300-student numbers: docs/benchmarks.md, *Class
mode*. Needs Debian's haproxy (.ci/run installs it; without CI a missing haproxy skips this test)."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import websockets
from ci_support import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import class_load as cl  # noqa: E402
import loadtest as lt  # noqa: E402

from classroom.store import open_store  # noqa: E402

pytestmark = pytest.mark.slow
STUDENTS, SECONDS, KILL_AT = 20, 3.0, 1.5


def free_port(pair: bool = False) -> int:
    """A free port (and the next one too, with pair: serve.sh's two app processes)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not pair:
            return port
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise RuntimeError("no free pair of ports")


class Serve:
    """deploy/serve.sh with 2 app processes, as test_serve.py starts it; stopped as Ctrl-C would."""

    def __init__(self, env: dict, run_dir: Path):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(["deploy/serve.sh"], cwd=ROOT, env={**env, "HEADLIGHT_RUN_DIR": str(run_dir)},
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.decode())

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(text in x for x in self.lines):
            assert self.proc.poll() is None, "serve.sh exited:\n" + "".join(self.lines)
            time.sleep(0.1)
        assert any(text in x for x in self.lines), f"no {text!r} from serve.sh:\n" + "".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.reader.join(10)


def serve_setup(tmp_path: Path) -> tuple[int, str, Path, dict]:
    """(port, lecturer key, the SQLite file, serve.sh's environment) for 2 app processes on free ports; skipped
    without haproxy (a failure in CI)."""
    if shutil.which("haproxy") is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is missing: .ci/run installs it")
        skip_or_fail("haproxy not installed")
    port, base = free_port(), free_port(pair=True)
    key, db = secrets.token_urlsafe(24), tmp_path / "data" / "class.sqlite3"
    env = {**os.environ, "PORT": str(port), "HEADLIGHT_BASE_PORT": str(base), "HEADLIGHT_PROCS": "2",
           "HEADLIGHT_LECTURER_KEY": key, "HEADLIGHT_DATA_DIR": str(db.parent), "HEADLIGHT_CLASS_DB": "",
           "HEADLIGHT_RESPAWN_MIN_S": "0", "PY": sys.executable}
    return port, key, db, env


def test_a_class_answers_once_through_a_killed_process_and_a_restart(tmp_path):
    port, key, db, env = serve_setup(tmp_path)
    url = f"http://127.0.0.1:{port}"
    serve = Serve(env, tmp_path / "run1")
    try:
        serve.wait_for("ready on", 180)
        room = cl.open_room("127.0.0.1", port, key)
        qid = cl.start_question(str(db), room)  # no endpoint starts a question: the store itself, as the app opens it
        args = cl.parse_args(["--url", url, "--room", room, "--students", str(STUDENTS), "--seconds", str(SECONDS),
                              "--ramp", "1", "--timeout", "30", f"--key={key}", "--store", str(db),
                              "--kill-at", str(KILL_AT), "--seed", "7"])
        r = asyncio.run(cl.run(args, "127.0.0.1", port))
        cl.report(args, r)
        errors = sorted({e for s in r.students for e in s.errors})
        assert r.killed is not None, "no app process found to kill"
        assert r.errors == 0, errors
        assert r.sent == r.acked == STUDENTS
        moved = [s for s in r.students if r.killed[0] in s.backends and s.reconnects]
        assert moved, "no student was on the killed process"
        # they reconnected through HAProxy: to the other process, or to the killed one's replacement once it is ready
        assert all(s.acked_at is not None and not s.errors for s in moved)
        assert 0 < r.acked_before_kill < STUDENTS
        assert r.before_kill_ok, "an answer acknowledged before the kill is missing from the store"
        # counted once: an answer in flight when its process died is re-sent by the reconnect's rerun, which the new
        # process stores for the same student (the student's id is in its link: ui/state.py K_SID)
        assert r.summary_answers == r.acked, (r.summary_answers, r.acked)
        assert r.per_option_ok, "the store's answers per option differ from the acknowledged choices"
        serve.wait_for(f"{r.killed[0]} exited", 10)
    finally:
        serve.stop()
    assert "stopped" in "".join(serve.lines)

    serve = Serve(env, tmp_path / "run2")  # a full restart: the room and its answers are still there
    try:
        serve.wait_for("ready on", 180)
        s = cl.summary("127.0.0.1", port, room, key)
        assert s["room"] == room and cl.question_answers(s, qid) == r.summary_answers and s["students"] >= STUDENTS
    finally:
        serve.stop()


def test_a_student_who_changes_the_answer_after_a_reconnect_is_counted_once(tmp_path):
    port, key, db, env = serve_setup(tmp_path)
    serve = Serve(env, tmp_path / "run")
    try:
        serve.wait_for("ready on", 180)
        room = cl.open_room("127.0.0.1", port, key)
        qid = cl.start_question(str(db), room)
        counts = asyncio.run(_answer_kill_reconnect_change(port, room, qid, str(db)))
    finally:
        serve.stop()
    assert counts == {"1": 1}, counts


async def _answer_kill_reconnect_change(port: int, room: str, qid: int, db: str) -> dict:
    """One student answers option 0, its app process is SIGKILLed, its page reconnects as the browser does (a rerun
    with its widgets' values), then it picks option 1: the store's answers to the question."""
    st, sess, host = cl.ClassStudent(index=0, page="", text1="Zed wrote one small sentence.", text2=""), \
        lt._Session(), "127.0.0.1"
    cookie = await lt._host_config(st, host, port, 30, time.monotonic())
    async with lt._stream(st, host, port, cookie, 30) as ws:
        sess.query_string = urlencode({"room": room, "text": st.text1}, quote_via=quote)
        await cl._run(ws, sess, st, time.monotonic() + 60)
        await cl._run(ws, sess, st, time.monotonic() + 60, fragment_id=st.fragment_id,
                      widget=(st.widget_id, [st.labels[0]]))
        assert st.saw_answered and open_store(db).answers(room, qid) == {"0": 1}
        os.kill(cl.app_processes(port)[sorted(st.backends)[0]], signal.SIGKILL)
        with pytest.raises(websockets.exceptions.ConnectionClosed):  # what was sent before, then the drop
            while True:
                await asyncio.wait_for(ws.recv(), 10)
    await asyncio.sleep(0.5)
    cookie = await lt._host_config(st, host, port, 30, time.monotonic(), cookie)
    async with lt._stream(st, host, port, cookie, 30) as ws:
        await cl._run(ws, sess, st, time.monotonic() + 60, widget=(st.widget_id, [st.labels[0]]))
        await cl._run(ws, sess, st, time.monotonic() + 60, fragment_id=st.fragment_id,
                      widget=(st.widget_id, [st.labels[1]]))
        assert st.saw_answered and not st.errors
    return open_store(db).answers(room, qid)
