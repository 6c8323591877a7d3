"""Benchmark: the cause views on SmolLM2-135M (model/cause/; never run by pytest), against the issue's targets:

- generation replay: ms per token at 30 new tokens, every step's rows kept (and its keys and values), greedy;
  beside it the same 30 tokens with one full forward per token and no cache;
- activation patching: every head of SmolLM2 (30 x 9 = 270) on a 10-token pair, in seconds (the residual grid too);
- direct logit attribution: one attribution against one plain forward of the same prompt (last position's logits),
  interleaved, median ratio.

Wall time and this process's CPU time are both given (with one thread the CPU time is what the wall time would be
on a quiet machine).

Each measure is the median of --runs runs; the machine's load (`uptime`) is printed first and last, because a shared
2-core machine changes every number.

    .venv/bin/python bench/bench_cause.py [--runs 5] [--threads 2] [--tokens 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

PROMPT = "The Eiffel Tower is located in the city of"
CORRUPT = "The Colosseum is located in the city of"


def load() -> str:
    return " ".join(os.getloadavg().__repr__().strip("()").split(", "))


def median_of(fn, runs: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process): on a shared machine the CPU time moves much less
    than the wall time (with one thread it is what the wall time would be on a quiet one)."""
    wall, cpu = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from model import load_model
    from model.cause.attribution import attribute
    from model.cause.generation import generate
    from model.cause.patching import patch
    from model.run import Keep, Run

    m = load_model("smollm2-135m", "cpu")
    print(f"load average at the start: {load()}; torch threads {args.threads}; median of {args.runs} runs")
    generate(m, PROMPT, 3)  # warm-up
    n = args.tokens
    gen = median_of(lambda: generate(m, PROMPT, n), args.runs)
    ids = m.encode_prompt(PROMPT).ids

    def no_cache():
        seq = list(ids)
        for _ in range(n):
            with torch.inference_mode():
                seq.append(int(m.module.run(Run(seq, keep=Keep(logits="last"))).logits[0, -1].argmax()))

    full = median_of(no_cache, args.runs)
    print(f"generation, {n} tokens, rows and K/V kept: {gen[0] / n * 1e3:.1f} ms/token wall, {gen[1] / n * 1e3:.1f} "
          f"CPU (target <= 60); without the cache: {full[0] / n * 1e3:.1f} wall, {full[1] / n * 1e3:.1f} CPU "
          f"({full[0] / gen[0]:.2f}x wall)")
    heads = median_of(lambda: patch(m, PROMPT, CORRUPT, " Paris", " Rome", residual=False), max(1, args.runs // 2))
    both = median_of(lambda: patch(m, PROMPT, CORRUPT, " Paris", " Rome"), max(1, args.runs // 2))
    print(f"patching every head (270) on the 10-token pair: {heads[0]:.2f} s wall, {heads[1]:.2f} s CPU (target <= 15);"
          f" with the residual grid (30 x 10) too: {both[0]:.2f} s wall, {both[1]:.2f} s CPU")
    plain, dla = [], []
    for _ in range(max(args.runs, 9)):  # interleaved
        plain.append(median_of(lambda: m.run(Run(ids, keep=Keep(logits="last"))), 1))
        dla.append(median_of(lambda: attribute(m, PROMPT, " Paris", " Rome"), 1))
    p = [statistics.median(x[i] for x in plain) for i in (0, 1)]
    d = [statistics.median(x[i] for x in dla) for i in (0, 1)]
    print(f"DLA: {d[0] * 1e3:.1f} ms wall ({d[1] * 1e3:.1f} CPU) against a plain forward {p[0] * 1e3:.1f} ms "
          f"({p[1] * 1e3:.1f} CPU): {d[0] / p[0]:.2f}x wall, {d[1] / p[1]:.2f}x CPU (target <= 1.2)")
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
