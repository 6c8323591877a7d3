"""A soak test: a lecture's worth of students against a running Headlight app, round after round, watching for leaks.

Every round sends `--students` students (default 40) spread over `--ramp` seconds, cycling through every page
(explorer, positional, masks, steps, seq2seq, heads, tour), each with two sentences the server has never seen
(bench/loadtest.py's protocol-level student: the websocket, a first run, then a typed sentence). Between rounds it
samples the server's process tree: RSS, threads and open files. It stops by itself after `--minutes` (default 20,
at most 60), and only talks to loopback addresses.

Pass: 0 errors; RSS at the end within +10 % of RSS after the warm-up (`--warmup` minutes, default 10); threads and
open files not growing (the end within +10 % of the warm-up level, at least +4 of slack). The warm-up fills the
process's result cache, which is bounded by bytes (HEADLIGHT_CACHE_MB, default 1024 MiB; measured: RSS rises ~75 MB
a minute under 40 students with new sentences until the budget is reached, ~9 minutes, then stays level). It is
also longer than Streamlit's `server.disconnectedSessionTTL` (120 s): a student who leaves keeps a session (its event loop: an epoll
and a socket pair, 3 file descriptors) for that long in case the browser reconnects, so open files climb for two
minutes and then level off at about 3 x the students of the last two minutes.

    make run &   (or make serve &)
    make soak                        # SOAK_ARGS="--minutes 5 --students 20"
    .venv/bin/python bench/soak.py --url http://127.0.0.1:8501 --minutes 20 --students 40
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadtest as lt  # noqa: E402

PAGES = lt.PAGES  # every page of the app (ui/pages.py)
MAX_MINUTES = 60


def tree_threads_and_files(pid: int) -> tuple[int, int]:
    """(threads, open file descriptors) summed over the server's process tree."""
    threads = files = 0
    for p in lt.process_tree(pid):
        try:
            status = Path(f"/proc/{p}/status").read_text()
            threads += int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
            files += len(os.listdir(f"/proc/{p}/fd"))
        except (OSError, StopIteration, ValueError):
            continue
    return threads, files


async def one_round(r: int, args, host: str, port: int) -> list[lt.Student]:
    base = (args.seed * 1000 + 500 + r) * lt.MAX_STUDENTS  # sentences no other round (and no load test) typed
    students = [lt.Student(i, PAGES[(i + r) % len(PAGES)], lt.sentence(base + i), lt.sentence(base + i, True))
                for i in range(args.students)]
    delays = [args.ramp * i / max(1, len(students)) for i in range(len(students))]
    tasks = [asyncio.create_task(lt.run_student(s, host, port, args.timeout, d)) for s, d in zip(students, delays)]
    done, pending = await asyncio.wait(tasks, timeout=args.ramp + 2 * args.timeout + 30)
    for s, t in zip(students, tasks):
        if t in pending:
            t.cancel()
            s.errors.append("stopped by the round's cap")
    await asyncio.gather(*pending, return_exceptions=True)
    return students


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8501", help="the app (loopback only)")
    p.add_argument("--minutes", type=float, default=20.0, help=f"how long (default 20, at most {MAX_MINUTES})")
    p.add_argument("--students", type=int, default=40, help="students per round (default 40)")
    p.add_argument("--ramp", type=float, default=10.0, help="a round's students start over this many seconds")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per run")
    p.add_argument("--warmup", type=float, default=10.0,
                   help="minutes before the RSS / threads / files baseline (the result cache fills first)")
    p.add_argument("--pause", type=float, default=5.0, help="seconds between rounds")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000, help="numbers the sentences")
    p.add_argument("--pid", type=int, help="server process (default: the port's listener)")
    args = p.parse_args(argv)
    if not 0 < args.minutes <= MAX_MINUTES or not 1 <= args.students <= lt.MAX_STUDENTS:
        p.error(f"--minutes must be in (0, {MAX_MINUTES}] and --students in [1, {lt.MAX_STUDENTS}]")
    host, port = lt.check_loopback(args.url)
    pid = args.pid or lt.server_root_pid(port)
    if pid is None:
        print(f"soak: nothing listens on port {port}: start the app first (make run / make serve)", file=sys.stderr)
        return 2
    end = time.monotonic() + args.minutes * 60
    print(f"soak: {args.students} students per round over {len(PAGES)} pages, {args.minutes:g} min, server pid {pid}")
    print(f"{'round':>5} {'min':>5} {'errors':>6} {'p50 s':>6} {'p95 s':>6} {'RSS MB':>7} {'threads':>7} {'files':>5} "
          f"{'load':>5}")
    rows, all_errors, baseline = [], [], None
    r = 0
    while time.monotonic() < end:
        students = asyncio.run(one_round(r, args, host, port))
        lat = [x for s in students for x in (s.first_s, s.second_s) if x is not None]
        errors = [(s.page, e) for s in students for e in s.errors]
        all_errors += errors
        rss = lt.tree_rss_bytes(pid)
        threads, files = tree_threads_and_files(pid)
        minute = args.minutes - (end - time.monotonic()) / 60
        row = (r, minute, len(errors), lt.pct(lat, 0.5), lt.pct(lat, 0.95), rss, threads, files)
        rows.append(row)
        load = Path("/proc/loadavg").read_text().split()[0]
        print(f"{r:>5} {minute:>5.1f} {len(errors):>6} {lt._f(row[3], 2):>6} {lt._f(row[4], 2):>6} "
              f"{rss / 2**20:>7.0f} {threads:>7} {files:>5} {load:>5}", flush=True)
        if baseline is None and minute >= args.warmup:
            baseline = (rss, threads, files)
        r += 1
        if time.monotonic() + args.pause < end:
            time.sleep(args.pause)
    if baseline is None:  # shorter than the warm-up: compare with the first round
        baseline = rows[0][5:8]
    rss_end, threads_end, files_end = rows[-1][5:8]
    growth = rss_end / baseline[0] - 1 if baseline[0] else 0.0
    ok_rss = growth <= 0.10
    ok_threads = threads_end <= max(baseline[1] * 1.1, baseline[1] + 4)
    ok_files = files_end <= max(baseline[2] * 1.1, baseline[2] + 4)
    p95s = [x[4] for x in rows if x[4] is not None]
    print(f"\nrounds {len(rows)}, students {sum(args.students for _ in rows)}, errors {len(all_errors)}; "
          f"p95 per round median {statistics.median(p95s):.2f} s, worst {max(p95s):.2f} s" if p95s else "")
    print(f"RSS after warm-up {baseline[0] / 2**20:.0f} MB -> end {rss_end / 2**20:.0f} MB ({growth:+.1%}, limit +10 %): "
          f"{'ok' if ok_rss else 'GREW'}")
    print(f"threads {baseline[1]} -> {threads_end}: {'ok' if ok_threads else 'GREW'}; "
          f"open files {baseline[2]} -> {files_end}: {'ok' if ok_files else 'GREW'}")
    for page, e in all_errors[:10]:
        print(f"  error on {page}: {e}")
    return 0 if not all_errors and ok_rss and ok_threads and ok_files else 1


if __name__ == "__main__":
    sys.exit(main())
