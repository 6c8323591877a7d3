"""Head lab speed (run by `make bench`, never by pytest): server-side computation of the lab's results on MiniLM,
one torch thread as the app runs, medians. Targets (issue 10): one ablation re-run on a 14-token sentence < 100 ms,
rank all 72 heads < 10 s, a new minimal pair < 300 ms; attention flow "a few seconds" at 64 tokens; atlas < 30 s."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from analysis import atlas, flow, heads  # noqa: E402
from model import load_model  # noqa: E402

TEXT = "The animal didn't cross the street because it was tired"


def timed(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> str:
    torch.set_num_threads(1)
    m = load_model("minilm-l6", "cpu")
    heads.minimal_pair(m, heads.PRESET_A, heads.PRESET_B)  # warm-up
    adjectives = iter(["wide", "busy", "old", "long", "dark", "quiet", "narrow", "empty", "wet", "new", "cold"])
    pair = timed(lambda: heads.minimal_pair(m, heads.PRESET_A, heads.PRESET_A.replace("tired", next(adjectives))), 10)
    base = heads.encoder_run(m, TEXT)
    one = timed(lambda: heads.encoder_effect(m, TEXT, [(3, 1)], "zero", baseline=base), 10)
    rank = timed(lambda: heads.rank_heads_by_effect(m, TEXT, "zero", baseline=base), 3)
    long_text = " ".join(["the cat sat on the mat because it was warm"] * 6)  # 62 tokens + specials
    tr = m.trace(long_text)
    fl = timed(lambda: flow.flow_and_rollout(tr.encoder_attention, tr.source_tokens, 5), 3)
    at = timed(lambda: atlas.build_atlas(m), 1)
    rows = [("new minimal pair (two forwards, alignment, ranking)", pair, "< 0.3 s"),
            ("one ablation re-run, 14 tokens (normal run cached)", one, "< 0.1 s"),
            ("rank all 72 heads (one batched forward)", rank, "< 10 s"),
            (f"attention flow, {len(tr.source_tokens)} tokens", fl, "a few seconds"),
            ("head atlas (61 probe sentences)", at, "< 30 s")]
    lines = ["| Head lab, MiniLM, 1 torch thread | median | target |", "|---|---|---|"]
    lines += [f"| {name} | {sec * 1000:.0f} ms | {target} |" if sec < 1 else f"| {name} | {sec:.2f} s | {target} |"
              for name, sec, target in rows]
    out = "\n".join(lines) + f"\n\nload average {os.getloadavg()[0]:.2f}\n"
    print(out)
    return out


if __name__ == "__main__":
    (Path(__file__).parent / "results_heads.md").write_text(main())
