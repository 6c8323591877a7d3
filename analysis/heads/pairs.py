"""Minimal pairs: every head's change of preference between two sentences that differ in a word or two."""


from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from model.errors import InputError
from model.tokenizer import piece_text

from ..frozen import ro, to_numpy
from .common import (
    FLIP_MARGIN,
    PRESET_CANDIDATES,
    PRESET_QUERY,
    EncoderInput,
    TokenSpec,
    encoder_input,
    run_encoder,
)


# ---- 1. minimal pairs ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Alignment:
    """Two token sequences aligned with difflib: each column pairs a position of A with one of B (or None)."""

    tokens_a: tuple[str, ...]
    tokens_b: tuple[str, ...]
    columns: tuple[tuple[int | None, int | None], ...]  # (i_a, i_b) per aligned column
    same: tuple[bool, ...]  # per column: both present and the same token

    @property
    def labels(self) -> list[str]:
        out = []
        for (ia, ib), same in zip(self.columns, self.same):
            if same:
                out.append(self.tokens_a[ia])
            elif ia is not None and ib is not None:
                out.append(f"{self.tokens_a[ia]}→{self.tokens_b[ib]}")
            elif ia is not None:
                out.append(f"{self.tokens_a[ia]} (A only)")
            else:
                out.append(f"{self.tokens_b[ib]} (B only)")
        return out

    def to_b(self, i_a: int) -> int | None:
        for ia, ib in self.columns:
            if ia == i_a:
                return ib
        return None

    @property
    def changed_a(self) -> tuple[int, ...]:
        return tuple(ia for (ia, _), s in zip(self.columns, self.same) if ia is not None and not s)

    @property
    def changed_b(self) -> tuple[int, ...]:
        return tuple(ib for (_, ib), s in zip(self.columns, self.same) if ib is not None and not s)


def align_tokens(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> Alignment:
    """Shared tokens matched (difflib), replaced runs paired position by position, the rest on one side only."""
    ta, tb = list(tokens_a), list(tokens_b)
    cols: list[tuple[int | None, int | None]] = []
    same: list[bool] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op == "equal":
            cols += [(a0 + i, b0 + i) for i in range(a1 - a0)]
            same += [True] * (a1 - a0)
            continue
        k = min(a1 - a0, b1 - b0) if op == "replace" else 0
        cols += [(a0 + i, b0 + i) for i in range(k)]
        cols += [(i, None) for i in range(a0 + k, a1)] + [(None, i) for i in range(b0 + k, b1)]
        same += [False] * (k + (a1 - a0 - k) + (b1 - b0 - k))
    return Alignment(tuple(ta), tuple(tb), tuple(cols), tuple(same))


def _norm(s: str) -> str:
    return unicodedata.normalize("NFC", s).strip().lower()


def _is_punct(text: str) -> bool:
    return bool(text) and all(unicodedata.category(c).startswith(("P", "S")) for c in text)


def _strip_punct(word: str) -> str:
    """A word without the punctuation at its ends ("tired." -> "tired", "빌려주었는데," -> "빌려주었는데")."""
    i, j = 0, len(word)
    while i < j and _is_punct(word[i]):
        i += 1
    while j > i and _is_punct(word[j - 1]):
        j -= 1
    return word[i:j]


def word_text(tokens: Sequence[str], positions: Sequence[int]) -> str:
    """The text of tokens that form (part of) a word, pieces merged with no spaces and the subword marks removed
    (WordPiece '##', SentencePiece '▁', byte-level BPE 'Ġ'): "▁ 트로 피 는" -> "트로피는", "didn ' t" -> "didn't".
    NFC, so MiniLM's jamo pieces read as syllables again."""
    text = "".join(piece_text(tokens[i], first=False) for i in positions)
    return unicodedata.normalize("NFC", text.removeprefix("##"))


def _word_hits(inp: EncoderInput, s: str) -> list[tuple[int, ...]]:
    """Words (eojeols: a space-separated word, the pieces that touch) matching `s`: the whole word first, then the
    word without its edge punctuation, then a word that starts with `s` ("트로피" finds "트로피는": a Korean noun
    with its particle). A word found by the last two rules leaves out its pure punctuation tokens."""
    words = [(k, _norm(w)) for k, w in enumerate(inp.words)]
    pos = {k: tuple(i for i, w in enumerate(inp.word_ids) if w == k) for k, _ in words}

    def content(k: int) -> tuple[int, ...]:
        kept = tuple(i for i in pos[k] if not _is_punct(piece_text(inp.tokens[i], first=False)))
        return kept or pos[k]

    for hits in ([pos[k] for k, w in words if w == s],
                 [content(k) for k, w in words if _strip_punct(w) == s],
                 [content(k) for k, w in words if _strip_punct(w).startswith(s)]):
        if hits:
            return hits
    return []


def locate(inp: EncoderInput, spec: TokenSpec, *, what: str, sentence: str) -> tuple[int, ...]:
    """Token positions of `spec` in a sentence: an int is a token position; a string matches one token (case
    insensitive) or, failing that, one whole word (its pieces, e.g. "didn't" -> didn ' t), or the one word that
    starts with it ("트로피" -> the pieces of "트로피는": Korean particles attach to the word). Raises InputError
    naming the positions when it occurs more than once, and listing the tokens when it does not occur."""
    n = len(inp.tokens)
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if not 0 <= int(spec) < n:
            raise InputError(f"The {what} position {int(spec)} is outside sentence {sentence} (positions 0 to {n - 1}).",
                             key="position_outside", what=what, position=int(spec), sentence=sentence, last=n - 1)
        return (int(spec),)
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"Choose a {what}: a word of sentence {sentence} or a token position.", key="choose_token",
                         what=what, sentence=sentence)
    s = _norm(spec)
    if s.isdigit():
        return locate(inp, int(s), what=what, sentence=sentence)
    hits = [(i,) for i, t in enumerate(inp.tokens) if _norm(piece_text(t)) == s]  # "그것은" finds "▁그것은"
    if not hits:
        hits = _word_hits(inp, s)
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(f"{i}:{t}" for i, t in enumerate(inp.tokens))
    if not hits:
        raise InputError(f"The {what} {spec.strip()!r} is not a token or word of sentence {sentence}. Its tokens "
                         f"are {shown}. Type one of them, or its position.", key="not_in_sentence", what=what,
                         spec=repr(spec.strip()), sentence=sentence, tokens=shown)
    where = ", ".join(str(h[0]) for h in hits)
    raise InputError(f"The {what} {spec.strip()!r} occurs {len(hits)} times in sentence {sentence} (token "
                     f"positions {where}): choose one by its position.", key="occurs_many", what=what,
                     spec=repr(spec.strip()), n=len(hits), sentence=sentence, positions=where)


def _weight_on(att: np.ndarray, query: tuple[int, ...], keys: tuple[int, ...]) -> np.ndarray:
    """(L, H, N, N) -> (L, H): attention from the query (mean over its pieces) to the keys (sum over pieces)."""
    return att[:, :, list(query), :][..., list(keys)].sum(-1).mean(-1)


@dataclass(frozen=True)
class DeltaMap:
    """B - A attention of one head on the aligned tokens; NaN where a token exists in one sentence only."""

    layer: int
    head: int
    labels: tuple[str, ...]
    changed: tuple[bool, ...]  # per aligned position: the token differs between A and B
    delta: np.ndarray  # (C, C) rows = query columns, cols = key columns of the alignment
    a: np.ndarray  # (C, C) A's weights on the aligned grid (NaN where missing)
    b: np.ndarray  # (C, C)


@dataclass(frozen=True)
class MinimalPair:
    text_a: str
    text_b: str
    alignment: Alignment
    query: tuple[tuple[int, ...], tuple[int, ...]]  # token positions in A, in B
    candidates: tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]
    labels: tuple[str, str, str]  # query, candidate 1, candidate 2 as shown
    attention_a: np.ndarray  # (L, H, N_a, N_a)
    attention_b: np.ndarray  # (L, H, N_b, N_b)
    w1_a: np.ndarray  # (L, H) weight from the query to candidate 1 in A
    w2_a: np.ndarray
    w1_b: np.ndarray
    w2_b: np.ndarray
    flip_margin: float

    @property
    def pref_a(self) -> np.ndarray:
        """(L, H) w(c1) - w(c2) in A."""
        return self.w1_a - self.w2_a

    @property
    def pref_b(self) -> np.ndarray:
        return self.w1_b - self.w2_b

    @property
    def change(self) -> np.ndarray:
        """(L, H) preference in B minus preference in A."""
        return self.pref_b - self.pref_a

    @property
    def flipped(self) -> np.ndarray:
        """(L, H) bool: the preference changes sign, with at least `flip_margin` on both sides."""
        a, b = self.pref_a, self.pref_b
        return (np.sign(a) != np.sign(b)) & (np.minimum(np.abs(a), np.abs(b)) >= self.flip_margin)

    @property
    def ranking(self) -> list[tuple[int, int]]:
        """(layer, head) by |change|, largest first (ties: lower layer, then head)."""
        ch = np.abs(self.change)
        L, H = ch.shape
        return sorted(((la, h) for la in range(L) for h in range(H)), key=lambda lh: (-ch[lh], lh))

    def rows(self, top: int | None = None) -> list[dict]:
        """The ranked table: one dict per head."""
        q, c1, c2 = self.labels
        fl = self.flipped
        out = []
        for rank, (la, h) in enumerate(self.ranking[:top] if top else self.ranking, start=1):
            out.append({
                "rank": rank, "layer": la, "head": h,
                "a_w1": round(float(self.w1_a[la, h]), 3), "a_w2": round(float(self.w2_a[la, h]), 3),
                "b_w1": round(float(self.w1_b[la, h]), 3), "b_w2": round(float(self.w2_b[la, h]), 3),
                "pref_a": round(float(self.pref_a[la, h]), 3), "pref_b": round(float(self.pref_b[la, h]), 3),
                "change": round(float(self.change[la, h]), 3), "flipped": bool(fl[la, h]),
            })
        return out

    def delta(self, layer: int, head: int) -> DeltaMap:
        al = self.alignment
        c = len(al.columns)
        a = np.full((c, c), np.nan, dtype=np.float32)
        b = np.full((c, c), np.nan, dtype=np.float32)
        ia = np.array([-1 if x is None else x for x, _ in al.columns])
        ib = np.array([-1 if y is None else y for _, y in al.columns])
        ra, rb = ia >= 0, ib >= 0
        a[np.ix_(ra, ra)] = self.attention_a[layer, head][np.ix_(ia[ra], ia[ra])]
        b[np.ix_(rb, rb)] = self.attention_b[layer, head][np.ix_(ib[rb], ib[rb])]
        return DeltaMap(layer, head, tuple(al.labels), tuple(not s for s in al.same), ro(b - a), ro(a), ro(b))


def minimal_pair(model, text_a: str, text_b: str, query: TokenSpec = PRESET_QUERY,
                 candidates: tuple[TokenSpec, TokenSpec] = PRESET_CANDIDATES, *, flip_margin: float = FLIP_MARGIN,
                 **encode_kw) -> MinimalPair:
    """Run both sentences and compare the query's weights on the two candidates in every head.

    query / candidates: a token or word (looked up in each sentence separately), a token position in A (mapped to
    B through the alignment), or a pair (position in A, position in B). encode_kw: e.g. task= for seq2seq-tiny
    (its encoder is used). Raises InputError with a message for the user."""
    for name, text in (("first", text_a), ("second", text_b)):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"The {name} sentence is empty: type both sentences of the pair.", key="pair_empty",
                             which=name)
    inp_a, inp_b = encoder_input(model, text_a, **encode_kw), encoder_input(model, text_b, **encode_kw)
    al = align_tokens(inp_a.tokens, inp_b.tokens)

    def both(spec: TokenSpec, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if isinstance(spec, tuple):
            return locate(inp_a, spec[0], what=what, sentence="A"), locate(inp_b, spec[1], what=what, sentence="B")
        if isinstance(spec, (int, np.integer)) or (isinstance(spec, str) and spec.strip().isdigit()):
            pa = locate(inp_a, spec, what=what, sentence="A")
            pb = al.to_b(pa[0])
            if pb is None:
                raise InputError(f"The {what} at position {pa[0]} of sentence A has no counterpart in sentence B: "
                                 "type it as a word instead.", key="no_counterpart", what=what, position=pa[0])
            return pa, (pb,)
        return locate(inp_a, spec, what=what, sentence="A"), locate(inp_b, spec, what=what, sentence="B")

    if len(candidates) != 2:
        raise InputError("Choose exactly two candidate keys.", key="two_candidates")
    q = both(query, "query token")
    c1, c2 = both(candidates[0], "first candidate"), both(candidates[1], "second candidate")
    if set(c1[0]) & set(c2[0]) or set(c1[1]) & set(c2[1]):
        raise InputError("The two candidates are the same token: choose two different keys.", key="same_candidates")
    att_a = np.stack([to_numpy(a[0]) for a in run_encoder(model, inp_a).self_attention])  # (L, H, N, N)
    att_b = np.stack([to_numpy(a[0]) for a in run_encoder(model, inp_b).self_attention])

    def label(pos: tuple[int, ...]) -> str:  # the word found, its pieces merged ("트로피" -> "트로피는")
        return word_text(inp_a.tokens, pos)

    return MinimalPair(
        text_a, text_b, al, q, (c1, c2),
        (label(q[0]), label(c1[0]), label(c2[0])),
        ro(att_a), ro(att_b),
        ro(_weight_on(att_a, q[0], c1[0])), ro(_weight_on(att_a, q[0], c2[0])),
        ro(_weight_on(att_b, q[1], c1[1])), ro(_weight_on(att_b, q[1], c2[1])),
        float(flip_margin),
    )
