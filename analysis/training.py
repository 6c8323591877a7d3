"""The Training page's numbers (issue 36), as frozen results: the paper's learning-rate schedule, label smoothing over
the lab model's real vocabulary, teacher forcing's shifted target and a training step's logits, dropout in training
against inference mode, and a lab run (the recorded one in assets/training-lab/, or a live one) as the page scrubs it.

The lab itself (its model, vocabulary, loss, training loop and files) is training/lab.py and training/lab_files.py:
this module only runs it for views. Every loss here is the lab's `smoothed_cross_entropy`, checked against torch's
F.cross_entropy(..., label_smoothing=eps) on the same logits (the `torch` column). No Streamlit, no plotly.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from model.blocks import Block
from model.data import permutation
from training import lab, schedule
from training.lab_files import read_model, read_record

from .frozen import freeze, ro

PAPER_D_MODEL, PAPER_WARMUP = 512, 4000  # the paper's base model (Vaswani et al. 2017, 5.3)
# what the page needs of the lab (training/lab.py), named here: the interface reads it through analysis/
TASKS, WORDS, MAX_LEN, FIXED_SENTENCE = lab.TASKS, lab.WORDS, lab.MAX_LEN, lab.FIXED_SENTENCE
UnknownWords, LabSettings = lab.UnknownWords, lab.LabSettings
LAB_D_MODEL, LAB_WARMUP, LAB_DROPOUT = lab.LAB_MODEL.d_model, lab.LabSettings().warmup, lab.LAB_MODEL.dropout
N_LAYERS, N_HEADS, LAB_D_FF = lab.LAB_MODEL.n_encoder_layers, lab.LAB_MODEL.n_heads, lab.LAB_MODEL.d_ff
TWO_ANSWERS = ("졸리다", "잠이")  # "sleepy": 졸리다 or 잠이 (온다), the lecture notes' example


# ---- the schedule -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    d_model: int
    warmup: int
    factor: float
    steps: np.ndarray  # (k,) int, from 1
    rate: np.ndarray  # (k,) schedule.rate at each step
    peak_rate: float  # at step = warmup


def schedule_curve(d_model: int, warmup: int, last: int, factor: float = 1.0, points: int = 600) -> Schedule:
    """schedule.rate on `points` steps from 1 to `last`, the peak (step = warmup) among them."""
    steps = np.unique(np.r_[np.linspace(1, last, points).round().astype(int), min(warmup, last)])
    rates = [schedule.rate(int(s), d_model, warmup, factor) for s in steps]
    return freeze(Schedule(d_model, warmup, factor, ro(steps, np.int64), ro(rates, np.float64),
                           schedule.peak(d_model, warmup, factor)))


# ---- a lab run as the page draws it ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RunView:
    task: str
    seed: int
    total_steps: int  # the run's planned updates
    steps: np.ndarray  # (S,) int: the snapshots' steps
    loss: np.ndarray  # (S,)
    lr: np.ndarray  # (S,)
    alignment: np.ndarray  # (S,)
    accuracy: np.ndarray  # (S,)
    cross: np.ndarray  # (S, L, h, n, m) the fixed sentence's cross-attention (teacher-forced)
    encoder: np.ndarray  # (S, L, h, m, m) its encoder self-attention
    greedy: tuple[tuple[str, ...], ...]  # (S,) greedy output at each snapshot
    source: tuple[str, ...]  # (m,) [<task>, x.., <eos>]
    decoder_input: tuple[str, ...]  # (n,) [<bos>, y..]
    target: tuple[str, ...]  # (n - 1,) y: the right output
    right: tuple[int, ...]  # (n - 1,) the source position each target word comes from (the task's alignment)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stopped: bool = False

    def index(self, step: int) -> int:
        """The snapshot index of `step` (ValueError when no snapshot has it)."""
        hits = np.nonzero(self.steps == step)[0]
        if not len(hits):
            raise ValueError(f"no snapshot at step {step}")
        return int(hits[0])


def lab_words(text: str) -> list[int]:
    """The lab's word ids of a sentence (UnknownWords: a word outside its vocabulary, or a length outside
    1..MAX_LEN)."""
    return lab.encode(text)


def _tokens(task: str, sentence: str) -> tuple:
    """(source, decoder input, target, right source positions) of a sentence, as tokens."""
    x = lab_words(sentence)
    src, tin, tout = lab.sequences(task, x)
    return (tuple(lab.VOCAB[i] for i in src), tuple(lab.VOCAB[i] for i in tin),
            tuple(lab.VOCAB[i] for i in tout[:-1]), tuple(1 + j for j in permutation(task, len(x))))


def recorded_run(task: str) -> RunView:
    """The run shipped in assets/training-lab/ for `task` (training/lab_files.py, sha256-checked)."""
    r = read_record(task)
    src, tin, target, right = _tokens(task, r.sentence)
    snaps = r.snapshots
    return freeze(RunView(task, r.seed, int(r.settings["steps"]), ro([s["step"] for s in snaps], np.int64),
                          ro([s["loss"] for s in snaps]), ro([s["lr"] for s in snaps], np.float64),
                          ro([s["alignment"] for s in snaps]), ro([s["accuracy"] for s in snaps]),
                          ro(r.cross), ro(r.encoder), tuple(tuple(g) for g in r.greedy), src, tin, target, right,
                          r.wall_s, r.cpu_s))


def run_view(settings: lab.LabSettings, snapshots: list[lab.Snapshot], *, wall_s: float = 0.0,
             stopped: bool = False) -> RunView:
    """A live run's snapshots so far as a RunView (the same figures draw it)."""
    src, tin, target, right = _tokens(settings.task, lab.FIXED_SENTENCE)
    return freeze(RunView(settings.task, settings.seed, settings.steps, ro([s.step for s in snapshots], np.int64),
                          ro([s.loss for s in snapshots]), ro([s.lr for s in snapshots], np.float64),
                          ro([s.alignment for s in snapshots]), ro([s.accuracy for s in snapshots]),
                          ro([s.cross for s in snapshots]), ro([s.encoder for s in snapshots]),
                          tuple(s.greedy for s in snapshots), src, tin, target, right, wall_s, 0.0, stopped))


def recorded_model(task: str) -> torch.nn.Module:
    """The recorded run's final weights (eval mode). Shared by the caller's cache: never switch its mode; a view
    that needs training mode works on a copy (`dropout_view`)."""
    return read_model(read_record(task))


# ---- label smoothing ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LossRow:
    name: str  # the prediction's key ("trained", "confident", "hedged", "on_first", "on_second", "split", "target")
    p_right: float  # its probability of the reference word
    onehot: float  # the loss against the one-hot target (eps = 0)
    smoothed: float  # against the smoothed target (eps)
    torch: float  # F.cross_entropy(logits, target, label_smoothing=eps): equals `smoothed`


@dataclass(frozen=True)
class Smoothing:
    eps: float
    vocab_size: int
    position: int  # the decoder position (0-based) of the fixed sentence
    word: str  # its right word (the label)
    labels: tuple[str, ...]  # (k,) the top-k entries by the trained model's probability (the label first)
    onehot: np.ndarray  # (k + 1,) the one-hot target over them, then the rest of the vocabulary pooled
    smoothed: np.ndarray  # (k + 1,) the smoothed target
    model: np.ndarray  # (k + 1,) the trained model's prediction
    rest: int  # entries pooled in the last bar
    rows: tuple[LossRow, ...]  # confident / hedged / the trained model, under both targets
    two: tuple[LossRow, ...]  # the two right answers: reference TWO_ANSWERS[0]
    two_other: tuple[float, ...]  # the same predictions' smoothed loss when the reference is TWO_ANSWERS[1]
    best_gap: float  # log(q_right / q_other) of the smoothed target: the logit gap the loss asks for (finite)


def _logits(p: np.ndarray) -> torch.Tensor:
    return torch.log(torch.as_tensor(p, dtype=torch.float64)).float()


def _spread(v: int, right: int, p_right: float, extra: dict[int, float] | None = None) -> np.ndarray:
    """A prediction over v entries: p_right on `right`, `extra` {id: p} on others, the rest shared equally."""
    p = np.zeros(v)
    p[right] = p_right
    for i, q in (extra or {}).items():
        p[i] = q
    others = [i for i in range(v) if i != right and i not in (extra or {})]
    p[others] = (1.0 - p.sum()) / len(others)
    return p


def loss_row(name: str, logits: torch.Tensor, target: int, eps: float) -> LossRow:
    """One prediction's losses: the lab's formula at eps 0 and eps, and torch's at eps."""
    lg, tg = logits.float()[None], torch.tensor([target])
    return LossRow(name, float(torch.softmax(lg, -1)[0, target]), float(lab.smoothed_cross_entropy(lg, tg, 0.0)),
                   float(lab.smoothed_cross_entropy(lg, tg, eps)), float(F.cross_entropy(lg, tg, label_smoothing=eps)))


@torch.no_grad()
def smoothing(model: torch.nn.Module, task: str, position: int, eps: float = 0.1, k: int = 8) -> Smoothing:
    """Label smoothing at one decoder position of the fixed sentence, over the lab's real vocabulary (V entries)."""
    src, tin, tout = lab.sequences(task, lab_words(lab.FIXED_SENTENCE))
    position = min(max(int(position), 0), len(tout) - 1)
    right, v = tout[position], len(lab.VOCAB)
    logits = model(torch.tensor([src]), torch.tensor([tin])).logits[0, position]  # (V,)
    p_model = torch.softmax(logits.double(), -1).numpy()
    order = [right, *[int(i) for i in np.argsort(-p_model) if i != right]][:k]
    rest = [i for i in range(v) if i not in order]
    onehot = np.zeros(v)
    onehot[right] = 1.0
    smooth = (1 - eps) * onehot + eps / v

    def pooled(p: np.ndarray) -> np.ndarray:
        return np.r_[p[order], p[rest].sum()]

    rows = (loss_row("confident", _logits(_spread(v, right, 0.999)), right, eps),
            loss_row("hedged", _logits(smooth), right, eps),
            loss_row("trained", logits, right, eps))
    a, b = (lab.IDS[w] for w in TWO_ANSWERS)
    preds = {"on_first": _spread(v, a, 0.98), "on_second": _spread(v, b, 0.98),
             "split": _spread(v, a, 0.49, {b: 0.49})}
    two = tuple(loss_row(n, _logits(p), a, eps) for n, p in preds.items())
    other = tuple(loss_row(n, _logits(p), b, eps).smoothed for n, p in preds.items())
    gap = math.log((1 - eps + eps / v) / (eps / v))
    return freeze(Smoothing(eps, v, position, lab.VOCAB[right], tuple(lab.VOCAB[i] for i in order),
                            ro(pooled(onehot)), ro(pooled(smooth)), ro(pooled(p_model)), len(rest), rows, two,
                            other, gap))


# ---- teacher forcing -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepLogits:
    columns: tuple[str, ...]  # (c,) the entries shown: the sentence's words and <eos>
    probs: np.ndarray  # (n, c) softmax over the whole vocabulary, these columns
    label_prob: np.ndarray  # (n,) the label's probability
    loss: np.ndarray  # (n,) each position's label-smoothed loss
    argmax: tuple[str, ...]  # (n,) the most likely entry (over the whole vocabulary)
    mean_loss: float  # the step's loss: the mean over positions (what backward starts from)


@dataclass(frozen=True)
class TeacherForcing:
    task: str
    source: tuple[str, ...]  # (m,)
    decoder_input: tuple[str, ...]  # (n,) <bos> + y
    labels: tuple[str, ...]  # (n,) y + <eos>
    mask: np.ndarray  # (n, n) bool, True = may attend (the look-ahead triangle)
    untrained: StepLogits  # step 0: the run's initial weights (same seed, same weights)
    trained: StepLogits  # the run's final weights


def _step_logits(model: torch.nn.Module, src: list[int], tin: list[int], tout: list[int], eps: float) -> StepLogits:
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([tin])).logits[0]  # (n, V)
    target = torch.tensor(tout)
    per = [float(lab.smoothed_cross_entropy(logits[i:i + 1], target[i:i + 1], eps)) for i in range(len(tout))]
    probs = torch.softmax(logits.double(), -1).numpy()
    cols = list(dict.fromkeys([*tout[:-1], tout[-1]]))
    return StepLogits(tuple(lab.VOCAB[i] for i in cols), ro(probs[:, cols]), ro(probs[np.arange(len(tout)), tout]),
                      ro(per), tuple(lab.VOCAB[int(i)] for i in probs.argmax(-1)),
                      float(lab.smoothed_cross_entropy(logits, target, eps)))


def teacher_forcing(trained: torch.nn.Module, task: str, sentence: str, seed: int, eps: float = 0.1) -> TeacherForcing:
    """One training step's view of `sentence` (lab.UnknownWords for a word outside the vocabulary): the shifted
    target and a training step's logits at every position, untrained (the run's step 0) and trained; eval mode
    (dropout's effect is the dropout view's)."""
    src, tin, tout = lab.sequences(task, lab_words(sentence))
    untrained, _ = lab.build_model(seed)
    n = len(tin)
    return freeze(TeacherForcing(task, tuple(lab.VOCAB[i] for i in src), tuple(lab.VOCAB[i] for i in tin),
                                 tuple(lab.VOCAB[i] for i in tout), ro(np.tril(np.ones((n, n))), bool),
                                 _step_logits(untrained.eval(), src, tin, tout, eps),
                                 _step_logits(trained, src, tin, tout, eps)))


# ---- dropout -------------------------------------------------------------------------------------------------------
BLOCKS = ("encoder", "decoder_self", "cross")


@dataclass(frozen=True)
class Dropout:
    block: Block
    layer: int
    head: int
    p: float  # the dropout rate
    seed: int
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    train: np.ndarray  # (n, m) the head's weights in training mode, after dropout (kept cells scaled by 1/(1-p))
    eval: np.ndarray  # (n, m) in inference mode
    dropped: np.ndarray  # (n, m) bool: cells dropout set to 0 (allowed by the mask, 0 after dropout)
    allowed: np.ndarray  # (n, m) bool: cells the mask lets the query see
    train_out: tuple[str, ...]  # (n,) the most likely entry at each position, training mode
    eval_out: tuple[str, ...]  # (n,) in inference mode


def dropout_view(trained: torch.nn.Module, task: str, sentence: str, seed: int, block: Block = "encoder",
                 layer: int = 0, head: int = 0) -> Dropout:
    """The same sentence through a copy of the model in training mode (dropout drawn from `seed`, under the lab's
    RNG lock) and in inference mode; one head's weights from the model's own forward in each."""
    if block not in BLOCKS:
        raise ValueError(f"unknown block {block!r}; blocks: {', '.join(BLOCKS)}")
    src, tin, _ = lab.sequences(task, lab_words(sentence))
    s, t = torch.tensor([src]), torch.tensor([tin])
    model = copy.deepcopy(trained)  # the cached model stays in eval mode for every other session
    layer = min(max(int(layer), 0), lab.LAB_MODEL.n_encoder_layers - 1)
    head = min(max(int(head), 0), lab.LAB_MODEL.n_heads - 1)

    def pick(out) -> np.ndarray:
        maps = {"encoder": out.encoder.self_attention, "decoder_self": out.decoder.self_attention,
                "cross": out.decoder.cross_attention}[block]
        return maps[layer][0, head].detach().numpy()

    with torch.no_grad():
        model.train()
        with lab.RNG_LOCK:
            torch.manual_seed(seed)
            out_train = model(s, t)
        model.eval()
        out_eval = model(s, t)
    src_tok, tin_tok = tuple(lab.VOCAB[i] for i in src), tuple(lab.VOCAB[i] for i in tin)
    rows, cols = {"encoder": (src_tok, src_tok), "decoder_self": (tin_tok, tin_tok), "cross": (tin_tok, src_tok)}[block]
    allowed = np.tril(np.ones((len(rows), len(cols)), bool)) if block == "decoder_self" \
        else np.ones((len(rows), len(cols)), bool)
    train, ev = pick(out_train), pick(out_eval)

    def argmax(out) -> tuple[str, ...]:
        return tuple(lab.VOCAB[int(i)] for i in out.logits[0].argmax(-1))

    return freeze(Dropout(block, layer, head, lab.LAB_MODEL.dropout, int(seed), rows, cols, ro(train), ro(ev),
                          ro(allowed & (train == 0), bool), ro(allowed, bool), argmax(out_train), argmax(out_eval)))
