"""Benchmark: a local GPT-2 folder on our modules vs `transformers`' GPT2LMHeadModel (never run by pytest).

A random GPT-2 with the real 124M shape (12 layers, 12 heads, n_embd 768, vocab 50257, 1024 positions) is
built with transformers, saved as safetensors into a temp folder with a small byte-level tokenizer.json (the
embedding keeps its 50257 rows), and loaded by `model.hf.load.load_local`. Both run a forward at 128 tokens
(logits for every position) with one torch thread, interleaved (ours, theirs, ours, ...) after a warm-up;
medians are compared. Ours also returns every attention map; transformers is timed both with its default
attention (sdpa, no maps) and eager with output_attentions=True (the same work as ours); and both again with
the logits of the last position only (what a trace and each greedy step need).

    .venv/bin/python bench/bench_gpt2.py [--tokens 128] [--runs 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402


def build(folder: Path, corpus: list[str] | None = None, vocab: int = 400):
    """A random GPT-2 of the 124M shape saved into `folder`, with a byte-level BPE tokenizer.json trained on
    `corpus` (default: the example sentence) up to `vocab` entries: the embedding keeps its 50257 rows either way."""
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024)
    hf = tf.GPT2LMHeadModel(cfg).eval()
    hf.save_pretrained(str(folder), safe_serialization=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus or ["The animal didn't cross the street because it was tired."] * 8, trainer)
    tok.save(str(folder / "tokenizer.json"))
    return hf


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def interleaved_medians(contenders: dict, runs: int, warmup: int = 2) -> dict[str, float]:
    """Each callable warmed up `warmup` times, then timed `runs` times in turn (a, b, c, a, b, c, ...): the median
    seconds of each, by name. Interleaving spreads the machine's slow moments over every contender alike."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(runs):
        for k, fn in contenders.items():
            times[k].append(timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from model.hf.load import load_local

    with tempfile.TemporaryDirectory() as tmp:
        hf = build(Path(tmp) / "gpt2-124m-random")
        ours = load_local(torch.device("cpu"), Path(tmp) / "gpt2-124m-random")
    ids = torch.randint(0, 50257, (1, args.tokens), generator=torch.Generator().manual_seed(0))
    import copy

    hf_eager = copy.deepcopy(hf)
    hf_eager.set_attn_implementation("eager")
    with torch.inference_mode():
        # same numbers first
        a, b = ours.module(ids).logits, hf(ids).logits
        print(f"max |logits ours - transformers| = {float((a - b).abs().max()):.2e}")
        contenders = {
            "ours (every attention map)": lambda: ours.module(ids),
            f"transformers ({hf.config._attn_implementation}, no maps)": lambda: hf(ids),
            "transformers (eager, output_attentions)": lambda: hf_eager(ids, output_attentions=True),
            "ours, last position's logits (as trace does)": lambda: ours.module(ids, last_only=True),
            "transformers, logits_to_keep=1": lambda: hf(ids, logits_to_keep=1),
        }
        med = interleaved_medians(contenders, args.runs)
    print(f"GPT-2 124M shape, {args.tokens} tokens, {args.threads} thread(s), median of {args.runs} interleaved runs")
    for k, v in med.items():
        print(f"  {k:45s} {v * 1000:8.1f} ms")
    names = list(med)
    for other in names[1:3]:
        print(f"ratio ours / {other}: {med[names[0]] / med[other]:.3f}")
    print(f"ratio ours / transformers, last position's logits: {med[names[3]] / med[names[4]]:.3f}")


if __name__ == "__main__":
    main()
