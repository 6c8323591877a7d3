"""Peak RSS of the command line (`python -m model TEXT --model M --out FILE`), each run a fresh process, SmolLM2
beside MiniLM (issue 39: SmolLM2's peak at most 600 MB over MiniLM's), on a short sentence and a 512-token text;
SmolLM2 both warm (its dequantised tensors read from the cache of model/dequant_cache.py) and cold (a fresh, empty
HEADLIGHT_CACHE: the first load on a machine, every tensor dequantised and the cache written).

    .venv/bin/python bench/cli_memory.py              # 2 rounds, interleaved; prints a markdown table
    .venv/bin/python bench/cli_memory.py --rounds 3

The peak is the child's ru_maxrss (os.wait4), in MiB (2^20 bytes) and, for the difference, MB (10^6 bytes)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHORT = "The animal didn't cross the street because it was tired"
LONG = "The lecturer explained how queries meet keys, and everyone typed a sentence of their own. " * 40  # > 512


def peak_kib(model: str, text: str, cache: str | None) -> int:
    """ru_maxrss (KiB) of one fresh CLI process."""
    env = dict(os.environ)
    if cache:
        env["HEADLIGHT_CACHE"] = cache
    with tempfile.TemporaryDirectory() as out, open(f"{out}/err", "w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "model", text, "--model", model, "--out", f"{out}/t.npz"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{model} ({'cold' if cache else 'warm'}, {len(text)} characters) failed (exit "
                             f"{os.waitstatus_to_exitcode(status)}):\n{err.read()[-2000:]}")
    return usage.ru_maxrss


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    runs: dict[tuple[str, str], list[int]] = {}
    for _ in range(args.rounds):
        for label, text in (("short", SHORT), ("512 tokens", LONG)):
            runs.setdefault((label, "minilm-l6"), []).append(peak_kib("minilm-l6", text, None))
            runs.setdefault((label, "smollm2 warm"), []).append(peak_kib("smollm2-135m", text, None))
            with tempfile.TemporaryDirectory() as cache:
                runs.setdefault((label, "smollm2 cold"), []).append(peak_kib("smollm2-135m", text, cache))
    print(f"medians of {args.rounds} rounds; load {os.getloadavg()[0]:.1f}\n\n| text | MiniLM peak (MiB) | SmolLM2 warm: "
          "peak / over MiniLM (MiB; MB) | SmolLM2 cold: peak / over MiniLM (MiB; MB) |\n|---|---|---|---|")
    for label in ("short", "512 tokens"):
        base = statistics.median(runs[(label, "minilm-l6")]) / 1024
        cells = []
        for kind in ("smollm2 warm", "smollm2 cold"):
            peak = statistics.median(runs[(label, kind)]) / 1024
            cells.append(f"{peak:,.0f} / +{peak - base:,.0f}; +{(peak - base) * 2**20 / 1e6:,.0f}")
        print(f"| {label} | {base:,.0f} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
