"""Quality bar for `seq2seq-tiny`: exact match and cross-attention alignment.

    python -m model.evaluate            # 1,000 held-out inputs per task (the brief's sentences included)
    python -m model.evaluate --n 200

Exact match: greedy decoding (each output fed back in, batched) must reproduce
the task's target token for token, `<eos>` included.

Alignment: for the steps that emit a text token (row t of the decoder input
[<bos>, y_1 .. y_n] produces y_{t+1}), the argmax over source positions of the
cross-attention must be the source position the task says (for copy, source
position t+1; for reverse, n-t; the task token sits at position 0). Attention
is read teacher-forced on the correct target, which is exactly what greedy
decoding sees when its output is right. The head used is named in
config.json ("alignment": a decoder layer and a head, or "mean" = the average
of that layer's heads); every head's rate is printed too.

Notation: b batch, h heads, n target length, m source length, L decoder layers.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .data import BOS, EOS, TASK_TOKENS, TASKS, SentenceSampler, heldout_sentences, permutation
from .transformer import Transformer


@dataclass
class TaskResult:
    task: str
    n: int
    exact: float  # fraction of inputs decoded exactly
    alignment: float  # fraction of text-emitting steps whose argmax is right, at the named head
    per_head: np.ndarray = field(repr=False, default=None)  # (L, h + 1) alignment rate; last column = head mean
    failures: list[tuple[str, str]] = field(default_factory=list, repr=False)  # (expected, got) token strings


def _pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out  # (b, max len)


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    """Text token ids (no specials), truncated as the model truncates."""
    return [tokenizer.encode(t, add_special_tokens=False).ids for t in texts]


@torch.no_grad()
def evaluate_task(module: Transformer, vocab: dict[str, int], text_ids: list[list[int]], task: str, *,
                  align_layer: int = -1, align_head: int | str = "mean", batch_size: int = 250,
                  device: torch.device | str = "cpu") -> TaskResult:
    """Exact match and alignment of `module` on `text_ids` (lists of text token ids) for one task."""
    was_training = module.training
    module.eval()
    pad, bos, eos, tt = 0, vocab[BOS], vocab[EOS], vocab[TASK_TOKENS[task]]
    n_layers, n_heads = module.config.n_decoder_layers, module.config.n_heads
    hits = np.zeros((n_layers, n_heads + 1))
    steps = 0
    exact = 0
    failures = []
    order = sorted(range(len(text_ids)), key=lambda i: len(text_ids[i]))  # similar lengths batch together
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        xs = [text_ids[i] for i in idx]
        ys = [[bos, *[x[j] for j in permutation(task, len(x))], eos] for x in xs]
        src = _pad([[tt, *x, eos] for x in xs], pad).to(device)  # (b, m)
        max_len = max(len(y) for y in ys) + 2
        out = module.greedy_decode(src, bos, eos, max_len).cpu()  # (b, <= max_len + 1)
        for row, y in zip(out.tolist(), ys):
            got = row[: row.index(eos) + 1] if eos in row else row
            if got == y:
                exact += 1
            elif len(failures) < 20:
                failures.append((y, got))
        tgt_in = _pad([y[:-1] for y in ys], pad).to(device)  # (b, n) teacher-forced [<bos>, y_1 .. y_n]
        res = module(src, tgt_in)
        cross = torch.stack(res.decoder.cross_attention).cpu()  # (L, b, h, n, m)
        cross = torch.cat([cross, cross.mean(2, keepdim=True)], dim=2)  # (L, b, h + 1, n, m)
        arg = cross.argmax(-1)  # (L, b, h + 1, n)
        for bi, x in enumerate(xs):
            want = torch.tensor([1 + j for j in permutation(task, len(x))])  # (n,) source positions
            hits += (arg[:, bi, :, : len(x)] == want).sum(-1).numpy()
            steps += len(x)
    module.train(was_training)
    per_head = hits / max(steps, 1)
    col = n_heads if align_head == "mean" else int(align_head)
    return TaskResult(task, len(text_ids), exact / len(text_ids), float(per_head[align_layer, col]), per_head,
                      failures)


def evaluate_loaded(loaded, texts: list[str], tasks=TASKS, **kw) -> dict[str, TaskResult]:
    """Evaluate a loaded seq2seq-tiny on raw texts, with the alignment head from its config."""
    from .seq2seq import read_config

    align = read_config().get("alignment", {"layer": -1, "head": "mean"})
    ids = encode_texts(loaded.tokenizer, texts)
    vocab = {t: loaded.tokenizer.token_to_id(t) for t in (BOS, EOS, *TASK_TOKENS.values())}
    return {t: evaluate_task(loaded.module, vocab, ids, t, align_layer=align["layer"], align_head=align["head"],
                             device=loaded.device, **kw) for t in tasks}


def heldout(n: int) -> list[str]:
    """The first n held-out inputs (the brief's sentences first), none of them in the training pool."""
    from .train import TRAIN_POOL

    sampler = SentenceSampler()
    train = sampler.sentences(0, TRAIN_POOL)
    return heldout_sentences(sampler, train, n)


def format_report(results: dict[str, TaskResult], align: dict) -> str:
    head = "head mean" if align["head"] == "mean" else f"head {align['head']}"
    lines = [f"alignment read at decoder layer {align['layer']} ({head}) of the cross-attention", "",
             f"{'task':8s} {'inputs':>6s} {'exact match':>12s} {'alignment':>10s}"]
    for r in results.values():
        lines.append(f"{r.task:8s} {r.n:6d} {r.exact:12.1%} {r.alignment:10.1%}")
    lines.append("")
    lines.append("alignment rate per decoder layer and head (last column: head mean)")
    for r in results.values():
        for layer, row in enumerate(r.per_head):
            lines.append(f"  {r.task:8s} layer {layer}: " + "  ".join(f"{v:6.1%}" for v in row))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.evaluate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000, help="held-out inputs per task (default 1000)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None)
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="a directory written by `python -m model.train --out DIR` (default: the shipped assets)")
    args = p.parse_args(argv)
    from .device import resolve_device
    from .seq2seq import NAME, load_seq2seq_tiny, read_config

    loaded = load_seq2seq_tiny(resolve_device(args.device), args.checkpoint)
    texts = heldout(args.n)
    results = evaluate_loaded(loaded, texts)
    print(f"{NAME}: {len(texts)} held-out inputs of 3 to 24 words per task (the brief's sentences included)")
    config = read_config(args.checkpoint) if args.checkpoint else read_config()
    print(format_report(results, config.get("alignment", {"layer": -1, "head": "mean"})))
    tok = loaded.tokenizer.id_to_token
    for r in results.values():
        for want, got in r.failures[:3]:
            print(f"  {r.task} miss: want {' '.join(map(tok, want))}\n{'':14s}got  {' '.join(map(tok, got))}")
    ok = all(r.exact >= 0.98 and (r.task == "swap" or r.alignment >= 0.95) for r in results.values())
    print("quality bar (exact >= 98% per task; alignment >= 95% for copy and reverse):",
          "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
