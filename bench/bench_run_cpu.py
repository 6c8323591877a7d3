"""Benchmark (never run by pytest): server CPU seconds per finished Streamlit run, the explorer against the bare app
(`bench/minimal_app.py`: one plotly heatmap, plain `streamlit run`), side by side and alternated, on sentences
neither server has seen (issue 39, item 1).

Each server runs on 127.0.0.1 (the app through its door, `python -m serve run app.py`, as `make run` does). A round
sends K new students to each server in turn, at most 4 at a time, over Streamlit's websocket (the student of
bench/loadtest.py: open the link with `?text=<sentence>`, then type a second sentence); the server's CPU is its
process tree's utime + stime from /proc before and after, divided by the runs that finished. With `--baseline REF`
the app at that commit (exported by `git archive`, this checkout's virtual environment) is served and measured beside
it in the same rounds. Each server gets a warm-up of 4 students first (imports, model load) that is not counted.

    .venv/bin/python bench/bench_run_cpu.py [--students 30] [--rounds 3] [--baseline 3d6bda0] [--page explorer]

Bounded: at most 200 students a server a round, 10 rounds, and 20 minutes in all; the servers are always stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from browser_support import free_port  # noqa: E402
from loadtest import Student, run_student, sentence, tree_cpu_seconds  # noqa: E402

# the bare app has no st.navigation menu and does not write the sentence into the URL: not errors there
BARE_ONLY = ("no app shell", "second run did not take")
WALL_CAP_S = 20 * 60


def baseline_tree(ref: str, into: Path) -> Path:
    """The commit's files in `into`, with this checkout's virtual environment."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / ".venv").symlink_to(ROOT / ".venv")
    return into


@contextlib.contextmanager
def server(root: Path, app: str, door: bool):
    """`python -m serve run <app>` (door) or plain `streamlit run <app>` of checkout `root`; yields (port, pid)."""
    port = free_port()
    cmd = [str(ROOT / ".venv/bin/python"), "-m", "serve" if door else "streamlit", "run", str(root / app),
           "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "HEADLIGHT_DEVICE": "cpu"})
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{cmd} exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{cmd} did not answer within 120 s") from None
                time.sleep(0.2)
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def drive(port: int, pid: int, page: str, first: int, k: int, timeout: float,
                bare: bool = False) -> tuple[float, int, int]:
    """K students numbered from `first` on one server, at most 4 at a time -> (CPU s per run, runs, errors)."""
    sem = asyncio.Semaphore(4)

    async def one(s: Student) -> Student:
        async with sem:
            return await run_student(s, "127.0.0.1", port, timeout, 0.0)

    students = [Student(i, page, sentence(first + i), sentence(first + i, second=True)) for i in range(k)]
    cpu0 = tree_cpu_seconds(pid)
    await asyncio.wait_for(asyncio.gather(*(one(s) for s in students)), timeout * 2 * k)
    cpu = tree_cpu_seconds(pid) - cpu0
    runs = sum((s.first_s is not None) + (s.second_s is not None) for s in students)
    ignore = BARE_ONLY if bare else ()
    errs = [[e for e in s.errors if not e.startswith(ignore)] for s in students]
    errors = sum(1 for e in errs if e)
    if errors:
        print(f"errors, e.g. {next(e for e in errs if e)[0]}", file=sys.stderr)
    return (cpu / runs if runs else float("nan")), runs, errors


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=30, help="new students per server per round (default 30)")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    ap.add_argument("--baseline", default="", help="also serve the app at this commit (e.g. 3d6bda0)")
    ap.add_argument("--page", default="explorer", help="the app's page the students open (default explorer)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per run")
    args = ap.parse_args(argv)
    if not 1 <= args.students <= 200 or not 1 <= args.rounds <= 10:
        ap.error("--students 1..200, --rounds 1..10")
    seed = int(time.time()) % 100_000  # sentences no server has seen: numbered from the clock
    t_start = time.monotonic()
    with contextlib.ExitStack() as stack:
        trees = [("bare app", ROOT, "bench/minimal_app.py", False), ("this checkout", ROOT, "app.py", True)]
        if args.baseline:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="headlight-base-")))
            trees.insert(1, (f"baseline {args.baseline}", baseline_tree(args.baseline, tmp), "app.py", True))
        servers = [(name, *stack.enter_context(server(root, app, door))) for name, root, app, door in trees]
        for j, (name, port, pid) in enumerate(servers):  # warm-up, not counted
            asyncio.run(drive(port, pid, args.page, 9_000_000 + seed * 100 + j * 10, 4, args.timeout,
                              bare=name == "bare app"))
        rows: dict[str, list[tuple[float, int, int, str]]] = {name: [] for name, _, _ in servers}
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]  # alternate who goes first
            for name, port, pid in order:
                if time.monotonic() - t_start > WALL_CAP_S:
                    print(f"stopped by the {WALL_CAP_S} s cap", file=sys.stderr)
                    break
                j = [s[0] for s in servers].index(name)
                first = (seed * 100 + r * 10 + j) * 1000
                l0 = load()
                per_run, runs, errs = asyncio.run(drive(port, pid, args.page, first, args.students, args.timeout,
                                                           bare=name == "bare app"))
                rows[name].append((per_run, runs, errs, f"{l0} → {load()}"))
                print(f"round {r + 1} {name}: {per_run:.4f} s/run over {runs} runs, {errs} errors", file=sys.stderr)
    bare = statistics.median(x[0] for x in rows["bare app"])
    print(f"\nServer CPU per finished run, {args.page}, {args.students} new students a round (2 runs each), "
          f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| server | " + " | ".join(f"round {r + 1}" for r in range(args.rounds)) + " | median | × bare app |")
    print("|---|" + "---|" * (args.rounds + 2))
    for name, vals in rows.items():
        med = statistics.median(x[0] for x in vals)
        cells = " | ".join(f"{v:.4f} ({runs} runs, {e} err, load {ld})" for v, runs, e, ld in vals)
        print(f"| {name} | {cells} | {med:.4f} | {med / bare:.2f} |")
    return 0 if all(x[1] for v in rows.values() for x in v) else 1


if __name__ == "__main__":
    sys.exit(main())
