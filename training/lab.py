"""The Training page's lab (issue 36): a small encoder-decoder of the paper's shape trained on one of seq2seq-tiny's
tasks (copy / reverse / swap, model.data) in well under a minute on one CPU core, recorded as snapshots the page can
scrub. The recipe is the paper's (Vaswani et al. 2017, section 5): teacher forcing, Adam (beta1 0.9, beta2 0.98,
epsilon 1e-9) with the warm-up schedule (training/schedule.py), dropout 0.1 and label smoothing 0.1.

    python -m training lab --task reverse --steps 400 --seed 3 --json OUT.json      (training/__main__.py)

The model is the project's one Transformer (model/transformer.py) built from LAB_MODEL: d_model 64, 4 heads,
1 + 1 layers, d_ff 256, post-LN, sinusoidal positions, tied embeddings, over a 64-entry word vocabulary (VOCAB: the
seven specials of model.data, then everyday English and Korean words). One layer each way and 64 sequences a step:
measured against 2 + 2 layers (64 or 128 a step) and 1 + 1 with 96 or 128, it meets the targets for every seed tried
in the least CPU time, which is what the 180 s limit on a shared 2-core machine is about (docs/benchmarks.md).
A source is [<task>, x_1 .. x_n, <eos>], the decoder reads [<bos>, y_1 .. y_n] and learns [y_1 .. y_n, <eos>]
(teacher forcing); x is n words drawn uniformly (3 <= n <= 8), y the task's permutation of x.

Definitions the command line's JSON and the page share:
- lr at snapshot `step` = schedule.rate(step) (step 0 taken as step 1): the rate of the update that made the weights.
- loss at snapshot `step` = the label-smoothed loss of a fresh training batch (dropout on) on the weights after
  `step` updates: the number the optimizer sees. Step 0 is the untrained model.
- label smoothing = torch's convention (F.cross_entropy's label_smoothing): the target is (1 - eps) on the right
  token plus eps / V on every one of the V entries, the right one included, so
  loss = (1 - eps) * (-log p_y) + eps * mean_k(-log p_k). `smoothed_cross_entropy` writes that formula out.
- alignment = the share of target text positions (decoder rows that emit y_1 .. y_n) whose strongest
  cross-attention, averaged over the heads of the LAST decoder layer, falls on the source position the task says
  (copy: the diagonal, reverse: the anti-diagonal), read teacher-forced in eval mode on EVAL_ROWS fixed sequences of
  distinct words (EVAL_SEED: the same for every run, so runs compare). seq2seq-tiny's evaluation reads it the same way.

Deterministic: torch.manual_seed(seed) draws the weights, a torch.Generator seeded with `seed` the batches; the
global RNG's state (dropout) is kept per run and swapped in under RNG_LOCK for each step, so a run in a thread of the
app is not disturbed by another computation that seeds the global RNG (the page's dropout view). Same seed and
thread count: the same run, number for number.

Notation: b batch, n target length (+1), m source length, V vocabulary, L layers, h heads.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from model.config import TransformerConfig
from model.data import BOS, EOS, PAD, SPECIAL_TOKENS, TASK_TOKENS, TASKS, permutation
from model.transformer import Transformer

from .schedule import ADAM_BETAS, ADAM_EPS, rate

# the vocabulary: the specials of model.data (ids 0..6), then words; "졸리다" and "잠이" are the label-smoothing
# section's two right answers for "sleepy" (the lecture notes' example)
WORDS = (
    "i you we they she he am is are the a cat dog bird fish book tree student teacher sat saw ran ate read likes "
    "on in under big small red blue happy sleepy tired today very "
    "나는 너는 우리는 고양이가 개가 새가 책을 학교에 간다 본다 읽는다 졸리다 잠이 "
    "온다 피곤하다 행복하다 오늘 지금 아주 학생이다"
).split()
VOCAB: tuple[str, ...] = (*SPECIAL_TOKENS, *WORDS)
IDS: dict[str, int] = {w: i for i, w in enumerate(VOCAB)}
FIRST_WORD = len(SPECIAL_TOKENS)  # the first id that is a word
MIN_LEN, MAX_LEN = 3, 8  # words per training sequence
FIXED_SENTENCE = "the small cat saw a big dog today"  # the page's sentence (distinct words, MAX_LEN of them)

LAB_MODEL = TransformerConfig(
    d_model=64,
    n_heads=4,  # d_k 16
    n_encoder_layers=1,
    n_decoder_layers=1,
    d_ff=256,  # 4 x d_model, as the paper
    dropout=0.1,
    vocab_size=len(VOCAB),
    max_positions=MAX_LEN + 4,  # source: task + MAX_LEN words + <eos>
)
EVAL_SEED, EVAL_ROWS = 12345, 128
RNG_LOCK = threading.Lock()  # around every use of torch's global RNG by the lab (see the module docstring)


@dataclass(frozen=True)
class LabSettings:
    task: str = "reverse"  # one of model.data.TASKS
    steps: int = 400  # optimizer updates
    seed: int = 0
    warmup: int = 100  # the schedule's warm-up steps
    lr_factor: float = 1.0  # the factor in front of the schedule
    label_smoothing: float = 0.1  # eps
    batch_size: int = 64  # sequences per update
    snapshots: int = 40  # about this many snapshots after step 0 (every steps // snapshots steps, and the last)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; known tasks: {', '.join(TASKS)}")
        if self.steps < 1 or self.batch_size < 1 or self.warmup < 1:
            raise ValueError("steps, batch_size and warmup must be at least 1")

    @property
    def every(self) -> int:
        return max(1, self.steps // max(self.snapshots, 1))

    def lr(self, step: int) -> float:
        return rate(step, LAB_MODEL.d_model, self.warmup, self.lr_factor)

    def snapshot_steps(self) -> list[int]:
        return sorted({*range(0, self.steps + 1, self.every), self.steps})


# ---- words <-> ids -------------------------------------------------------------------------------------------------
class UnknownWords(ValueError):
    """Words of a sentence that the lab's vocabulary lacks (`words`), or a sentence of the wrong length."""

    def __init__(self, words: list[str], n_words: int = 0):
        super().__init__(f"not in the lab's vocabulary: {', '.join(words)}" if words
                         else f"{n_words} words; the lab reads {MIN_LEN}-{MAX_LEN}")
        self.words, self.n_words = words, n_words


def words_of(text: str) -> list[str]:
    """Lower-cased words, split on spaces, with the punctuation at their ends dropped."""
    return [w for w in (re.sub(r"^[\W_]+|[\W_]+$", "", p) for p in text.lower().split()) if w]


def encode(text: str) -> list[int]:
    """A sentence's word ids; UnknownWords when a word is not in VOCAB or the length is outside 1..MAX_LEN."""
    words = words_of(text)
    unknown = list(dict.fromkeys(w for w in words if w not in IDS or IDS[w] < FIRST_WORD))
    if unknown:
        raise UnknownWords(unknown)
    if not 1 <= len(words) <= MAX_LEN:
        raise UnknownWords([], len(words))
    return [IDS[w] for w in words]


def sequences(task: str, x: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(source, decoder input, labels) of one sentence: [<task>, x, <eos>], [<bos>, y], [y, <eos>]."""
    y = [x[j] for j in permutation(task, len(x))]
    return [IDS[TASK_TOKENS[task]], *x, IDS[EOS]], [IDS[BOS], *y], [*y, IDS[EOS]]


# ---- batches ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Batch:
    src: torch.Tensor  # (b, m) [<task>, x, <eos>, <pad>..]
    tgt_in: torch.Tensor  # (b, n) [<bos>, y, <pad>..]
    tgt_out: torch.Tensor  # (b, n) [y, <eos>, <pad>..]
    lengths: torch.Tensor  # (b,) words per row
    perm: torch.Tensor  # (b, n - 1) the source word each target word comes from (0-based over x)


def make_batch(task: str, rows: int, gen: torch.Generator, *, distinct: bool = False) -> Batch:
    """`rows` sequences of MIN_LEN..MAX_LEN words drawn uniformly (distinct words within a row when asked)."""
    lengths = torch.randint(MIN_LEN, MAX_LEN + 1, (rows,), generator=gen)  # (b,)
    n_words = len(VOCAB) - FIRST_WORD
    if distinct:
        x = torch.rand(rows, n_words, generator=gen).argsort(-1)[:, :MAX_LEN] + FIRST_WORD  # (b, MAX_LEN)
    else:
        x = torch.randint(FIRST_WORD, len(VOCAB), (rows, MAX_LEN), generator=gen)  # (b, MAX_LEN)
    top = int(lengths.max())
    x = x[:, :top]
    perm = torch.zeros(rows, top, dtype=torch.long)
    for n in lengths.unique().tolist():
        perm[lengths == n, :n] = torch.tensor(permutation(task, n))
    real = torch.arange(top)[None] < lengths[:, None]  # (b, top)
    x = x.masked_fill(~real, IDS[PAD])
    y = x.gather(1, perm).masked_fill(~real, IDS[PAD])  # (b, top)
    pad_col = torch.full((rows, 1), IDS[PAD], dtype=torch.long)
    rows_idx = torch.arange(rows)
    src = torch.cat([torch.full((rows, 1), IDS[TASK_TOKENS[task]]), x, pad_col], 1)  # (b, top + 2)
    src[rows_idx, lengths + 1] = IDS[EOS]
    tgt_in = torch.cat([torch.full((rows, 1), IDS[BOS]), y], 1)  # (b, top + 1)
    tgt_out = torch.cat([y, pad_col], 1)  # (b, top + 1)
    tgt_out[rows_idx, lengths] = IDS[EOS]
    return Batch(src, tgt_in, tgt_out, lengths, perm)


def eval_batch(task: str) -> Batch:
    """The fixed evaluation sequences of the alignment (distinct words, EVAL_SEED: the same in every run)."""
    return make_batch(task, EVAL_ROWS, torch.Generator().manual_seed(EVAL_SEED), distinct=True)


# ---- the loss and the alignment --------------------------------------------------------------------------------
def smoothed_cross_entropy(logits: torch.Tensor, target: torch.Tensor, eps: float) -> torch.Tensor:
    """logits (N, V), target (N,) -> the mean label-smoothed cross-entropy, torch's convention:
    (1 - eps) * (-log p_target) + eps * mean over all V entries of (-log p_k). Equals
    F.cross_entropy(logits, target, label_smoothing=eps) (tests/test_training_lab.py)."""
    logp = F.log_softmax(logits.float(), dim=-1)  # (N, V)
    nll = -logp.gather(1, target[:, None]).squeeze(1)  # (N,)
    spread = -logp.mean(dim=-1)  # (N,)
    return ((1.0 - eps) * nll + eps * spread).mean()


def batch_loss(model: Transformer, batch: Batch, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, logits (b, n, V)) of one teacher-forced batch; padded label positions are left out."""
    logits = model(batch.src, batch.tgt_in).logits  # (b, n, V)
    real = batch.tgt_out != IDS[PAD]
    return smoothed_cross_entropy(logits[real], batch.tgt_out[real], eps), logits


@torch.no_grad()
def alignment(model: Transformer, batch: Batch) -> tuple[float, float]:
    """(alignment, token accuracy) on a batch, teacher-forced, in eval mode: alignment as the module docstring
    defines it (the last decoder layer's heads averaged); accuracy the share of labels (<eos> included) that are
    the argmax."""
    was = model.training
    model.eval()
    out = model(batch.src, batch.tgt_in)
    model.train(was)
    cross = out.decoder.cross_attention[-1].mean(1)  # (b, n, m)
    want = batch.perm + 1  # (b, n - 1): source position of each target word (<task> is position 0)
    words = torch.arange(want.shape[1])[None] < batch.lengths[:, None]  # (b, n - 1)
    hits = (cross[:, :-1].argmax(-1) == want) & words
    real = batch.tgt_out != IDS[PAD]
    right = (out.logits.argmax(-1) == batch.tgt_out) & real
    return float(hits.sum() / words.sum()), float(right.sum() / real.sum())


# ---- snapshots -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Snapshot:
    step: int
    loss: float  # label-smoothed training loss at this step (module docstring)
    lr: float  # schedule.rate(step)
    alignment: float
    accuracy: float  # teacher-forced token accuracy on the evaluation sequences
    cross: np.ndarray = field(repr=False)  # (L, h, n, m) the fixed sentence's cross-attention, teacher-forced
    encoder: np.ndarray = field(repr=False)  # (L, h, m, m) its encoder self-attention
    greedy: tuple[str, ...] = ()  # greedy decoding of the fixed sentence, <eos> and after left out

    def summary(self) -> dict:
        return {"step": self.step, "loss": round(self.loss, 6), "lr": self.lr, "alignment": round(self.alignment, 6),
                "accuracy": round(self.accuracy, 6)}


@torch.no_grad()
def probe(model: Transformer, task: str, x: list[int]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The fixed sentence through the model in eval mode: (cross (L, h, n, m), encoder (L, h, m, m), greedy words)."""
    was = model.training
    model.eval()
    src, tin, _ = sequences(task, x)
    src_t, tin_t = torch.tensor([src]), torch.tensor([tin])
    out = model(src_t, tin_t)
    cross = torch.stack(out.decoder.cross_attention)[:, 0].numpy()  # (L, h, n, m)
    enc = torch.stack(out.encoder.self_attention)[:, 0].numpy()  # (L, h, m, m)
    ids = model.greedy_decode(src_t, IDS[BOS], IDS[EOS], len(x) + 2)[0, 1:].tolist()
    model.train(was)
    words = []
    for i in ids:
        if i in (IDS[EOS], IDS[PAD]):
            break
        words.append(VOCAB[i])
    return cross, enc, tuple(words)


# ---- the run -----------------------------------------------------------------------------------------------------
@dataclass
class LabRun:
    settings: LabSettings
    snapshots: list[Snapshot] = field(default_factory=list)
    check: dict | None = None  # one real batch's logits and targets, and the loss the lab computed on them
    state: dict[str, torch.Tensor] | None = field(default=None, repr=False)  # the final weights
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stopped: bool = False  # stopped early (a stop request or the time limit)

    def to_json(self) -> dict:
        s = self.settings
        return {"task": s.task, "seed": s.seed, "steps": s.steps, "d_model": LAB_MODEL.d_model, "warmup": s.warmup,
                "lr_factor": s.lr_factor, "label_smoothing": s.label_smoothing, "batch_size": s.batch_size,
                "alignment_definition": "mean of the last decoder layer's heads; argmax over source positions",
                "snapshots": [sn.summary() for sn in self.snapshots], "label_smoothing_check": self.check,
                "wall_s": round(self.wall_s, 2), "cpu_s": round(self.cpu_s, 2), "stopped": self.stopped,
                "threads": torch.get_num_threads()}


def build_model(seed: int) -> tuple[Transformer, torch.Tensor]:
    """(LAB_MODEL with the paper's initialisation drawn from `seed`, the global RNG's state after it: the run's
    dropout stream), under RNG_LOCK."""
    with RNG_LOCK:
        torch.manual_seed(seed)
        model = Transformer(LAB_MODEL)
        return model, torch.get_rng_state()


def check_batch(model: Transformer, task: str, gen: torch.Generator, eps: float, rows: int = 4) -> dict:
    """One real batch (fresh rows from the run's stream, eval mode): its logits, targets and the lab's loss."""
    batch = make_batch(task, rows, gen)
    model.eval()
    with torch.no_grad():
        loss, logits = batch_loss(model, batch, eps)
    model.train()
    real = batch.tgt_out != IDS[PAD]
    return {"eps": eps, "logits": logits[real].tolist(), "targets": batch.tgt_out[real].tolist(),
            "loss": float(loss)}


def train(settings: LabSettings, *, on_snapshot: Callable[[Snapshot], None] | None = None,
          stop: Callable[[], bool] | None = None, time_limit_s: float | None = None) -> LabRun:
    """Train LAB_MODEL as the module docstring says; a Snapshot at every settings.snapshot_steps() step (passed to
    `on_snapshot` as it is made). `stop()` true, or `time_limit_s` passed, ends the run after the current step (the
    last snapshot is then that step's)."""
    s = settings
    wall0, cpu0 = time.perf_counter(), time.process_time()
    model, rng = build_model(s.seed)
    gen = torch.Generator().manual_seed(s.seed)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr(1), betas=ADAM_BETAS, eps=ADAM_EPS)
    ev = eval_batch(s.task)
    fixed = encode(FIXED_SENTENCE)
    wanted = set(s.snapshot_steps())
    run = LabRun(s)
    model.train()
    step = 0
    while True:
        batch = make_batch(s.task, s.batch_size, gen)
        with RNG_LOCK:
            torch.set_rng_state(rng)
            loss, _ = batch_loss(model, batch, s.label_smoothing)
            rng = torch.get_rng_state()
        late = (stop is not None and stop()) or (time_limit_s is not None
                                                  and time.perf_counter() - wall0 > time_limit_s)
        if step in wanted or step == s.steps or late:
            align, acc = alignment(model, ev)
            cross, enc, greedy = probe(model, s.task, fixed)
            snap = Snapshot(step, float(loss.detach()), s.lr(step), align, acc, cross, enc, greedy)
            run.snapshots.append(snap)
            if on_snapshot is not None:
                on_snapshot(snap)
        if step == s.steps or late:
            run.stopped = late and step < s.steps
            break
        step += 1
        for g in opt.param_groups:
            g["lr"] = s.lr(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    run.check = check_batch(model, s.task, gen, s.label_smoothing)
    run.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    run.wall_s, run.cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return run


def load_model(state: dict[str, torch.Tensor]) -> Transformer:
    """LAB_MODEL with these weights, in eval mode."""
    model = Transformer(LAB_MODEL)
    model.load_state_dict(state)
    return model.eval()
