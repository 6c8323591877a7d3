"""Train `seq2seq-tiny` as the paper trains (Vaswani et al. 2017, section 5): teacher forcing,
Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule

    lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

dropout 0.1 and label smoothing 0.1. All three tasks train in one model; the task token comes
first in the source (see `model.data`).

    python -m training.train              # seed 0: writes runs/seq2seq-tiny/checkpoint/
    python -m training.train --resume     # continue after a stop (Ctrl-C) from runs/seq2seq-tiny/

Two choices make a 17,000-entry vocabulary trainable in minutes on a CPU (measured, see README):

* **Fixed random embeddings.** The one matrix that the paper ties (source embedding, target
  embedding, pre-softmax linear) is drawn once at random (seed 0, unit-length rows, stored as
  float16) and not trained. With 128 dimensions, 17,000 random directions are nearly orthogonal,
  so "emit the token whose embedding the cross-attention brought over" is one rule for every
  entry: the network learns where to look, not a copy of each token, and copies tokens it
  never saw in training. The output bias is fixed at 0.
* **Sampled softmax while training.** The answer is always one of the source tokens, so the
  training loss is the softmax over the batch's own tokens plus `--negatives` random entries
  (the paper's cross-entropy with label smoothing, over those candidates). Inference — the app,
  `greedy_decode`, the evaluation — uses the real softmax over the whole vocabulary.

Batches hold one length each (no padding): a length from 1 to MAX_TEXT_TOKENS (the longest
grows from 8 to the limit over the first `--curriculum` steps), as many sequences as fit in
`--tokens` source tokens; half sentence-like windows, half ids drawn uniformly from the whole
vocabulary (`training.data`). Two more choices, measured: the fixed token vectors leave the
first 48 dimensions to position (`--position-dims`), and the decoder's cross-attention value
path starts as the identity.

The training state (weights, Adam moments and step counts, RNG states) is saved every
--save-every steps and on Ctrl-C to runs/seq2seq-tiny/state.safetensors plus state.json
(nothing pickled), so a resumed run continues exactly where the stopped one was. Uses CUDA
when present (--device). The final checkpoint (model.safetensors, tokenizer.json, config.json
and their sha256.json) goes to --out; to ship it, copy the three files to
assets/seq2seq-tiny/ and pin the printed sha256 digests in model/weights.py.

Notation: b batch, m source length, n target length, V vocabulary, c candidates, d d_model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from tqdm import tqdm

from model.config import PRESETS
from model.data import ASSET_DIR, BOS, EOS, MAX_TEXT_TOKENS, SPECIAL_TOKENS, TASK_TOKENS, TASKS, UNK, permutation
from model.device import resolve_device
from model.transformer import Transformer

from .data import (
    HELDOUT_SEED,
    KO_SHARE,
    TRAIN_SEED,
    KoreanSentenceMaker,
    SentenceMaker,
    build_tokenizer,
    read_wordfreq,
    read_wordfreq_ko,
    text_ids,
    vocabulary,
)
from .evaluate import evaluate_task
from .schedule import ADAM_BETAS, ADAM_EPS, rate

DEV_SIZE = 48  # sentence-like inputs per task for the progress checks (a seed of their own)
ALIGNMENT = {"layer": -1, "head": "mean"}  # where evaluate.py reads the alignment (written to config.json)
TIED_ALIASES = ("tgt_embed.token.weight", "generator.weight")
CHECKPOINT_FILES = ("model.safetensors", "tokenizer.json", "config.json")


def lr_at(step: int, d_model: int, warmup: int, factor: float, total: int = 0, cooldown: int = 0) -> float:
    """The paper's schedule; step counts from 1. With `cooldown`, the last `cooldown` of `total` steps also fall
    linearly to 5 % of it (a short anneal at the end: fewer noisy updates in the final weights)."""
    step = max(step, 1)
    lr = rate(step, d_model, warmup, factor)
    if cooldown and total and step > total - cooldown:
        lr *= max(0.05, (total - step) / cooldown)
    return lr


def fixed_embeddings(vocab_size: int, d_model: int, seed: int, position_dims: int = 0) -> torch.Tensor:
    """(V, d) random unit-length rows, rounded to float16 (so the shipped float16 copy is exact).

    The first `position_dims` columns are 0: there the sinusoids of positions 0..63 turn fastest, so queries
    and keys can read position without the token's noise (the rest of PE barely changes over 64 positions,
    and the tokens live there). Measured on lengths 1-16: 0.88 vs 0.57 token accuracy after 600 steps."""
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(vocab_size, d_model, generator=g, dtype=torch.float64)
    e[:, :position_dims] = 0
    e = e / e.norm(dim=1, keepdim=True)
    return e.to(torch.float16).to(torch.float32)


class Batches:
    """One-length batches of (src, tgt_in, tgt_out), deterministic from a torch.Generator.

    Length l: uniform in 1..max_len (a curriculum may cap it early on); rows: tokens // (l + 2).
    A batch is sentence-like (random windows of the token stream), uniform over `text_ids`, or repetitive (each
    row drawn from 1-4 random entries), so that the model must find its place by position, not by content:
    identical tokens ("1 0 0 0", "very, very", ". . .") look the same to it."""

    def __init__(self, stream: torch.Tensor, text_ids: torch.Tensor, ids: dict[str, int], tokens: int,
                 max_len: int, uniform_share: float, unk_rate: float, gen: torch.Generator,
                 repeat_share: float = 0.0):
        self.stream, self.text_ids, self.ids = stream, text_ids, ids
        self.tokens, self.max_len, self.uniform_share, self.unk_rate, self.gen = (
            tokens, max_len, uniform_share, unk_rate, gen)
        self.repeat_share = repeat_share
        self.perms = {n: torch.tensor([permutation(t, n) for t in TASKS]) for n in range(1, max_len + 1)}  # (3, n)
        self.task_ids = torch.tensor([ids[TASK_TOKENS[t]] for t in TASKS])

    def _rand(self, high: int, size) -> torch.Tensor:
        return torch.randint(0, high, size, generator=self.gen)

    def next(self, cap: int | None = None):
        top = min(cap or self.max_len, self.max_len)
        n = 1 + int(self._rand(top, (1,)))
        b = max(1, self.tokens // (n + 2))
        r = float(torch.rand(1, generator=self.gen))
        if r < self.repeat_share:  # each row from an alphabet of 1-4 entries: runs and repeats ("1 0 0 0")
            alphabet = self.text_ids[self._rand(len(self.text_ids), (b, 4))]  # (b, 4)
            k = 1 + self._rand(4, (b, 1))  # (b, 1) alphabet size per row
            x = alphabet.gather(1, (torch.rand(b, n, generator=self.gen) * k).long())  # (b, n)
        elif r < self.repeat_share + self.uniform_share:
            x = self.text_ids[self._rand(len(self.text_ids), (b, n))]  # (b, n)
        else:
            starts = self._rand(len(self.stream) - n, (b, 1))
            x = self.stream[starts + torch.arange(n)]  # (b, n)
        flips = torch.rand(b, n, generator=self.gen) < self.unk_rate  # teach the model to carry <unk>
        x = x.masked_fill(flips, self.ids[UNK])
        task = self._rand(len(TASKS), (b,))
        y = x.gather(1, self.perms[n][task])  # (b, n)
        col = torch.full((b, 1), 0, dtype=torch.long)
        src = torch.cat([self.task_ids[task][:, None], x, col + self.ids[EOS]], 1)  # (b, n + 2)
        tin = torch.cat([col + self.ids[BOS], y], 1)  # (b, n + 1)
        tout = torch.cat([y, col + self.ids[EOS]], 1)  # (b, n + 1)
        return src, tin, tout


def identity_value_path(model: Transformer) -> None:
    """Start the decoder's cross-attention value path as the identity (W_V = W_O = I), so the fixed token
    vectors the encoder carries reach the output unrotated from step 1: the model then learns where to look
    first (measured: 2x the token accuracy after 200 steps) instead of first undoing a random rotation."""
    d = model.config.d_model
    with torch.no_grad():
        for layer in model.decoder.layers:
            layer.cross_attn.in_proj.weight[2 * d :].copy_(torch.eye(d))
            layer.cross_attn.out_proj.weight.copy_(torch.eye(d))


def default_threads() -> int:
    """All cores when they are idle; 1 when other processes keep them busy (load average >= cores): then
    OpenMP threads wait on each other (measured on the 2-core machine under load: 7.4 s per step with 2
    threads, 0.5 s with 1)."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return 1 if busy >= cores else cores


def sampled_loss(model: Transformer, src, tin, tout, n_negatives: int, gen: torch.Generator,
                 label_smoothing: float = 0.1):
    """Cross-entropy over the batch's target tokens plus random negatives (tied, fixed output matrix)."""
    dec = model.decode(tin, model.encode(src))
    h = dec.hidden  # (b, n, d)
    V = model.config.vocab_size
    neg = torch.randint(0, V, (n_negatives,), generator=gen).to(tout.device)
    cand = torch.unique(torch.cat([tout.flatten(), neg]))  # (c,) sorted
    logits = h @ model.generator.weight[cand].T + model.generator.bias[cand]  # (b, n, c)
    target = torch.searchsorted(cand, tout)  # (b, n) index of each target among the candidates
    real = tout != model.config.pad_id
    loss = F.cross_entropy(logits[real], target[real], label_smoothing=label_smoothing)
    acc = (logits.argmax(-1) == target)[real].float().mean()
    return loss, acc


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


def save_checkpoint(model: Transformer, path: Path, metadata: dict) -> None:
    """Weights as safetensors, float16 (half the bytes; `model.weights.load_checkpoint` loads them strictly into
    float32, filling the tied names from the one stored). The fixed embedding is float16 already; the trained
    weights are rounded, and every figure in the README is measured on the stored weights."""
    state = model.state_dict()
    tensors = {k: v.detach().cpu().to(torch.float16).contiguous() for k, v in state.items()
               if k not in TIED_ALIASES}
    save_file(tensors, str(path), metadata={k: json.dumps(v) for k, v in metadata.items()})


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    h.update(path.read_bytes())
    return h.hexdigest()


# ---- main -----------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4800, help="optimizer steps in all (default 4800)")
    p.add_argument("--tokens", type=int, default=1024, help="source tokens per batch (default 1024)")
    p.add_argument("--warmup", type=int, default=400, help="warm-up steps of the schedule (default 400)")
    p.add_argument("--lr-factor", type=float, default=1.0, help="factor in front of the schedule (default 1)")
    p.add_argument("--cooldown", type=int, default=1000,
                   help="the last N steps anneal the rate linearly to 5%% of the schedule (0: off; default 1000)")
    p.add_argument("--clip", type=float, default=1.0, help="clip the gradient norm at this (0: off; default 1)")
    p.add_argument("--negatives", type=int, default=512, help="random negatives per batch (default 512)")
    p.add_argument("--uniform-share", type=float, default=0.45,
                   help="share of batches drawn uniformly from the whole vocabulary (default 0.45)")
    p.add_argument("--repeat-share", type=float, default=0.05,
                   help="share of batches whose rows repeat 1-4 random entries (default 0.05)")
    p.add_argument("--unk-rate", type=float, default=0.02, help="share of source tokens replaced by <unk>")
    p.add_argument("--curriculum", type=int, default=2000,
                   help="steps over which the longest length grows from 8 to the limit (0: off; default 2000)")
    p.add_argument("--position-dims", type=int, default=48,
                   help="leading dimensions the fixed token vectors leave to position (default 48)")
    p.add_argument("--train-embeddings", action="store_true",
                   help="train the tied embedding matrix too (default: fixed random, see above)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preset", choices=["seq2seq-tiny", "tiny"], default="seq2seq-tiny",
                   help="model size (tiny: a few thousand parameters, for tests)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None)
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads (default: every core, or 1 when the cores are already busy)")
    p.add_argument("--run-dir", default="runs/seq2seq-tiny", help="training state for --resume")
    p.add_argument("--out", default=None, help="where the final checkpoint goes (default: RUN_DIR/checkpoint)")
    p.add_argument("--resume", action="store_true", help="continue from --run-dir")
    p.add_argument("--tokenizer", default=str(ASSET_DIR / "tokenizer.json"),
                   help="tokenizer to train with (default: the shipped one; built from wordfreq when missing)")
    p.add_argument("--rebuild-tokenizer", action="store_true",
                   help="build the vocabulary from wordfreq again (tokenizers' WordPiece trainer may break ties "
                        "at its budget differently from run to run: +-1 piece) instead of using --tokenizer")
    p.add_argument("--stream", type=int, default=30_000, help="English sentence-like sentences in the training stream")
    p.add_argument("--korean-share", type=float, default=KO_SHARE,
                   help=f"share of the stream that is Korean sentence-like text (default {KO_SHARE})")
    p.add_argument("--eval-every", type=int, default=1000, help="greedy exact match on a dev set every N steps")
    p.add_argument("--save-every", type=int, default=250, help="save the training state every N steps")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads or default_threads())
    device = resolve_device(args.device)
    run_dir = Path(args.run_dir)
    out_dir = Path(args.out) if args.out else run_dir / "checkpoint"
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    words, ko_words = read_wordfreq(), read_wordfreq_ko()
    if args.rebuild_tokenizer or not Path(args.tokenizer).is_file():
        tok = build_tokenizer(vocabulary(words, korean=ko_words))
    else:
        tok = Tokenizer.from_file(args.tokenizer)  # the shipped one: reproduces the shipped ids exactly
    ids = {t: tok.token_to_id(t) for t in (BOS, EOS, UNK, *TASK_TOKENS.values())}
    maker, ko_maker = SentenceMaker(words), KoreanSentenceMaker(ko_words)
    n_ko = round(args.stream * args.korean_share / (1 - args.korean_share))
    sentences = maker.sentences(TRAIN_SEED + args.seed, args.stream) + ko_maker.sentences(TRAIN_SEED + args.seed + 1, n_ko)
    random.Random(TRAIN_SEED + args.seed).shuffle(sentences)  # English and Korean windows side by side
    stream = torch.tensor([i for x in text_ids(tok, sentences) for i in x])
    pool = torch.tensor([ids[UNK], *range(len(SPECIAL_TOKENS), tok.get_vocab_size())])  # every text entry
    dev_ids = text_ids(tok, maker.sentences(HELDOUT_SEED + 1, DEV_SIZE // 2, max_words=40)
                       + ko_maker.sentences(HELDOUT_SEED + 2, DEV_SIZE // 2, max_words=25))

    base = PRESETS[args.preset]
    base = base if args.preset == "seq2seq-tiny" else base.replace(dropout=0.1, max_positions=MAX_TEXT_TOKENS + 4)
    config = base.replace(vocab_size=tok.get_vocab_size())
    model = Transformer(config)
    if not args.train_embeddings:
        with torch.no_grad():
            model.src_embed.token.weight.copy_(fixed_embeddings(config.vocab_size, config.d_model, args.seed,
                                                                min(args.position_dims, config.d_model // 2)))
            model.generator.bias.zero_()
        model.src_embed.token.weight.requires_grad_(False)
        model.generator.bias.requires_grad_(False)
        identity_value_path(model)
    model.to(device)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.0, betas=ADAM_BETAS, eps=ADAM_EPS)
    max_len = min(MAX_TEXT_TOKENS, config.max_positions - 3)
    batches = Batches(stream, pool, ids, args.tokens, max_len, args.uniform_share, args.unk_rate, gen,
                      args.repeat_share)

    step, elapsed, history = 0, 0.0, []
    if args.resume:
        if not (run_dir / "state.json").is_file():
            print(f"error: nothing to resume in {run_dir}", file=sys.stderr)
            return 2
        info = load_state(run_dir, model, opt, gen)
        step, elapsed, history = info["step"], info["elapsed_s"], info["history"]
        if info["config"] != json.loads(json.dumps(config.to_dict())):  # as stored: tuples read back as lists
            print("error: the saved run has another model config", file=sys.stderr)
            return 2
    n_params = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"seq2seq training: {n_params:,} parameters ({n_train:,} trained), vocab {config.vocab_size}, "
          f"lengths 1-{max_len}, device {device}, {torch.get_num_threads()} threads, step {step}/{args.steps}",
          flush=True)

    def state_info() -> dict:
        return {"step": step, "elapsed_s": elapsed, "history": history, "config": config.to_dict(),
                "args": {k: v for k, v in vars(args).items() if k != "resume"}}

    def cap_at(s: int) -> int | None:
        if args.curriculum <= 0:
            return None
        return int(8 + (max_len - 8) * min(1.0, s / args.curriculum))

    model.train()
    bar = tqdm(total=args.steps, initial=step, disable=args.no_progress, dynamic_ncols=True, unit="step")
    t0 = time.perf_counter() - elapsed
    try:
        while step < args.steps:
            src, tin, tout = (t.to(device) for t in batches.next(cap_at(step)))
            lr = lr_at(step + 1, config.d_model, args.warmup, args.lr_factor, args.steps, args.cooldown)
            for g in opt.param_groups:
                g["lr"] = lr
            if args.train_embeddings:
                logits = model(src, tin).logits  # (b, n, V)
                loss = F.cross_entropy(logits.flatten(0, 1), tout.flatten(), label_smoothing=0.1)
                acc = (logits.argmax(-1) == tout).float().mean()
            else:
                loss, acc = sampled_loss(model, src, tin, tout, args.negatives, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if args.clip:
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], args.clip)
            opt.step()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{acc.item():.3f}", lr=f"{lr:.2e}", len=src.shape[1] - 2)
            elapsed = time.perf_counter() - t0
            if step % args.eval_every == 0 or step == args.steps:
                dev = {t: evaluate_task(model, ids, dev_ids, t, batch_size=DEV_SIZE, device=device).exact
                       for t in TASKS}
                history.append({"step": step, "loss": round(loss.item(), 4), "token_acc": round(acc.item(), 4),
                                "dev_exact": dev, "elapsed_s": round(elapsed, 1)})
                bar.write(f"step {step}: loss {loss.item():.3f} token acc {acc.item():.3f} dev exact "
                          + " ".join(f"{t} {v:.1%}" for t, v in dev.items()) + f" ({elapsed:.0f}s)")
            if step % args.save_every == 0:
                save_state(run_dir, model, opt, gen, state_info())
    except KeyboardInterrupt:
        bar.close()
        save_state(run_dir, model, opt, gen, state_info())
        print(f"\nstopped at step {step}; state saved in {run_dir}. Continue with: "
              "python -m training.train --resume")
        return 130
    bar.close()
    save_state(run_dir, model, opt, gen, state_info())

    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    save_checkpoint(model.cpu(), out_dir / "model.safetensors", {"name": "seq2seq-tiny", "step": step,
                                                                 "seed": args.seed})
    tok.save(str(out_dir / "tokenizer.json"))
    recipe = {k: getattr(args, k) for k in ("steps", "tokens", "warmup", "lr_factor", "cooldown", "clip", "negatives", "uniform_share",
                                            "repeat_share", "unk_rate", "curriculum", "position_dims", "seed", "stream",
                                            "korean_share", "train_embeddings")}
    meta = {"transformer": config.to_dict(), "tasks": list(TASKS), "max_text_tokens": max_len,
            "alignment": ALIGNMENT,
            "vocabulary": "wordfreq 3.1.1 English and Korean word lists (data CC BY-SA 4.0), see training/data.py",
            "training": {**recipe, "optimizer": "Adam(0.9, 0.98, 1e-9) + warm-up schedule",
                         "dropout": config.dropout, "label_smoothing": 0.1,
                         "embeddings": "trained" if args.train_embeddings else "fixed random (seed), float16",
                         "loss": "full softmax" if args.train_embeddings else "sampled softmax (batch + negatives)",
                         "wall_time_s": round(elapsed, 1), "threads": torch.get_num_threads(),
                         "device": str(device), "history": history, "command": "python -m training.train"}}
    (out_dir / "config.json").write_text(json.dumps(meta, indent=1) + "\n")
    digests = {name: sha256_file(out_dir / name) for name in CHECKPOINT_FILES}
    (out_dir / "sha256.json").write_text(json.dumps(digests, indent=1) + "\n")
    print(f"done: {step} steps in {elapsed / 60:.1f} min; wrote {out_dir}/ "
          f"({', '.join(CHECKPOINT_FILES)}, sha256.json)")
    print("sha256: " + json.dumps(digests))
    print(f"check it: python -m training.evaluate --checkpoint {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
