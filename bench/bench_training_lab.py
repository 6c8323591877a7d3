"""The Training page's lab against issue 36's targets, through the command line exactly as the hidden checks run it:

    python -m training lab --task TASK --steps 400 --seed SEED --json OUT.json

for every task and several seeds, one process at a time, each timed (wall clock and the child's CPU seconds).
Targets per run: the last snapshot's loss <= 1/3 of the first's, alignment <= 0.5 at step 0 and >= 0.9 at the end,
the whole command <= 180 s on the 2-core machine. The machine is shared: the load average (`uptime`) is printed
before and after, and the CPU seconds tell the run's own cost apart from the wait for a core.

    .venv/bin/python bench/bench_training_lab.py                      # 3 tasks x seeds 0-3
    .venv/bin/python bench/bench_training_lab.py --seeds 3 7 --tasks reverse --out bench/results_training_lab.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("copy", "reverse", "swap")


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def one(task: str, seed: int, steps: int, out_dir: Path) -> dict:
    out = out_dir / f"{task}-{seed}.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "training", "lab", "--task", task, "--steps", str(steps),
                           "--seed", str(seed), "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{task} seed {seed} failed:\n{proc.stderr}")
    data = json.loads(out.read_text())
    snaps = data["snapshots"]
    first, last = snaps[0], snaps[-1]
    row = {"task": task, "seed": seed, "snapshots": len(snaps), "loss0": first["loss"], "loss": last["loss"],
           "ratio": last["loss"] / first["loss"], "align0": first["alignment"], "align": last["alignment"],
           "wall_s": wall, "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}
    row["ok"] = row["ratio"] <= 1 / 3 and row["align0"] <= 0.5 and row["align"] >= 0.9 and wall <= 180
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--out", help="append the table to this markdown file")
    args = p.parse_args(argv)
    lines = [f"Before: {load()} ({os.cpu_count()} cores)", "",
             "| task | seed | snapshots | loss 0 -> end (ratio) | alignment 0 -> end | wall s | CPU s | targets |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            for seed in args.seeds:
                r = one(task, seed, args.steps, Path(tmp))
                rows.append(r)
                line = (f"| {r['task']} | {r['seed']} | {r['snapshots']} | {r['loss0']:.3f} -> {r['loss']:.3f} "
                        f"({r['ratio']:.2f}) | {r['align0']:.3f} -> {r['align']:.3f} | {r['wall_s']:.1f} | "
                        f"{r['cpu_s']:.1f} | {'met' if r['ok'] else 'MISSED'} |")
                lines.append(line)
                print(line, flush=True)
    tail = ["", f"After: {load()}. Median wall {statistics.median(r['wall_s'] for r in rows):.1f} s, median CPU "
            f"{statistics.median(r['cpu_s'] for r in rows):.1f} s; worst loss ratio "
            f"{max(r['ratio'] for r in rows):.2f}, lowest final alignment {min(r['align'] for r in rows):.3f}, "
            f"highest start alignment {max(r['align0'] for r in rows):.3f}; "
            f"{sum(r['ok'] for r in rows)} of {len(rows)} runs met every target."]
    print("\n".join(tail))
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n".join(lines + tail) + "\n\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
