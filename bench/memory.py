"""Memory of one app process under long texts: a few sessions looping distinct 512-token texts over Step by step and
the Head lab (or the explorer), the server's RSS sampled throughout (peak) and after the sessions have left (idle).

Each session (bench/loadtest.py's protocol-level client: the websocket, `rerun_script` BackMsgs) does, K times:

1. a new distinct ~600-word text (cut at 512 tokens by MiniLM) on Step by step: the first text comes with the link
   (query string, first run), each later one is typed into the Sentence box on the Head lab, with the page switch to
   Step by step in the same BackMsg (as a browser sends a pending widget value with a page change);
2. a page switch to the Head lab on the same text.

With `--scenario explorer` the same texts go to the explorer instead (one run per text; when both scenarios run on
one server, the explorer gets texts of its own, made the same way). The sessions run at once; every text is new to
the server, so each run computes its results and the byte-bounded store fills and evicts. A run counts as an error
when its sidebar did not trace the session's current text. RSS in MB of 2^20 bytes, as bench/loadtest.py prints
it; what the server sent per run (the page's messages, its figures' JSON included) in MB of 10^6 bytes.

RSS is summed over the server's process tree (/proc), sampled every 0.1 s while the sessions run; the table also
gives the server's own high-water mark (VmHWM, since it started) and RSS after the sessions closed and `--idle`
seconds passed. With `--cold LABEL=CMD` (repeatable) the script starts a fresh server for every scenario and round,
alternating the commands, so two checkouts can be compared side by side on the same machine:

    make run &
    .venv/bin/python bench/memory.py --url http://127.0.0.1:8501                  # 3 sessions x 6 texts, steps+heads
    .venv/bin/python bench/memory.py --scenario both --loops 6 --idle 20
    .venv/bin/python bench/memory.py --url http://127.0.0.1:8641 --scenario both --rounds 2 \\
        --cold "before=cd /tmp/before && MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_ARENA_MAX=2 \\
                .venv/bin/python -m serve run app.py --server.port 8641" --cold "after=..."

Only loopback hosts. Bounded: at most 8 sessions x 30 texts, every scenario stops by itself after `--max-seconds`
(default: 60 s per text and session, at most 30 minutes), and a server started with --cold is always stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

import websockets
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadtest as lt  # noqa: E402

MAX_SESSIONS, MAX_LOOPS = 8, 30
SCENARIOS = {"steps-heads": ("steps", "heads"), "explorer": ("explorer",)}
SAMPLE_S = 0.1


class _Counting:
    """A websocket whose recv() counts the bytes the server sent (what a browser would receive) and keeps the start
    of the sidebar's token picker ("0: [CLS]", "1: long", ...): which text the run traced."""

    def __init__(self, ws):
        self.ws = ws
        self.bytes = 0
        self.tokens = ""

    async def recv(self):
        data = await self.ws.recv()
        self.bytes += len(data)
        if isinstance(data, bytes) and b"0: [CLS]" in data:
            fm = ForwardMsg()
            fm.ParseFromString(data)
            el = fm.delta.new_element
            if el.WhichOneof("type") == "selectbox" and el.selectbox.options[:1] == ["0: [CLS]"]:
                toks = [o.split(": ", 1)[1] for o in el.selectbox.options[1:12]]
                self.tokens = "".join(x[2:] if x.startswith("##") else " " + x for x in toks).strip()
        return data


@dataclass
class Session:
    index: int
    texts: list[str]
    runs: list[tuple[str, float, int]] = field(default_factory=list)  # (page, seconds, bytes received)
    errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


async def session_loop(s: Session, pages: tuple[str, ...], host: str, port: int, timeout: float) -> Session:
    """One session: every text on every page of the scenario, in order (see the module's docstring)."""
    st = lt.Student(s.index, pages[0], s.texts[0], "")
    sess = lt._Session()
    stage = "http"
    try:
        status, headers = await lt._http_get(host, port, "/_stcore/host-config", "", timeout)
        if status != 200:
            s.errors.append(f"http {status} on /_stcore/host-config")
            return s
        cookie = lt._cookie_from(headers.get("set-cookie", ""))
        stage = "websocket"
        async with websockets.connect(f"ws://{lt._netloc(host, port)}/_stcore/stream", subprotocols=["streamlit"],
                                      additional_headers={"Cookie": cookie} if cookie else {}, max_size=None,
                                      open_timeout=timeout, ping_interval=None, close_timeout=2) as raw:
            ws = _Counting(raw)
            for k, text in enumerate(s.texts):
                for j, page in enumerate(pages):
                    stage = f"text {k} on {page}"
                    name = "" if page == lt.DEFAULT.name else page
                    if k == 0 and j == 0:  # the link: the text in the query string, the page in the path
                        sess.query_string = urlencode({"text": text}, quote_via=quote)
                        msg = lt._rerun_msg(sess, page_name=name)
                    else:  # a page switch, with the Sentence box's value (a browser sends its widgets' values
                        # with every rerun; without it the box would fall back to the default text): a new text
                        # first, the same text on the next page
                        sess.page_hash = ""
                        msg = lt._rerun_msg(sess, page_name=name, widget=(sess.text_id, text))
                    t0, b0 = time.monotonic(), ws.bytes
                    await raw.send(msg)
                    await lt._wait_run(ws, sess, st, t0 + timeout)
                    s.runs.append((page, time.monotonic() - t0, ws.bytes - b0))
                    if sess.text_id is None:
                        raise RuntimeError("no Sentence box on the page")
                    if not ws.tokens.startswith(text.split(".")[0].lower() + " ."):  # "long text 123 ."
                        raise RuntimeError(f"the run on {page} did not trace text {k} (tokens {ws.tokens!r})")
    except TimeoutError:
        s.errors.append(f"timeout ({stage}, {timeout:g} s)")
    except (OSError, websockets.exceptions.WebSocketException, asyncio.IncompleteReadError) as exc:
        s.errors.append(f"{stage} failed: {type(exc).__name__}: {str(exc)[:100]}")
    except Exception as exc:  # noqa: BLE001 - a client bug must show up as an error
        s.errors.append(f"{stage}: {type(exc).__name__}: {str(exc)[:100]}")
    s.errors += st.errors
    s.notices += st.notices
    return s


# ---- /proc --------------------------------------------------------------------------------------------------
def vm_hwm_bytes(pid: int) -> int:
    """The process's own peak RSS since it started (VmHWM), summed over its tree."""
    total = 0
    for p in lt.process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


async def _sampler(pid: int, out: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        out.append(lt.tree_rss_bytes(pid))
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_S)
        except TimeoutError:
            pass


@dataclass
class Result:
    label: str
    scenario: str
    sessions: list[Session]
    rss_start: int
    rss_peak: int
    hwm: int
    rss_end: int  # when the last session finished
    rss_idle: int
    wall_s: float

    @property
    def n_errors(self) -> int:
        return sum(len(s.errors) for s in self.sessions)

    def runs(self, page: str | None = None) -> list[tuple[str, float, int]]:
        return [r for s in self.sessions for r in s.runs if page is None or r[0] == page]


async def run_scenario(args, scenario: str, host: str, port: int, pid: int, label: str) -> Result:
    pages = SCENARIOS[scenario]
    base = args.seed * 10_000 + (5_000 if scenario == "explorer" and not args.cold else 0)  # one server: new texts
    sessions = [Session(i, [lt.long_text(base + i * args.loops + k) for k in range(args.loops)])
                for i in range(args.sessions)]
    rss0 = lt.tree_rss_bytes(pid)
    samples: list[int] = [rss0]
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sampler(pid, samples, stop))
    t0 = time.monotonic()
    tasks = [asyncio.create_task(session_loop(s, pages, host, port, args.timeout)) for s in sessions]
    done, pending = await asyncio.wait(tasks, timeout=args.max_seconds)
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for s, t in zip(sessions, tasks):
        if t in pending:
            s.errors.append(f"stopped by the {args.max_seconds:g} s cap")
    wall = time.monotonic() - t0
    rss_end = lt.tree_rss_bytes(pid)
    await asyncio.sleep(args.idle)  # the websockets are closed: Streamlit keeps the sessions (disconnectedSessionTTL)
    stop.set()
    await sampler
    idle = lt.tree_rss_bytes(pid)
    return Result(label, scenario, sessions, rss0, max(samples), vm_hwm_bytes(pid), rss_end, idle, wall)


# ---- report -------------------------------------------------------------------------------------------------
def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f}"


HEADER = ["server", "scenario", "runs (errors)", "run p50 / max (s)", "MB sent per run p50 / max",
          "RSS start (MB)", "**peak** (sampled / VmHWM, MB)", "after the last run (MB)", "idle (MB)", "wall (s)"]


def row(r: Result) -> list[str]:
    secs = sorted(x[1] for x in r.runs())
    sent = sorted(x[2] for x in r.runs())
    p50 = statistics.median(secs) if secs else float("nan")
    b50 = statistics.median(sent) if sent else 0
    return [r.label, r.scenario, f"{len(secs)} ({r.n_errors})",
            f"{p50:.2f} / {max(secs) if secs else float('nan'):.2f}",
            f"{b50 / 1e6:.2f} / {(max(sent) if sent else 0) / 1e6:.2f}", _mb(r.rss_start),
            f"**{_mb(r.rss_peak)}** / {_mb(r.hwm)}", _mb(r.rss_end), _mb(r.rss_idle), f"{r.wall_s:.0f}"]


def print_table(results: list[Result]) -> None:
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for r in results:
        print("| " + " | ".join(row(r)) + " |")
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.label, r.scenario), []).append(r)
    if any(len(g) > 1 for g in groups.values()):
        print("\nMedians over rounds (MB): " + "; ".join(
            f"{label} {scen}: peak {_mb(statistics.median(r.rss_peak for r in g))}, "
            f"idle {_mb(statistics.median(r.rss_idle for r in g))}" for (label, scen), g in groups.items()))
    errors = [e for r in results for s in r.sessions for e in s.errors]
    notices = {n for r in results for s in r.sessions for n in s.notices}
    if errors:
        print("\nErrors:\n" + "\n".join(f"- {e}" for e in errors[:20]))
    if notices:
        print("\nNotices (st.error other than the error boundary):\n" + "\n".join(f"- {n}" for n in sorted(notices)))


# ---- main ---------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8501", help="the app (loopback only)")
    p.add_argument("--sessions", type=int, default=3, help=f"sessions at once (default 3, max {MAX_SESSIONS})")
    p.add_argument("--loops", type=int, default=6, help=f"texts per session (default 6, max {MAX_LOOPS})")
    p.add_argument("--scenario", default="steps-heads", choices=(*SCENARIOS, "both"),
                   help="steps-heads: Step by step then the Head lab; explorer: the same texts on the explorer")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per run")
    p.add_argument("--idle", type=float, default=20.0, help="seconds after the sessions closed before the idle RSS")
    p.add_argument("--cold", action="append", default=[], metavar="LABEL=CMD",
                   help="start a fresh server with CMD for every scenario and round (repeatable: alternated)")
    p.add_argument("--cold-wait", type=float, default=120.0, help="--cold: seconds to wait for the app")
    p.add_argument("--rounds", type=int, default=1, help="--cold: repeat every (server, scenario) this many times")
    p.add_argument("--pid", type=int, help="server process whose tree is measured (default: the port's listener)")
    p.add_argument("--max-seconds", type=float, help="hard cap per scenario (default 60 s per text and session)")
    p.add_argument("--seed", type=int, help="numbers the texts (default: from the clock); the same seed gives the "
                   "same texts, e.g. to compare two fresh servers")
    args = p.parse_args(argv)
    if not 1 <= args.sessions <= MAX_SESSIONS or not 1 <= args.loops <= MAX_LOOPS:
        p.error(f"--sessions must be 1..{MAX_SESSIONS} and --loops 1..{MAX_LOOPS}")
    if not 1 <= args.rounds <= 5 or not 0 <= args.idle <= 300 or not 1 <= args.timeout <= 600:
        p.error("--rounds must be 1..5, --idle 0..300 s, --timeout 1..600 s")
    for c in args.cold:
        if "=" not in c:
            p.error("--cold takes LABEL=CMD")
    if args.max_seconds is None:
        args.max_seconds = 60.0 * args.loops * args.sessions
    args.max_seconds = min(args.max_seconds, 1800.0)
    if args.seed is None:
        args.seed = int(time.time()) % 10_000
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    host, port = lt.check_loopback(args.url)
    scenarios = list(SCENARIOS) if args.scenario == "both" else [args.scenario]
    print(f"# Headlight memory: {args.sessions} sessions x {args.loops} distinct 512-token texts, "
          f"{', '.join(scenarios)}, {os.cpu_count()} CPUs, --seed {args.seed}", file=sys.stderr)
    results: list[Result] = []
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "headlight-memory-server.log"
    if not args.cold:
        pid = args.pid or lt.server_root_pid(port)
        if pid is None:
            print(f"nothing listens on {host}:{port}: start the app (make run) or use --cold", file=sys.stderr)
            return 2
        for scen in scenarios:
            results.append(asyncio.run(run_scenario(args, scen, host, port, pid, f"pid {pid}")))
            print(f"{scen}: done, {results[-1].n_errors} errors", file=sys.stderr)
    else:
        servers = [c.split("=", 1) for c in args.cold]
        for rnd in range(args.rounds):
            for scen in scenarios:
                for label, cmd in (servers if rnd % 2 == 0 else servers[::-1]):  # alternate who goes first
                    proc = lt.start_server(cmd, host, port, args.cold_wait, log)
                    try:
                        pid = args.pid or proc.pid
                        results.append(asyncio.run(run_scenario(args, scen, host, port, pid, label)))
                    finally:
                        lt.stop_server(proc)
                    print(f"round {rnd + 1}, {scen}, {label}: {results[-1].n_errors} errors", file=sys.stderr)
                    time.sleep(2)
    print_table(results)
    return 0 if results and all(r.n_errors == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
