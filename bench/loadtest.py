"""A lecture hall against a running Headlight app: many students at once, over Streamlit's own websocket protocol.

Each simulated student does what a browser does when a link is opened and a sentence typed:

1. GET /_stcore/host-config (as the browser does before it opens the websocket; behind the cookie-sticky load
   balancer of `make serve` this is where the student's backend cookie is set) and open ws://…/_stcore/stream with
   that cookie;
2. send a `rerun_script` BackMsg with the link's query string (`text=<its own sentence>`) and the page's URL path as
   `page_name`, then read ForwardMsgs until `script_finished` (a finish "early for rerun" is followed by the next run);
3. find the Sentence box (the text_area whose widget id ends in "-text") in the deltas, and send a second
   `rerun_script` with that widget's new string value, the page's script hash and the query string the app wrote
   (as the browser does when the user presses Ctrl+Enter), and wait again.

Errors counted per student: an Exception element (Streamlit's "This app has encountered an error" included), an
st.error whose text starts with "Something went wrong" (the app's error boundary), a run without the app shell
(no `st.navigation` message with the app's pages: the legacy `pages/` mode), no Sentence box, a websocket or HTTP
failure, a timeout. Other st.error texts (e.g. "needs more than the cache budget") are counted as notices.
Latency: first run (from the student's start: HTTP, websocket, run) and second run (BackMsg to script_finished).
Server: RSS summed over the process tree (peak while the test runs, and at the end) and CPU seconds of that tree
per completed run, from /proc.

    .venv/bin/python bench/loadtest.py --students 30 --pages all
    .venv/bin/python bench/loadtest.py --cold "make serve" --students 60 --pages all --runs 3
    .venv/bin/python bench/loadtest.py --long 48 --pid <server pid>

Only loopback hosts are accepted. Bounded: at most 400 students; every run stops by itself after
ramp + 2 x timeout + 30 s (--max-seconds), and a server started with --cold is always stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from i18n import t as tr  # noqa: E402
from ui.pages import DEFAULT, NAMES  # noqa: E402
from ui.pages import PAGES as TABLE  # noqa: E402

PAGES = NAMES  # the app's pages (ui/pages.py), in the menu's order
APP_TITLES = tuple(tr(p.title_key, "en") for p in TABLE)  # the menu's English titles: the shell ran
MAX_STUDENTS = 400
FINISHED = ForwardMsg.ScriptFinishedStatus
ALERT_ERROR = 1  # Alert.Format.ERROR
TEXT_KEY = "text"  # the Sentence box's widget key (ui/state.py K_TEXT)
STARTING_POLL_S = 0.25  # how often the starting page asks again (serve/door.py STARTING_POLL_S; --starting-poll)

_WORDS = ("the animal didn't cross the street because it was tired a dog ate the food hungry teacher student "
          "model attention head layer token river bank money sat on green small quick brown fox jumps over lazy "
          "book table window garden music city night morning sun rain children played happily yesterday "
          "afternoon").split()
_NAMES = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Tim", "Radia",
          "Ken", "Dennis", "Niklaus", "Leslie", "Shafi", "Yann", "Geoffrey", "Fei", "Daphne")


# ---- inputs -----------------------------------------------------------------------------------------------------
def sentence(i: int, second: bool = False) -> str:
    """A short sentence of its own for student i (distinct for every i and for the second run)."""
    rng = random.Random(i * 2 + int(second))
    words = rng.sample(_WORDS, 7)
    name = _NAMES[i % len(_NAMES)]
    verb = "typed" if second else "wrote"
    return f"{name} {verb} number {i}: {' '.join(words)}."


def long_text(i: int) -> str:
    """About 600 word-tokens, distinct per i: MiniLM cuts it at 512 tokens (with a notice)."""
    rng = random.Random(10_000 + i)
    return f"Long text {i}. " + " ".join(rng.choice(_WORDS) for _ in range(600))


# ---- /proc ------------------------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    kids = []
    for tid_dir in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (tid_dir / "children").read_text().split()]
        except OSError:
            pass
    return kids


def process_tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in out or not Path(f"/proc/{p}").exists():
            continue
        out.append(p)
        todo += _children(p)
    return out


def tree_rss_bytes(pid: int) -> int:
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def tree_cpu_seconds(pid: int) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def listening_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1/0.0.0.0 `port`, via /proc/net/tcp{,6} socket inodes."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(parts[9])
    if not inodes:
        return None
    targets = {f"socket:[{i}]" for i in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in targets:
                    return int(proc.name)
        except OSError:
            continue
    return None


def server_root_pid(port: int) -> int | None:
    """The process whose tree is the server: the listener, or, when the listener is a load balancer started by a
    serve script (deploy/serve.sh), that script (so the app processes behind it are counted too)."""
    pid = listening_pid(port)
    if pid is None:
        return None
    if _comm(pid) == "haproxy":
        parent = _ppid(pid)
        if parent > 1:
            return parent
    return pid


# ---- one student ----------------------------------------------------------------------------------------------
@dataclass
class Student:
    index: int
    page: str
    text1: str
    text2: str
    first_s: float | None = None
    second_s: float | None = None
    connect_s: float | None = None
    errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    backends: set[str] = field(default_factory=set)
    starting_waits: int = 0  # times the balancer's "starting" page was met (and reloaded) before the app answered


class _Session:
    """State a browser keeps between runs: page script hash, query string, the Sentence box's widget id."""

    def __init__(self):
        self.page_hash = ""
        self.query_string = ""
        self.text_id: str | None = None
        self.saw_shell = False


async def _http_get(host: str, port: int, path: str, cookie: str, timeout: float) -> tuple[int, dict[str, str]]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        req = (f"GET {path} HTTP/1.1\r\nHost: {_netloc(host, port)}\r\nUser-Agent: headlight-loadtest\r\n"
               f"Accept: */*\r\nConnection: close\r\n" + (f"Cookie: {cookie}\r\n" if cookie else "") + "\r\n")
        writer.write(req.encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                k = k.strip().lower()
                headers[k] = (headers[k] + "; " + v.strip()) if k in headers else v.strip()
        return status, headers
    finally:
        writer.close()


def _cookie_from(set_cookie: str) -> str:
    """'A=1; Path=/; HttpOnly; B=2; ...' (several Set-Cookie joined) -> 'A=1; B=2'."""
    attrs = {"path", "domain", "expires", "max-age", "secure", "httponly", "samesite"}
    pairs = []
    for part in set_cookie.split(";"):
        part = part.strip()
        if "=" in part and part.split("=", 1)[0].strip().lower() not in attrs:
            pairs.append(part)
    return "; ".join(pairs)


def _rerun_msg(sess: _Session, *, page_name: str = "", widget: tuple[str, str | list[str]] | None = None,
               fragment_id: str = "", auto: bool = False) -> bytes:
    """A `rerun_script` BackMsg as the browser sends it. `widget`: (id, value), a str for a text widget's
    string_value, a list for a pills / segmented control's string_array_value (the chosen options' labels);
    `fragment_id`: a widget of that fragment changed (or its run_every timer fired: `auto`)."""
    msg = BackMsg()
    cs = msg.rerun_script
    cs.query_string = sess.query_string
    cs.page_script_hash = sess.page_hash
    cs.page_name = page_name
    cs.fragment_id = fragment_id
    cs.is_auto_rerun = auto
    if widget is not None:
        ws = cs.widget_states.widgets.add()
        if isinstance(widget[1], list):
            ws.id = widget[0]
            ws.string_array_value.data.extend(widget[1])
        else:
            ws.id, ws.string_value = widget
    return msg.SerializeToString()


async def _wait_run(ws, sess: _Session, st: Student, deadline: float, on_delta=None) -> None:
    """Read ForwardMsgs until the run finishes (not 'early for rerun'); record what the student saw. `on_delta`:
    also called with every Delta (bench/class_load.py reads its own widgets there)."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        data = await asyncio.wait_for(ws.recv(), left)
        if isinstance(data, str):
            continue
        fm = ForwardMsg()
        fm.ParseFromString(data)
        kind = fm.WhichOneof("type")
        if kind == "delta":
            _read_delta(fm.delta, sess, st)
            if on_delta is not None:
                on_delta(fm.delta)
        elif kind == "navigation":
            sess.page_hash = fm.navigation.page_script_hash or sess.page_hash
            titles = {p.page_name for p in fm.navigation.app_pages}
            if titles & set(APP_TITLES):
                sess.saw_shell = True
        elif kind == "new_session":
            if fm.new_session.page_script_hash and not sess.page_hash:
                sess.page_hash = fm.new_session.page_script_hash
        elif kind == "page_info_changed":
            sess.query_string = fm.page_info_changed.query_string
        elif kind == "page_not_found":
            st.errors.append(f"page not found: {fm.page_not_found.page_name!r}")
        elif kind == "script_finished":
            status = fm.script_finished
            if status == FINISHED.FINISHED_EARLY_FOR_RERUN:
                continue
            if status == FINISHED.FINISHED_WITH_COMPILE_ERROR:
                st.errors.append("script compile error")
            return


def _read_delta(delta, sess: _Session, st: Student) -> None:
    if delta.WhichOneof("type") != "new_element":
        return
    el = delta.new_element
    which = el.WhichOneof("type")
    if which == "text_area" and (el.text_area.id.endswith(f"-{TEXT_KEY}") or el.text_area.label == "Sentence"):
        sess.text_id = el.text_area.id
    elif which == "exception":
        st.errors.append(f"exception: {el.exception.type}: {el.exception.message[:120]}")
    elif which == "alert" and el.alert.format == ALERT_ERROR:
        body = el.alert.body.strip()
        if body.startswith("Something went wrong"):
            st.errors.append(f"error boundary: {body[:120]}")
        else:
            st.notices.append(body[:120])


async def _host_config(st: Student, host: str, port: int, timeout: float, t0: float, cookie: str = "") -> str | None:
    """GET /_stcore/host-config as the browser does before it opens the websocket (with the balancer's cookie once it
    has one); the cookie to send from then on, or None (an error recorded) when the answer is not 200. A balancer whose
    app is still starting answers 503 with a page that reloads itself: as it does."""
    while True:
        status, headers = await _http_get(host, port, "/_stcore/host-config", cookie, timeout)
        if status != 503 or "x-headlight-starting" not in headers or time.monotonic() - t0 > timeout:
            break
        st.starting_waits += 1
        await asyncio.sleep(STARTING_POLL_S)
    if status != 200:
        st.errors.append(f"http {status} on /_stcore/host-config")
        return None
    if "x-headlight-backend" in headers:
        st.backends.add(headers["x-headlight-backend"])
    return _cookie_from(headers.get("set-cookie", "")) or cookie


@contextlib.asynccontextmanager
async def _stream(st: Student, host: str, port: int, cookie: str, timeout: float):
    """The student's websocket (/_stcore/stream, with the balancer's cookie)."""
    extra = {"Cookie": cookie} if cookie else {}
    async with websockets.connect(f"ws://{_netloc(host, port)}/_stcore/stream", subprotocols=["streamlit"],
                                  additional_headers=extra, max_size=None, open_timeout=timeout,
                                  ping_interval=None, close_timeout=2) as ws:
        if ws.response is not None and "x-headlight-backend" in ws.response.headers:
            st.backends.add(ws.response.headers["x-headlight-backend"])
        yield ws


MODEL = [""]  # --model: every student's link names this model (default: the app's default model)


async def run_student(st: Student, host: str, port: int, timeout: float, delay: float) -> Student:
    await asyncio.sleep(delay)
    t0 = time.monotonic()
    sess = _Session()
    page_name = "" if st.page == DEFAULT.name else st.page  # the default page lives at the root URL
    stage = "http"
    try:
        cookie = await _host_config(st, host, port, timeout, t0)
        if cookie is None:
            return st
        stage = "websocket"
        async with _stream(st, host, port, cookie, timeout) as ws:
            st.connect_s = time.monotonic() - t0
            stage = "first run"
            sess.query_string = urlencode({"text": st.text1, **({"model": MODEL[0]} if MODEL[0] else {})},
                                          quote_via=quote)
            await ws.send(_rerun_msg(sess, page_name=page_name))
            await _wait_run(ws, sess, st, t0 + timeout)
            st.first_s = time.monotonic() - t0
            if not sess.saw_shell:
                st.errors.append("no app shell (legacy pages/ mode: file-name menu)")
            if sess.text_id is None:
                st.errors.append("no Sentence box on the page")
                return st
            stage = "second run"
            t1 = time.monotonic()
            await ws.send(_rerun_msg(sess, widget=(sess.text_id, st.text2)))
            await _wait_run(ws, sess, st, t1 + timeout)
            st.second_s = time.monotonic() - t1
            # the app mirrors the sentence in the URL: proof that the run used the typed text
            url_text = parse_qs(sess.query_string).get(TEXT_KEY, [None])[0]
            if url_text is None:
                st.notices.append("the app did not write the text into the URL")
            elif url_text != st.text2:
                st.errors.append("second run did not take the typed sentence")
            # the download endpoints (media / file) are served by the process that made them: check stickiness
            if cookie:
                status, headers = await _http_get(host, port, "/_stcore/health", cookie, timeout)
                if "x-headlight-backend" in headers:
                    st.backends.add(headers["x-headlight-backend"])
                if len(st.backends) > 1:
                    st.errors.append(f"not sticky: served by {sorted(st.backends)}")
    except TimeoutError:
        st.errors.append(f"timeout ({stage}, {timeout:g} s)")
    except (OSError, websockets.exceptions.WebSocketException, asyncio.IncompleteReadError) as exc:
        st.errors.append(f"{stage} failed: {type(exc).__name__}: {str(exc)[:100]}")
    except Exception as exc:  # noqa: BLE001 - a client bug must show up as an error, not a silent success
        st.errors.append(f"{stage}: load-test client error {type(exc).__name__}: {str(exc)[:100]}")
    return st


# ---- one scenario -------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    students: list[Student]
    wall_s: float
    rss_start: int
    rss_peak: int
    rss_end: int
    cpu_s: float
    load: tuple[str, str]

    @property
    def n_errors(self) -> int:
        return sum(1 for s in self.students if s.errors)

    def lat(self, which: str) -> list[float]:
        return [getattr(s, which) for s in self.students if getattr(s, which) is not None]

    @property
    def runs_done(self) -> int:
        return len(self.lat("first_s")) + len(self.lat("second_s"))


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def _sample_rss(pid: int | None, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        if pid:
            peak[0] = max(peak[0], tree_rss_bytes(pid))
        try:
            await asyncio.wait_for(stop.wait(), 0.25)
        except TimeoutError:
            pass


async def run_scenario(args, host: str, port: int, pid: int | None, run: int = 0) -> RunResult:
    """One lecture hall. Every run of every invocation types sentences the server has not seen (numbered from
    (seed x 1000 + run) x 200), so a warm server's cache of results never answers for the model: `--seed` repeats
    an invocation's sentences on purpose."""
    pages = PAGES if args.pages == "all" else (args.pages,)
    n = args.long or args.students
    base = (args.seed * 1000 + run) * MAX_STUDENTS
    students = []
    for i in range(n):
        text1 = long_text(base + i) if args.long else sentence(base + i)
        students.append(Student(i, pages[i % len(pages)], text1, sentence(base + i, second=True)))
    rng = random.Random(args.seed * 1000 + run)
    delays = sorted(rng.uniform(0, args.ramp) for _ in students)
    rss0 = tree_rss_bytes(pid) if pid else 0
    cpu0 = tree_cpu_seconds(pid) if pid else 0.0
    load0 = Path("/proc/loadavg").read_text().split()[0]
    peak = [rss0]
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(pid, peak, stop))
    t0 = time.monotonic()
    tasks = [asyncio.create_task(run_student(s, host, port, args.timeout, d)) for s, d in zip(students, delays)]
    done, pending = await asyncio.wait(tasks, timeout=args.max_seconds)
    for t in pending:  # the hard cap
        t.cancel()
    for s, t in zip(students, tasks):
        if t in pending:
            s.errors.append(f"stopped by the {args.max_seconds:g} s cap")
    await asyncio.gather(*pending, return_exceptions=True)
    wall = time.monotonic() - t0
    stop.set()
    await sampler
    rss_end = tree_rss_bytes(pid) if pid else 0
    cpu = (tree_cpu_seconds(pid) - cpu0) if pid else 0.0
    load1 = Path("/proc/loadavg").read_text().split()[0]
    return RunResult(students, wall, rss0, max(peak[0], rss_end), rss_end, cpu, (load0, load1))


async def cpu_per_page(args, host: str, port: int, pid: int, run: int = 0) -> list[tuple[str, float, int, int]]:
    """After the hall: for each page in turn, `--cpu-per-page` new students (sentences never seen, both runs) on
    that page alone, at most 4 at a time; the server tree's CPU seconds over the page's completed runs. -> [(page,
    CPU s per run, runs, students with errors)]"""
    pages = PAGES if args.pages == "all" else (args.pages,)
    out = []
    base = (args.seed * 1000 + run) * MAX_STUDENTS + 500_000
    sem = asyncio.Semaphore(4)

    async def one(st: Student) -> Student:
        async with sem:
            return await run_student(st, host, port, args.timeout, 0.0)

    for k, page in enumerate(pages):
        students = [Student(i, page, sentence(base + k * 1000 + i), sentence(base + k * 1000 + i, second=True))
                    for i in range(args.cpu_per_page)]
        cpu0 = tree_cpu_seconds(pid)
        await asyncio.wait_for(asyncio.gather(*(one(s) for s in students)), args.max_seconds)
        cpu = tree_cpu_seconds(pid) - cpu0
        runs = sum((s.first_s is not None) + (s.second_s is not None) for s in students)
        out.append((page, cpu / runs if runs else float("nan"), runs, sum(1 for s in students if s.errors)))
    return out


def print_cpu_table(rows: list[tuple[str, float, int, int]]) -> None:
    print("\nServer CPU seconds per script run, page by page (after the hall, same server; new sentences):\n")
    print("| page | CPU s per run | runs | students with errors |\n|---|---|---|---|")
    for page, c, runs, errs in rows:
        print(f"| {page} | {c:.3f} | {runs} | {errs} |")


# ---- cold start -------------------------------------------------------------------------------------------------
def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _health_ok(host: str, port: int) -> bool:
    """The app answers /_stcore/health with 200 (a balancer still starting answers 503)."""
    try:
        with socket.create_connection((host, port), timeout=1) as sock:
            sock.sendall(f"GET /_stcore/health HTTP/1.0\r\nHost: {_netloc(host, port)}\r\n\r\n".encode())
            return sock.recv(64).split(b" ")[1:2] == [b"200"]
    except (OSError, IndexError):
        return False


START_TIMES: list[tuple[float, float]] = []  # (port open, app ready) seconds after each --cold start


def start_server(cmd: str, host: str, port: int, wait_s: float, log: Path, from_port: bool = False) -> subprocess.Popen:
    """Start the server; return when its port accepts connections (from_port) or when the app answers (default)."""
    if _port_open(host, port):
        raise SystemExit(f"--cold: something already listens on {host}:{port}; stop it first")
    fh = open(log, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, shell=True, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    t0 = time.monotonic()
    opened = None
    while True:
        if opened is None and _port_open(host, port):
            opened = time.monotonic() - t0
        if opened is not None and (from_port or _health_ok(host, port)):
            break
        if proc.poll() is not None:
            raise SystemExit(f"--cold: the server command exited with {proc.returncode}; see {log}")
        if time.monotonic() - t0 > wait_s:
            stop_server(proc)
            raise SystemExit(f"--cold: {host}:{port} did not answer within {wait_s:g} s; see {log}")
        time.sleep(0.05)
    ready = float("nan") if from_port else time.monotonic() - t0
    START_TIMES.append((opened, ready))
    print(f"cold: port open {opened:.2f} s after start"
          + (", students sent now" if from_port else f", app ready {ready:.2f} s after start, students sent now")
          + f" ({cmd})", file=sys.stderr)
    return proc


def stop_server(proc: subprocess.Popen) -> None:
    """TERM the process group we started, then KILL what is left."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group (children that ignored TERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


# ---- report -----------------------------------------------------------------------------------------------------
def _f(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def row(label: str, r: RunResult) -> list[str]:
    first, second = r.lat("first_s"), r.lat("second_s")
    per_run = r.cpu_s / r.runs_done if r.runs_done else None
    return [label, f"{r.n_errors} of {len(r.students)}",
            f"{_f(pct(first, .5))} / {_f(pct(first, .95))} / {_f(max(first) if first else None)}",
            f"{_f(pct(second, .5))} / {_f(pct(second, .95))} / {_f(max(second) if second else None)}",
            _f(per_run, 2), f"{_mb(r.rss_start)} → {_mb(r.rss_peak)} → {_mb(r.rss_end)}",
            f"{r.wall_s:.1f}", f"{r.load[0]} → {r.load[1]}"]


HEADER = ["run", "errors", "first run p50 / p95 / max (s)", "second run p50 / p95 / max (s)",
          "server CPU per run (s)", "server RSS start → peak → end (MB)", "wall (s)", "load avg 1 min"]


def print_table(rows: list[list[str]]) -> None:
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def median_row(results: list[RunResult]) -> list[str]:
    def med(vals):
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None
    f50 = med([pct(r.lat("first_s"), .5) for r in results])
    f95 = med([pct(r.lat("first_s"), .95) for r in results])
    s50 = med([pct(r.lat("second_s"), .5) for r in results])
    s95 = med([pct(r.lat("second_s"), .95) for r in results])
    errs = med([r.n_errors for r in results])
    cpu = med([r.cpu_s / r.runs_done if r.runs_done else None for r in results])
    peak = med([r.rss_peak for r in results])
    return [f"**median of {len(results)}**", f"{errs:g} of {len(results[0].students)}",
            f"{_f(f50)} / {_f(f95)} / –", f"{_f(s50)} / {_f(s95)} / –", _f(cpu, 2),
            f"peak {_mb(int(peak or 0))}", "", ""]


def print_errors(results: list[RunResult]) -> None:
    kinds: dict[str, int] = {}
    notices: dict[str, int] = {}
    for r in results:
        for s in r.students:
            for e in s.errors:
                k = re.sub(r"\d+(\.\d+)?", "N", e)[:140]
                kinds[k] = kinds.get(k, 0) + 1
            for e in s.notices:
                notices[e[:100]] = notices.get(e[:100], 0) + 1
    if kinds:
        print("\nErrors (student-level, by kind):")
        for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"- {v} × {k}")
    if notices:
        print("\nNotices (st.error that is not the error boundary):")
        for k, v in sorted(notices.items(), key=lambda kv: -kv[1])[:8]:
            print(f"- {v} × {k}")


# ---- main -------------------------------------------------------------------------------------------------------
def check_loopback(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "ws"):
        raise SystemExit(f"--url must be http://127.0.0.1:PORT (got {url!r})")
    host = parts.hostname or ""
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        raise SystemExit(f"refusing {host!r}: the load test only targets loopback (127.0.0.1, ::1, localhost)")
    return ("127.0.0.1" if host == "localhost" else host), (parts.port or 80)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8501", help="the app (loopback only)")
    p.add_argument("--students", type=int, default=60, help=f"students (default 60, max {MAX_STUDENTS})")
    p.add_argument("--ramp", type=float, default=10.0, help="students start spread over this many seconds")
    p.add_argument("--pages", default="explorer", choices=("all", *PAGES),
                   help="'all': student i opens page i mod 7; or one page for everybody")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per run (first / second)")
    p.add_argument("--long", type=int, default=0, metavar="N",
                   help="memory test: N students open N distinct 512-token texts")
    p.add_argument("--runs", type=int, default=1, help="repeat the scenario K times; report medians")
    p.add_argument("--cold", metavar="CMD", help="start the server with CMD for each run, send the students as "
                   "soon as the port accepts connections, stop it afterwards (e.g. 'make serve')")
    p.add_argument("--cold-wait", type=float, default=120.0, help="--cold: seconds to wait for the app")
    p.add_argument("--from-port", action="store_true", help="--cold: send the students as soon as the port accepts "
                   "connections, not when the app answers /_stcore/health (behind make serve's balancer they meet "
                   "its starting page and ask again every --starting-poll seconds, as its script does in a browser; their "
                   "times count from their first request)")
    p.add_argument("--starting-poll", type=float, default=STARTING_POLL_S, metavar="S",
                   help="--from-port: seconds between a starting student's requests (the page's poll; 1.0 for the "
                   "starting page before it polled, a 1 s reload)")
    p.add_argument("--pid", type=int, help="server process whose tree is measured (default: the port's listener)")
    p.add_argument("--max-seconds", type=float, help="hard cap per run (default ramp + 2 x timeout + 30)")
    p.add_argument("--pause", type=float, default=2.0, help="seconds between runs")
    p.add_argument("--seed", type=int, help="numbers the students' sentences and start times (default: from the "
                   "clock, so a warm server has seen none of them); printed, pass it again to repeat a test")
    p.add_argument("--label", default="", help="text for the table's first column")
    p.add_argument("--cpu-per-page", type=int, default=10, metavar="K",
                   help="after the last run, K new students per page, page by page, to print the server's CPU "
                        "seconds per run for each page (0: skip; default 10)")
    p.add_argument("--model", default="", help="the model every student's link names (e.g. multilingual-e5-small)")
    args = p.parse_args(argv)
    n = args.long or args.students
    if not 1 <= n <= MAX_STUDENTS:
        p.error(f"students must be 1..{MAX_STUDENTS}")
    if not 1 <= args.runs <= 10:
        p.error("--runs must be 1..10")
    if not 0 <= args.ramp <= 300 or not 1 <= args.timeout <= 600:
        p.error("--ramp must be 0..300 s and --timeout 1..600 s")
    if args.max_seconds is None:
        args.max_seconds = args.ramp + 2 * args.timeout + 30
    args.max_seconds = min(args.max_seconds, 1800.0)
    return args


def main(argv=None) -> int:
    global STARTING_POLL_S
    args = parse_args(argv)
    STARTING_POLL_S = args.starting_poll
    MODEL[0] = args.model
    host, port = check_loopback(args.url)
    n = args.long or args.students
    what = f"{n} students over {args.ramp:g} s, {'all pages' if args.pages == 'all' else args.pages}"
    if args.long:
        what += ", distinct 512-token texts"
    label = args.label or (("cold, " if args.cold else "warm, ") + what)
    if args.seed is None:
        args.seed = int(time.time()) % 10_000
    print(f"# Headlight load test: {label}, {args.runs} run(s), {os.cpu_count()} CPUs, --seed {args.seed}",
          file=sys.stderr)
    results: list[RunResult] = []
    per_page: list = []
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "headlight-loadtest-server.log"
    for k in range(args.runs):
        proc = None
        try:
            if args.cold:
                proc = start_server(args.cold, host, port, args.cold_wait, log, args.from_port)
                pid = args.pid or proc.pid
            else:
                if not _port_open(host, port):
                    print(f"nothing listens on {host}:{port}: start the app (make run / make serve) or use --cold",
                          file=sys.stderr)
                    return 2
                pid = args.pid or server_root_pid(port)
            res = asyncio.run(run_scenario(args, host, port, pid, k))
            if args.cpu_per_page and pid and k + 1 == args.runs:
                per_page = asyncio.run(cpu_per_page(args, host, port, pid, k))
        finally:
            if proc is not None:
                stop_server(proc)
        results.append(res)
        print(f"run {k + 1}/{args.runs}: {res.n_errors} students with errors, {res.wall_s:.1f} s", file=sys.stderr)
        if k + 1 < args.runs:
            time.sleep(args.pause)
    rows = [row(f"{label} #{k + 1}" if args.runs > 1 else label, r) for k, r in enumerate(results)]
    if args.runs > 1:
        rows.append(median_row(results))
    print_table(rows)
    if START_TIMES:
        print("\nCold starts (s after the start command): "
              + "; ".join(f"port open {o:.2f}" + ("" if r != r else f", app ready {r:.2f}") for o, r in START_TIMES)
              + (" (students sent when the port opened)" if args.from_port else " (students sent when the app was "
                                                                                  "ready)"))
    waited = [s.starting_waits for r in results for s in r.students if s.starting_waits]
    if waited:
        print(f"Students who met the starting page: {len(waited)} (reloads: median {statistics.median(waited):g}, "
              f"max {max(waited)})")
    if per_page:
        print_cpu_table(per_page)
    print_errors(results)
    if not any(r.lat("first_s") for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
