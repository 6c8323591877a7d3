"""Benchmark: the cause views on SmolLM2-135M (model/cause/; never run by pytest), against the issue's targets:

- generation replay: ms per token at 30 new tokens, every step's rows kept (and its keys and values), greedy;
  beside it the same 30 tokens with one full forward per token and no cache;
- activation patching: every head of SmolLM2 (30 x 9 = 270) on a 10-token pair, in seconds (the residual grid too);
- direct logit attribution: one attribution against one plain forward of the same prompt (last position's logits),
  interleaved, median ratio.

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


def median_of(fn, runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


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
    print(f"generation, {n} tokens, rows and K/V kept: {gen / n * 1e3:.1f} ms/token (target <= 60); "
          f"without the cache: {full / n * 1e3:.1f} ms/token ({full / gen:.2f}x)")
    heads = median_of(lambda: patch(m, PROMPT, CORRUPT, " Paris", " Rome", residual=False), max(1, args.runs // 2))
    both = median_of(lambda: patch(m, PROMPT, CORRUPT, " Paris", " Rome"), max(1, args.runs // 2))
    print(f"patching every head (270) on the 10-token pair: {heads:.2f} s (target <= 15); with the residual grid "
          f"(30 x 10) too: {both:.2f} s")
    plain, dla = [], []
    for _ in range(max(args.runs, 9)):  # interleaved
        t = time.perf_counter()
        m.run(Run(ids, keep=Keep(logits="last")))
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        attribute(m, PROMPT, " Paris", " Rome")
        dla.append(time.perf_counter() - t)
    p, d = statistics.median(plain), statistics.median(dla)
    print(f"DLA: {d * 1e3:.1f} ms against a plain forward {p * 1e3:.1f} ms: {d / p:.2f}x (target <= 1.2)")
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
