"""Class mode's store under a lecture hall's writes, without the app: N processes (make serve's app processes) answer
one question for their students at once, each answer timed from the call to its commit, while one more process reads
the summary every POLL_S (the projector).

    python bench/class_store.py --procs 16 --students 300                       # SQLite in a new folder here
    python bench/class_store.py --db /path/class.sqlite3 --procs 4 --students 1200
    python bench/class_store.py --db postgresql://headlight@127.0.0.1:5432/headlight

Prints answers/s, the answer latency (p50, p95, max), errors ("database is locked" included), the store's retries,
the projector's reads and how far its count was behind, and checks that every student is counted exactly once.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import classroom.store as class_store  # noqa: E402
from classroom.store import open_store  # noqa: E402

POLL_S = 0.2


def writer(url: str, code: str, qid: int, sessions: list[str], answers_each: int, start, out,
           queue: bool = True) -> None:
    if not queue:  # SQLite's busy handler alone, for comparison
        class_store.fcntl = None
    store = open_store(url)
    start.wait(60)
    lat, errors = [], []
    for k in range(answers_each):  # answering again: counted once, with the last answer
        for s in sessions:
            t = time.perf_counter()
            try:
                store.answer(code, qid, s, f"token{(hash(s) + k) % 5}")
                lat.append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 - counted
                errors.append(f"{type(e).__name__}: {e}")
    out.put((lat, errors, store.retries, time.time()))


def projector(url: str, code: str, qid: int, start, stop, out) -> None:
    store = open_store(url)
    start.wait(60)
    reads, lat = 0, []
    while not stop.is_set():
        t = time.perf_counter()
        store.summary(code)
        store.answers(code, qid)
        lat.append(time.perf_counter() - t)
        reads += 1
        time.sleep(POLL_S)
    out.put(("projector", reads, lat))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="a SQLite path or a postgresql:// URL (default: a new SQLite file under ./)")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--again", type=int, default=1, help="answers per student (the last one counts)")
    ap.add_argument("--no-writer-queue", action="store_true",
                    help="SQLite: no flock queue before BEGIN IMMEDIATE, SQLite's busy handler alone (comparison)")
    args = ap.parse_args()
    url = args.db or str(Path(tempfile.mkdtemp(prefix="class-bench-", dir=".")) / "class.sqlite3")
    store = open_store(url)
    room = store.open_room()
    q = store.start_question(room.code, "attend", {})
    sessions = [f"student{i}" for i in range(args.students)]
    ctx = multiprocessing.get_context("spawn")
    start, stop, out, pout = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(url, room.code, q.id, sessions[i::args.procs], args.again, start, out,
                                                  not args.no_writer_queue))
             for i in range(args.procs)]
    proj = ctx.Process(target=projector, args=(url, room.code, q.id, start, stop, pout))
    for p in (*procs, proj):
        p.start()
    time.sleep(1.0 + 0.1 * args.procs)  # every process has opened the store
    t0 = time.time()
    start.set()
    results = [out.get(timeout=600) for _ in procs]
    stop.set()
    _, reads, plat = pout.get(timeout=60)
    for p in (*procs, proj):
        p.join(30)
    seconds = max(r[3] for r in results) - t0
    lat = [x for r in results for x in r[0]]
    errors = [e for r in results for e in r[1]]
    counted = sum(store.answers(room.code, q.id).values())
    n = args.students * args.again
    queue = "" if store.dialect != "sqlite" else (", busy handler only" if args.no_writer_queue else ", flock queue")
    print(f"{store.dialect}{queue}: {args.procs} processes, "
          f"{args.students} students x {args.again} answers = {n} in {seconds:.2f} s: {n / seconds:.0f} answers/s")
    print(f"answer latency: p50 {statistics.median(lat) * 1000:.1f} ms, p95 {pct(lat, 95) * 1000:.1f} ms, "
          f"max {max(lat) * 1000:.1f} ms; errors {len(errors)}"
          + (f" (e.g. {errors[0]})" if errors else "") + f"; retries {sum(r[2] for r in results)}")
    print(f"projector: {reads} reads, p95 {pct(plat, 95) * 1000:.1f} ms; counted {counted} of {args.students} "
          f"students ({'exactly once' if counted == args.students else 'WRONG'})")
    sys.exit(0 if not errors and counted == args.students else 1)


if __name__ == "__main__":
    main()
