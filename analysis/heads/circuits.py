"""Attention sinks and induction heads, read from a decoder-only model's own attention.

- Attention sink (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks"): the weight every
  head puts on the first token, averaged over the queries 1 .. N-1 (query 0 can only attend to itself). Softmax must
  put its mass somewhere; a head with nothing to do parks it on the first token, which every query can see.
- Induction heads (Olsson et al. 2022, "In-context Learning and Induction Heads"): on R random token ids repeated
  twice, a query i in the second half that attends to i - R + 1 (the token after the previous occurrence of its own
  token) completes the pattern [A][B] ... [A] -> [B]. The induction score is the mean of that weight over the
  second half's queries; the previous-token score, the mean weight on i - 1 over the same queries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.errors import InputError
from model.run import Run

from ..frozen import ro, to_numpy

INDUCTION_REPEAT = 40  # R: the random sequence's length (each half)
INDUCTION_SEED = 0


def _check(att: np.ndarray) -> np.ndarray:
    att = np.asarray(att, dtype=np.float64)
    if att.ndim != 4 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"attention must be (layers, heads, N, N), got {att.shape}")
    return att


def sink_scores(att: np.ndarray) -> np.ndarray:
    """(L, H, N, N) causal self-attention -> (L, H): each head's mean weight on key 0 over the queries 1 .. N-1
    (a one-token text has no such query: its scores are NaN)."""
    att = _check(att)
    if att.shape[-1] < 2:
        return np.full(att.shape[:2], np.nan)
    return att[:, :, 1:, 0].mean(-1)


def induction_scores(att: np.ndarray, repeat: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(L, H, N, N) attention on [offset tokens (a BOS)] + R random ids + the same R ids -> ((L, H) induction score,
    (L, H) previous-token score). The queries are the second half's positions i = offset+R .. offset+2R-1; the
    induction target is i - R + 1 (for the last query, i - R + 1 is its own copy's successor, still in the first
    half), the previous token i - 1."""
    att = _check(att)
    n = att.shape[-1]
    if repeat < 1 or offset < 0 or offset + 2 * repeat > n:
        raise ValueError(f"{offset} + 2 x {repeat} positions do not fit in {n}")
    q = np.arange(offset + repeat, offset + 2 * repeat)
    return att[:, :, q, q - repeat + 1].mean(-1), att[:, :, q, q - 1].mean(-1)


def top_heads(grid: np.ndarray, k: int = 5) -> list[tuple[int, int, float]]:
    """The k highest (layer, head, score) of a layer x head grid, best first (NaN last)."""
    flat = np.nan_to_num(np.asarray(grid, dtype=np.float64), nan=-np.inf).ravel()
    order = np.argsort(-flat, kind="stable")[:k]
    H = grid.shape[1]
    return [(int(i // H), int(i % H), float(grid.ravel()[i])) for i in order]


@dataclass(frozen=True)
class Sink:
    """The first token's share of every head's attention on a sentence."""

    tokens: tuple[str, ...]
    scores: np.ndarray  # (L, H) mean weight on token 0 over queries 1 .. N-1

    def top(self, k: int = 5) -> list[tuple[int, int, float]]:
        return top_heads(self.scores, k)


def attention_sink(trace) -> Sink:
    """The sink scores of a trace's first block: a decoder-only model's causal self-attention (decoder_self), or an
    encoder's (whose first token, [CLS] / <s>, is seen by every query too)."""
    if len(trace.source_tokens) < 2:
        raise InputError("The text has one token: the sink needs a second token that looks back at the first.",
                         key="sink_one_token")
    return Sink(tuple(trace.source_tokens), ro(sink_scores(trace.attention(trace.blocks[0]))))


@dataclass(frozen=True)
class Induction:
    """Every head's induction and previous-token scores on a repeated random sequence."""

    ids: tuple[int, ...]  # the sequence the model read: [bos] + r + r
    tokens: tuple[str, ...]
    repeat: int  # R
    offset: int  # 1 with a BOS, else 0
    induction: np.ndarray  # (L, H)
    previous: np.ndarray  # (L, H)
    loss_first: float  # the model's mean next-token loss on the first half (random: high)
    loss_second: float  # and on the second half (an induction circuit copies: low)

    def top(self, which: str = "induction", k: int = 5) -> list[tuple[int, int, float]]:
        return top_heads(self.induction if which == "induction" else self.previous, k)


def bos_id(model) -> int | None:
    """The id the model's tokenizer puts before every text, when it puts one (Llama 2, Gemma); None otherwise
    (GPT-2, SmolLM2)."""
    enc = model.encode_prompt("a")  # a decoder-only model's own prompt encoding
    return int(enc.ids[0]) if enc.ids and enc.special[0] else None


def random_ids(model, repeat: int, seed: int = INDUCTION_SEED) -> list[int]:
    """`repeat` distinct random ids of the model's vocabulary, none of them special."""
    pool = np.array(model.ordinary_ids())
    if len(pool) < repeat:
        raise InputError(f"The vocabulary has only {len(pool)} ordinary tokens.", key="induction_small_vocab",
                         n=len(pool))
    return [int(i) for i in np.random.default_rng(seed).choice(pool, size=repeat, replace=False)]


def induction(model, repeat: int = INDUCTION_REPEAT, seed: int = INDUCTION_SEED) -> Induction:
    """Run the model's own forward on [bos] + r + r (r: `repeat` random ids; fewer when the model's positions are
    fewer) and score every head (induction_scores)."""
    if model.kind != "decoder":
        raise InputError("Induction heads are read on a decoder-only model.", key="induction_decoder_only")
    bos = bos_id(model)
    offset = int(bos is not None)
    repeat = max(1, min(repeat, (model.config.max_positions - offset) // 2))
    r = random_ids(model, repeat, seed)
    ids = ([bos] if bos is not None else []) + r + r
    x = torch.tensor([ids], dtype=torch.long, device=model.device)
    rec = model.run(Run(x))
    layers = rec.decoder.layers
    att = np.stack([to_numpy(layers[i].attention[0]) for i in sorted(layers)])  # (L, H, N, N)
    with torch.inference_mode():
        logp = rec.logits[0, :-1].float().log_softmax(-1)
        nll = -logp.gather(-1, x[0, 1:, None])[:, 0].cpu().numpy()  # nll[j]: predicting ids[j + 1]
    ind, prev = induction_scores(att, repeat, offset)
    first = nll[offset : offset + repeat - 1]  # predicting r[1 ..] inside the first half
    second = nll[offset + repeat : offset + 2 * repeat - 1]  # predicting r[1 ..] again in the second half
    return Induction(tuple(ids), tuple(model.token_texts(ids, "#{id}")), repeat, offset, ro(ind), ro(prev),
                     float(first.mean()) if first.size else float("nan"),
                     float(second.mean()) if second.size else float("nan"))
