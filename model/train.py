"""Train `seq2seq-tiny` as the paper trains (Vaswani et al. 2017, section 5):
teacher forcing, Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule

    lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

dropout 0.1 and label smoothing 0.1. All three tasks train in one model; the
task token comes first in the source (see `model.data`).

    python -m model.train                 # reproduces assets/seq2seq-tiny/ from seed 0
    python -m model.train --resume        # continue from runs/seq2seq-tiny/ after a stop (Ctrl-C)

The WordPiece tokenizer is trained with the `tokenizers` library on the shipped
corpus (`--rebuild-tokenizer`); its trainer may break frequency ties differently
from run to run, so training reuses the committed tokenizer.json by default and
the shipped ids are reproduced exactly.

The training state (weights, Adam moments and step counts, RNG states) is
saved every --save-every steps and on Ctrl-C to runs/seq2seq-tiny/state.safetensors
plus state.json (nothing pickled), so a resumed run continues exactly where
the stopped one was. Uses CUDA when present (--device).

Notation: b batch, m source length, n target length, V vocabulary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from tqdm import tqdm

from .config import PRESETS
from .data import ASSET_DIR, BOS, EOS, TASK_TOKENS, TASKS, TRAIN_SEED, UNK, SentenceSampler, permutation
from .device import resolve_device
from .evaluate import evaluate_task
from .seq2seq import MAX_TEXT_TOKENS, SEQ2SEQ_TINY, build_tokenizer
from .transformer import Transformer
from .weights import save_checkpoint

TRAIN_POOL = 120_000  # distinct training sentences (seed TRAIN_SEED); held-out inputs exclude all of them
DEV_SIZE = 64  # sentences per task for the progress checks (from the held-out seed's neighbour)
TRAIN_MAX_TOKENS = 40  # training sentences are cut here (none of the pool's reaches it: at most 33 tokens)
ALIGNMENT = {"layer": -1, "head": "mean"}  # where evaluate.py reads the alignment (written to config.json)


def lr_at(step: int, d_model: int, warmup: int, factor: float) -> float:
    """The paper's schedule; step counts from 1."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


class Batches:
    """Length-bucketed random batches of (src, tgt_in, tgt_out); deterministic from a torch.Generator."""

    def __init__(self, pool: list[list[int]], vocab: dict[str, int], batch_size: int, unk_rate: float,
                 gen: torch.Generator):
        self.pool = sorted(pool, key=len)  # neighbours in this order have similar lengths
        self.vocab, self.batch_size, self.unk_rate, self.gen = vocab, batch_size, unk_rate, gen

    def next(self):
        n = len(self.pool)
        b = min(self.batch_size, n)
        start = int(torch.randint(0, n - b + 1, (1,), generator=self.gen))
        rows = self.pool[start : start + b]
        tasks = torch.randint(0, len(TASKS), (b,), generator=self.gen).tolist()
        v = self.vocab
        src, tin, tout = [], [], []
        for x, ti in zip(rows, tasks):
            x = list(x)
            flips = torch.rand(len(x), generator=self.gen) < self.unk_rate  # teach the model to carry <unk>
            x = [v[UNK] if f else t for t, f in zip(x, flips.tolist())]
            task = TASKS[ti]
            y = [x[j] for j in permutation(task, len(x))]
            src.append([v[TASK_TOKENS[task]], *x, v[EOS]])
            tin.append([v[BOS], *y])
            tout.append([*y, v[EOS]])
        return _pad(src), _pad(tin), _pad(tout)  # (b, m), (b, n), (b, n)


def _pad(rows: list[list[int]]) -> torch.Tensor:
    out = torch.zeros((len(rows), max(len(r) for r in rows)), dtype=torch.long)  # <pad> = 0
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out


# ---- training state (safetensors + json; nothing pickled) ----------------------

def save_state(run_dir: Path, model: Transformer, opt: torch.optim.Adam, gen: torch.Generator, info: dict) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().cpu().clone() for k, v in model.named_parameters()}
    for name, p in model.named_parameters():
        st = opt.state.get(p)
        if st:
            tensors[f"adam.{name}.exp_avg"] = st["exp_avg"].cpu().clone()
            tensors[f"adam.{name}.exp_avg_sq"] = st["exp_avg_sq"].cpu().clone()
            tensors[f"adam.{name}.step"] = torch.as_tensor(st["step"], dtype=torch.float64).reshape(1).cpu()
    tensors["rng.torch"] = torch.get_rng_state()
    tensors["rng.data"] = gen.get_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    tmp = run_dir / "state.safetensors.tmp"
    save_file(tensors, str(tmp))
    tmp.replace(run_dir / "state.safetensors")
    (run_dir / "state.json").write_text(json.dumps(info, indent=1))


def load_state(run_dir: Path, model: Transformer, opt: torch.optim.Adam, gen: torch.Generator) -> dict:
    info = json.loads((run_dir / "state.json").read_text())
    tensors = load_file(str(run_dir / "state.safetensors"))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(tensors[f"model.{name}"])
            if f"adam.{name}.exp_avg" in tensors:
                opt.state[p] = {
                    "step": tensors[f"adam.{name}.step"].reshape(()).to(torch.float32),
                    "exp_avg": tensors[f"adam.{name}.exp_avg"].to(p.device),
                    "exp_avg_sq": tensors[f"adam.{name}.exp_avg_sq"].to(p.device),
                }
    torch.set_rng_state(tensors["rng.torch"])
    gen.set_state(tensors["rng.data"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    return info


# ---- main -----------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4800, help="optimizer steps in all (default 4800)")
    p.add_argument("--batch-size", type=int, default=96, help="sentences per step (default 96)")
    p.add_argument("--warmup", type=int, default=800, help="warm-up steps of the schedule (default 800)")
    p.add_argument("--lr-factor", type=float, default=1.0, help="factor in front of the schedule (default 1)")
    p.add_argument("--unk-rate", type=float, default=0.02, help="share of source tokens replaced by <unk>")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pool", type=int, default=TRAIN_POOL, help="training sentences (default %(default)s)")
    p.add_argument("--preset", choices=["seq2seq-tiny", "tiny"], default="seq2seq-tiny",
                   help="model size: the shipped one, or `tiny` for tests")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    p.add_argument("--run-dir", default="runs/seq2seq-tiny", help="training state for --resume")
    p.add_argument("--out", default=str(ASSET_DIR), help="where the final checkpoint goes")
    p.add_argument("--resume", action="store_true", help="continue from --run-dir")
    p.add_argument("--tokenizer", default=str(ASSET_DIR / "tokenizer.json"),
                   help="tokenizer to train with (default: the shipped one; trained afresh when missing)")
    p.add_argument("--rebuild-tokenizer", action="store_true",
                   help="train a new WordPiece tokenizer on the corpus instead of using --tokenizer")
    p.add_argument("--eval-every", type=int, default=500, help="greedy exact match on a dev set every N steps")
    p.add_argument("--save-every", type=int, default=250, help="save the training state every N steps")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    run_dir, out_dir = Path(args.run_dir), Path(args.out)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    sampler = SentenceSampler()
    tok_path = Path(args.tokenizer)
    if args.rebuild_tokenizer or not tok_path.is_file():
        tok = build_tokenizer(sampler.words)  # WordPiece training may break ties differently run to run
    else:
        tok = Tokenizer.from_file(str(tok_path))  # the shipped one: reproduces the shipped ids exactly
    vocab = {t: tok.token_to_id(t) for t in (BOS, EOS, UNK, *TASK_TOKENS.values())}
    train_texts = sampler.sentences(TRAIN_SEED + args.seed, args.pool)
    pool = [e.ids[:TRAIN_MAX_TOKENS] for e in tok.encode_batch(train_texts, add_special_tokens=False)]
    pool = [p for p in pool if p]
    exclude = {s.lower() for s in train_texts}
    dev_ids = [e.ids[:TRAIN_MAX_TOKENS] for e in
               tok.encode_batch(sampler.sentences(999, DEV_SIZE, exclude), add_special_tokens=False)]

    base = SEQ2SEQ_TINY if args.preset == "seq2seq-tiny" else PRESETS["tiny"].replace(dropout=0.1)
    config = base.replace(vocab_size=tok.get_vocab_size())
    model = Transformer(config).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    batches = Batches(pool, vocab, args.batch_size, args.unk_rate, gen)

    step, elapsed, history = 0, 0.0, []
    if args.resume:
        if not (run_dir / "state.json").is_file():
            print(f"error: nothing to resume in {run_dir}", file=sys.stderr)
            return 2
        info = load_state(run_dir, model, opt, gen)
        step, elapsed, history = info["step"], info["elapsed_s"], info["history"]
        if info["config"] != config.to_dict():
            print("error: the saved run has another model config", file=sys.stderr)
            return 2
    n_params = sum(p.numel() for p in model.parameters())
    print(f"seq2seq training: {n_params:,} parameters, vocab {config.vocab_size}, {len(pool):,} sentences, "
          f"device {device}, step {step}/{args.steps}", flush=True)

    def state_info() -> dict:
        return {"step": step, "elapsed_s": elapsed, "history": history, "config": config.to_dict(),
                "args": {k: v for k, v in vars(args).items() if k != "resume"}}

    model.train()
    bar = tqdm(total=args.steps, initial=step, disable=args.no_progress, dynamic_ncols=True, unit="step")
    t0 = time.perf_counter() - elapsed
    try:
        while step < args.steps:
            src, tin, tout = (t.to(device) for t in batches.next())
            lr = lr_at(step + 1, config.d_model, args.warmup, args.lr_factor)
            for g in opt.param_groups:
                g["lr"] = lr
            logits = model(src, tin).logits  # (b, n, V)
            loss = F.cross_entropy(logits.flatten(0, 1), tout.flatten(), ignore_index=0, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            real = tout != 0
            acc = ((logits.argmax(-1) == tout) & real).sum().item() / real.sum().item()
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{acc:.3f}", lr=f"{lr:.2e}")
            elapsed = time.perf_counter() - t0
            if step % args.eval_every == 0 or step == args.steps:
                dev = {t: evaluate_task(model, vocab, dev_ids, t, batch_size=DEV_SIZE, device=device).exact
                       for t in TASKS}
                history.append({"step": step, "loss": round(loss.item(), 4), "token_acc": round(acc, 4),
                                "dev_exact": dev, "elapsed_s": round(elapsed, 1)})
                bar.write(f"step {step}: loss {loss.item():.3f} token acc {acc:.3f} dev exact "
                          + " ".join(f"{t} {v:.1%}" for t, v in dev.items()) + f" ({elapsed:.0f}s)")
            if step % args.save_every == 0:
                save_state(run_dir, model, opt, gen, state_info())
    except KeyboardInterrupt:
        bar.close()
        save_state(run_dir, model, opt, gen, state_info())
        print(f"\nstopped at step {step}; state saved in {run_dir}. Continue with: python -m model.train --resume")
        return 130
    bar.close()
    save_state(run_dir, model, opt, gen, state_info())

    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    save_checkpoint(model.cpu(), out_dir / "model.safetensors",
                    {"name": "seq2seq-tiny", "step": step, "seed": args.seed})
    tok.save(str(out_dir / "tokenizer.json"))
    recipe = {k: getattr(args, k) for k in ("steps", "batch_size", "warmup", "lr_factor", "unk_rate", "seed", "pool")}
    meta = {"transformer": config.to_dict(), "tasks": list(TASKS), "max_text_tokens": MAX_TEXT_TOKENS,
            "alignment": ALIGNMENT,
            "training": {**recipe, "optimizer": "Adam(0.9, 0.98, 1e-9) + warm-up schedule", "dropout": config.dropout,
                         "label_smoothing": 0.1, "wall_time_s": round(elapsed, 1), "device": str(device),
                         "history": history,
                         "command": "python -m model.train"}}
    (out_dir / "config.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"done: {step} steps in {elapsed / 60:.1f} min; wrote {out_dir}/model.safetensors, config.json, "
          f"tokenizer.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
