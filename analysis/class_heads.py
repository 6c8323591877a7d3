"""The class's head ranking (class mode, issue 29): students send sentences with a query word (a pronoun) and the
word it refers to, both chosen among the model's own tokens; over the approved sentences, every head is ranked by
agreement: the share of sentences where the query row's most-attended token (special tokens ignored) is the class's
referent, or another piece of the referent's word (issue 34: "영희" is "▁영" + "희" on multilingual-e5-small,
and a head that peaks on "희" found 영희 as much as one that peaks on "▁영").

    from analysis.class_heads import ClassSentence, rank_heads
    res = rank_heads(loaded, [ClassSentence("The animal didn't cross the street because it was tired", 8, 2)])
    res.agreement      # (L, H) in [0, 1]
    res.best           # (layer, head) with the highest agreement (the first such in layer-major order)

The attention is the model's own, from `loaded.trace(text)`: the encoder's self-attention, or a decoder-only model's
causal self-attention (the only block it has). A sentence whose token indices fall outside its tokens (the model or
its tokenizer changed since it was sent), or whose query or referent is a special token, is skipped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frozen import freeze, ro


@dataclass(frozen=True)
class ClassSentence:
    text: str
    query: int  # the query token's index in the model's tokens of `text`
    referent: int  # the token the class says it refers to


@dataclass(frozen=True)
class HeadRanking:
    model: str
    agreement: np.ndarray  # (L, H) float32: hits / used, NaN when no sentence was used
    hits: np.ndarray  # (L, H) int: sentences where the head's most-attended token is the referent
    used: int  # sentences counted
    skipped: int  # sentences whose indices did not fit their tokens (or pointed at a special token)
    best: tuple[int, int] | None  # (layer, head) of the highest agreement; None when nothing was counted

    @property
    def n_layers(self) -> int:
        return int(self.agreement.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.agreement.shape[1])

    def rows(self) -> list[dict]:
        """One row per head, best first (ties: layer, then head): plain keys for a table or an export."""
        out = [{"layer": la, "head": h, "agreement": float(self.agreement[la, h]), "hits": int(self.hits[la, h]),
                "sentences": self.used} for la in range(self.n_layers) for h in range(self.n_heads)]
        return sorted(out, key=lambda r: (-(r["agreement"] if np.isfinite(r["agreement"]) else -1.0),
                                          r["layer"], r["head"]))


def block_of(trace) -> str:
    """The self-attention block a ranking reads: the encoder's, or a decoder-only model's (its only block)."""
    return "decoder_self" if trace.is_decoder_only else "encoder"


def most_attended(att: np.ndarray, query: int, special: list[bool]) -> np.ndarray:
    """(L, H, N, N) attention -> (L, H): the key with the most weight in the query's row, special tokens ignored."""
    row = np.array(att[:, :, query, :], dtype=np.float64)
    mask = np.asarray(special, dtype=bool)
    if mask.all():
        raise ValueError("every token is special")
    row[:, :, mask] = -np.inf
    return row.argmax(-1)


def word_of(trace, i: int) -> list[int]:
    """The token indices of the word that token `i` is a piece of (the tokenizer's word ids; `i` alone without
    them)."""
    ids = list(trace.source_word_ids or [])
    if len(ids) != len(trace.source_tokens) or not 0 <= i < len(ids) or ids[i] < 0:
        return [i]
    return [j for j, w in enumerate(ids) if w == ids[i]]


def sentence_hits(trace, query: int, referent: int) -> np.ndarray | None:
    """(L, H) bool: where each head's most-attended token from `query` is `referent` or another piece of its word;
    None when the indices do not fit the trace's tokens, point at a special token, or at one word."""
    block = block_of(trace)
    special = list(trace.axis_special(block)[1])
    n = len(special)
    if not (0 <= query < n and 0 <= referent < n) or query == referent or special[query] or special[referent]:
        return None
    target = word_of(trace, referent)
    if query in target:
        return None
    return np.isin(most_attended(trace.attention(block), query, special), target)


def rank_heads(loaded, sentences: list[ClassSentence], *, traces: list | None = None) -> HeadRanking:
    """The ranking over `sentences` (each traced by `loaded`, or given in `traces`, one per sentence)."""
    if traces is None:
        traces = [loaded.trace(s.text) for s in sentences]
    if len(traces) != len(sentences):
        raise ValueError(f"{len(sentences)} sentences but {len(traces)} traces")
    block = loaded.main_block
    L, H = loaded.n_layers(block), loaded.n_heads(block)
    hits = np.zeros((L, H), dtype=np.int64)
    used = skipped = 0
    for s, tr in zip(sentences, traces):
        got = sentence_hits(tr, s.query, s.referent)
        if got is None:
            skipped += 1
            continue
        hits += got
        used += 1
    if used:
        agreement = hits / used
        la, h = np.unravel_index(int(np.argmax(agreement)), agreement.shape)
        best = (int(la), int(h))
    else:
        agreement, best = np.full((L, H), np.nan), None
    return freeze(HeadRanking(model=loaded.name, agreement=ro(agreement), hits=ro(hits, np.int64),
                              used=used, skipped=skipped, best=best))
