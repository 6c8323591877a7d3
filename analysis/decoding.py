"""The paper's two ways of running a decoder (Vaswani et al. 2017, sections 3.1, 5), step by step:

- **greedy decoding** (inference): start from [<bos>]; at step t the decoder reads the t tokens so far and the most
  probable next token is fed back in. The model decodes (model.transformer.Transformer.greedy_decode; a task's
  answer is checked first as a draft, which changes how fast the output comes, never what it is); then one
  recorded forward over the decoder inputs gives every step at once: because of the look-ahead mask, row t of that
  pass is exactly what decoding step t computed (a test checks it against a pass per step);
- **teacher forcing** (training): the whole shifted correct target [<bos>, y_1 .. y_n] in one pass; row t is what
  step t would see if every earlier output had been right.

Both return a frozen `DecodingRun` with the same fields, so the page draws either.
Notation: L decoder layers, h heads, T steps, m source length, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.data import apply_task
from model.errors import InputError
from model.tokenizer import check_text

from .frozen import freeze, to_numpy

TOP_K = 5


@dataclass(frozen=True)
class Step:
    """What decoding step t (1-based) saw and produced."""

    inputs: list[str]  # (t,) decoder input tokens [<bos>, y_1 .. y_{t-1}]
    self_attention: np.ndarray | None  # (L, h, t, t) masked decoder self-attention of those inputs (None: an SSRU)
    cross_row: np.ndarray  # (L, h, m) the newest input's cross-attention over the source
    top_tokens: list[str]  # (TOP_K,) most probable next tokens over the whole vocabulary, best first
    top_probs: np.ndarray  # (TOP_K,)
    chosen: str  # the token this step emits (greedy: the best the decoder may choose; teacher forcing: the typed one)
    top_allowed: tuple[bool, ...] | None = None  # (TOP_K,) which of them the shortlist lets it choose (None: no list)


@dataclass(frozen=True)
class DecodingRun:
    task: str | None  # None: a model without tasks (a local BART / Marian folder)
    mode: str  # "greedy" | "teacher forcing"
    source_tokens: list[str]  # (m,) [<task>, x_1 .. x_n, <eos>] (seq2seq-tiny) or the model's own specials
    steps: tuple[Step, ...]
    expected: list[str]  # the task's correct output tokens, <eos> included; the typed target; [] if neither
    truncated: bool = False
    n_tokens_untruncated: int = 0
    model: str = ""
    forget_gates: np.ndarray | None = None  # (L, T, d): an SSRU decoder's forget gates (it has no self-attention)
    output_text: str = ""  # the output detokenized (a translator's translation)
    shortlist: bool = False  # the decoder chose within a lexical shortlist
    n_source_specials: int = 2  # special tokens of the source (seq2seq-tiny: <task> and <eos>; a translator: </s>)

    @property
    def has_self_attention(self) -> bool:
        return self.steps[0].self_attention is not None if self.steps else True

    @property
    def shortlist_removed(self) -> list[int]:
        """The steps (1-based) whose most probable token over the whole vocabulary the shortlist did not allow."""
        return [i + 1 for i, s in enumerate(self.steps) if s.top_allowed is not None and not s.top_allowed[0]]

    @property
    def output_tokens(self) -> list[str]:
        return [s.chosen for s in self.steps]

    def cross_matrix(self, upto: int) -> np.ndarray:
        """(L, h, upto, m): the cross-attention rows of steps 1..upto."""
        return np.stack([s.cross_row for s in self.steps[:upto]], axis=2)

    @property
    def correct(self) -> bool:
        return bool(self.expected) and self.output_tokens == self.expected


def expected_tokens(loaded, enc, task: str) -> list[str]:
    """The task's correct output: a permutation of the source text tokens, then <eos>."""
    text_tokens = enc.tokens[1:-1]  # drop <task> and <eos>
    return [*apply_task(task, text_tokens), *loaded.token_texts([loaded.eos_id])]


def _source(loaded, text: str, task: str | None):
    return loaded.encode(text, task=task) if task is not None else loaded.encode(text)


def _forward(loaded, enc, dec_in: list[int], edits: tuple = ()) -> dict:
    """One recorded forward over the decoder inputs (T,): attention maps (or an SSRU's forget gates), top-k and the
    argmax of every row."""
    with torch.inference_mode():
        out = loaded.module(torch.tensor([enc.ids], device=loaded.device),
                            torch.tensor([dec_in], device=loaded.device), edits=edits)
        logits = out.logits[0].float()  # (T, V)
        top_l, top_i = logits.topk(min(TOP_K, logits.shape[-1]), dim=-1)  # (T, k): the softmax keeps the order
        top_p = (top_l - logits.logsumexp(-1, keepdim=True)).exp()  # their probabilities, no (T, V) softmax
        argmax = logits.argmax(-1)  # (T,) greedy's choice after each prefix (argmax, as the decoding loop takes it)
    dec = out.decoder
    return {"self": to_numpy(torch.stack(dec.self_attention)[:, 0]) if dec.self_attention else None,  # (L, h, T, T)
            "gates": to_numpy(torch.stack(dec.forget_gates)[:, 0]) if dec.forget_gates else None,  # (L, T, d)
            "cross": to_numpy(torch.stack(dec.cross_attention)[:, 0]),  # (L, h, T, m)
            "top_p": to_numpy(top_p), "top_i": top_i.tolist(), "argmax": argmax.tolist()}


def _run(loaded, enc, dec_in: list[int], chosen: list[str], task: str | None, mode: str, expected: list[str],
         edits: tuple = (), fwd: dict | None = None, *, output_ids: list[int] | None = None,
         shortlist: bool = False) -> DecodingRun:
    """Step t is row t-1 of every matrix of one forward over the decoder inputs (T,). shortlist: the decoder chose
    within the model's shortlist (each step's top tokens are marked with whether it allows them)."""
    tok = loaded.token_texts
    fwd = fwd or _forward(loaded, enc, dec_in, edits)
    self_att, cross, top_p, top_i = fwd["self"], fwd["cross"], fwd["top_p"], fwd["top_i"]
    allowed = loaded.allowed_tokens(enc.ids) if shortlist else None  # (V,) bool
    steps = tuple(Step(inputs=tok(dec_in[: t + 1]),
                       self_attention=None if self_att is None else self_att[:, :, : t + 1, : t + 1],
                       cross_row=cross[:, :, t], top_tokens=tok(top_i[t]), top_probs=top_p[t],
                       chosen=chosen[t],
                       top_allowed=None if allowed is None else tuple(bool(allowed[i]) for i in top_i[t]))
                  for t in range(len(dec_in)))
    text = loaded.output_text(output_ids) if output_ids else ""
    return freeze(DecodingRun(task, mode, enc.tokens, steps, expected, enc.truncated, enc.n_tokens_untruncated,
                              loaded.name, fwd.get("gates"), text, shortlist, sum(map(bool, enc.special))))


def greedy_run(loaded, text: str, task: str | None = None, max_steps: int | None = None, *,
               edits: tuple = (), full_vocab: bool = False) -> DecodingRun:
    """Greedy decoding with the model's own loop and step limit, then every step read from one recorded pass.
    task: seq2seq-tiny's task (its expected answer is kept); None for a model without tasks.

    With a task, its answer is first checked as a draft: the recorded pass over [<bos>, answer...] is what greedy
    decoding would read if it emitted the answer, so when every row's argmax is the answer's next token (and <eos>
    comes only at the end, within the step limit), that pass is the greedy run, and the loop is not needed. Where
    the model disagrees, the agreed prefix and the model's own token there are handed to the loop as its draft, and
    it decodes on from that point. Either way the output is the loop's (tests/test_draft_decoding.py).

    A model with a lexical shortlist (a Bergamot translator) chooses within it, as its engine does; full_vocab: over
    the whole vocabulary instead."""
    enc = _source(loaded, text, task)
    tok = loaded.token_texts
    expected = expected_tokens(loaded, enc, task) if task is not None else []
    kw = {"edits": edits} if edits else {}
    if task is not None:
        draft = [*apply_task(task, enc.ids[1:-1]), loaded.eos_id]  # (k,) the answer, <eos> last
        dec_in = [loaded.bos_id, *draft[:-1]]
        fwd = _forward(loaded, enc, dec_in, edits)
        pred = fwd["argmax"]
        agreed = next((t for t, (p, d) in enumerate(zip(pred, draft)) if p != d), len(draft))
        if (agreed == len(draft) and loaded.eos_id not in draft[:-1]
                and len(draft) <= loaded.step_limit(enc.ids, max_steps)):
            return _run(loaded, enc, dec_in, tok(draft), task, "greedy", expected, fwd=fwd)
        kw["draft"] = [*draft[:agreed], pred[agreed]] if agreed < len(draft) else draft
    shortlist = loaded.abilities.shortlist and not full_vocab
    if full_vocab and loaded.abilities.shortlist:
        kw["full_vocab"] = True
    ys = loaded.decode_ids(enc.ids, max_steps, **kw)  # [bos, y1, ..., (eos)]
    dec_in = ys[:-1]
    return _run(loaded, enc, dec_in, tok(ys[1:]), task, "greedy", expected, edits,
                output_ids=ys[1:], shortlist=shortlist)


def teacher_forced_run(loaded, text: str, task: str | None = None, target: str | None = None) -> DecodingRun:
    """Training view: the whole shifted correct target in one pass: the task's answer, or `target` typed by the
    user (tokenized without specials, then the model's end token), as `python -m model --target` does."""
    enc = _source(loaded, text, task)
    if target is not None:
        ids = loaded.encode_target(check_text(target)) if target.strip() else []
        if not ids:
            raise InputError("The target has no tokens: type the output you want to teacher-force.",
                             key="empty_target")
        target_ids = [*ids, loaded.eos_id][: loaded.config.max_positions - 1]
        expected = loaded.token_texts(target_ids)
    elif task is None:
        raise InputError("Teacher forcing needs a target: type the output you want to teacher-force.",
                         key="empty_target")
    else:
        expected = expected_tokens(loaded, enc, task)
        target_ids = loaded.token_ids(expected)
    dec_in = [loaded.bos_id, *target_ids[:-1]]  # (T,) shifted right
    return _run(loaded, enc, dec_in, expected, task, "teacher forcing", expected, output_ids=target_ids,
                shortlist=loaded.abilities.shortlist)
