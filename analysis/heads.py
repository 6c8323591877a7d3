"""Head lab computations: minimal pairs, head surgery and its effects, value-weighted attention norms, logit lens.

Everything runs the model's own forward (`model.module`, with `model.attention.HeadAblation` passed as the
forward's `ablations` argument: the cached model is never modified) and returns frozen dataclasses whose numpy
arrays are read-only. No Streamlit, no plotly.

Notation: L layers, H heads, N source tokens, d d_model, k d_k; heads are counted from 0 ("Layer 3 · Head 1").

- Minimal pairs: two sentences that differ in a word or two. For a query token and two candidate keys, every
  head's preference  w(c1) - w(c2)  (the query's attention weight on candidate 1 minus on candidate 2) in A and in
  B; heads ranked by the change of that preference (B - A), and marked *flipped* when the preference changes sign
  with at least `flip_margin` on both sides (smaller preferences are noise: a head at -0.001 / +0.001 has no choice).
- Head surgery: zero a head's output Z_i, replace it by its mean over positions, or keep only the chosen heads of
  a layer (before Concat and W_O; b_O untouched). Effects on an encoder: cosine of every token's final hidden
  state before/after and of the mean-pooled sentence embedding (all-MiniLM-L6-v2's pooling); on seq2seq-tiny: the
  decoded output, whether it is still the task's exact answer, and the top-5 next-token probabilities at a step.
  `rank_heads_by_effect` ablates every head on its own, batched: one forward whose batch row r ablates head r.
- Value-weighted norms (Kobayashi et al. 2020, "Attention is not only a weight"): ||alpha_ij f_h(x_j)|| with
  f_h(x) = (x W_V^h + b_V^h) W_O^h, read from the values the forward recorded.
- Logit lens (seq2seq-tiny): at a decoding step, every decoder layer's output through the final linear layer
  and softmax (post-LN: each layer output is already normalised).
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.attention import HeadAblation
from model.errors import InputError
from model.tokenizer import piece_text
from model.trace import BLOCKS

from .frozen import readonly, to_numpy

PRESET_A = "The animal didn't cross the street because it was tired"
PRESET_B = "The animal didn't cross the street because it was wide"
PRESET_QUERY = "it"
PRESET_CANDIDATES = ("animal", "street")
# the same pair in Korean, for multilingual-e5-small: does "그것은" go to "동물은" or to "길을"?
PRESET_KO_A = "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다"
PRESET_KO_B = "그 동물은 길을 건너지 않았다. 그것은 너무 넓었기 때문이다"
PRESET_KO_QUERY = "그것은"
PRESET_KO_CANDIDATES = ("동물은", "길을")
FLIP_MARGIN = 0.03  # a preference must be at least this large on both sides to count as a flip
# zero the head's output, replace it by its mean over positions, or keep only the chosen heads of the layer
ABLATIONS = ("zero", "mean", "keep")

TokenSpec = str | int | tuple[int, int]  # a token or word, a token position in A, or positions (in A, in B)


def _ro(a, dtype=np.float32) -> np.ndarray:
    """A read-only copy."""
    return readonly(np.array(a, dtype=dtype))


_np = to_numpy


# ---- running the encoder --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EncoderInput:
    """A tokenized source and the tensors its encoder forward needs (batch of one)."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    word_ids: tuple[int, ...]
    words: tuple[str, ...]
    ids: torch.Tensor  # (1, N)
    type_ids: torch.Tensor | None  # (1, N) or None

    def __len__(self) -> int:
        return len(self.tokens)


def encoder_input(model, text: str, **kw) -> EncoderInput:
    """Tokenize `text` as the model's encoder sees it (kw: e.g. task= for seq2seq-tiny)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("The text is empty: type a sentence.", key="empty_text")
    enc = model.encode_source(text, **kw) if model.kind == "encoder-decoder" else model.tokenizer.encode(text)
    ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
    type_ids = torch.tensor([enc.type_ids], dtype=torch.long, device=model.device) if model.kind == "encoder" else None
    return EncoderInput(tuple(enc.tokens), tuple(bool(s) for s in enc.special), tuple(enc.word_ids),
                        tuple(enc.words()), ids, type_ids)


def run_encoder(model, inp: EncoderInput, *, batch: int = 1, record: bool | set[int] = False,
                ablations: dict | None = None):
    """The model's own encoder forward on `batch` copies of the input -> StackOutput (hidden (b, N, d),
    self_attention L x (b, H, N, N), records when asked). ablations: {("encoder", layer): HeadAblation-like}."""
    ids = inp.ids.expand(batch, -1)
    with torch.inference_mode():
        if model.kind == "encoder-decoder":
            return model.module.encode(ids, record=record, ablations=ablations)[0]
        type_ids = inp.type_ids.expand(batch, -1) if inp.type_ids is not None else None
        return model.module(ids, type_ids, record=record, ablations=ablations)


def n_layers_heads(model, block: str = "encoder") -> tuple[int, int]:
    cfg = model.config
    layers = cfg.n_encoder_layers if block == "encoder" else cfg.n_decoder_layers
    return layers, cfg.n_heads


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


def locate(inp: EncoderInput, spec: TokenSpec, *, what: str, sentence: str) -> tuple[int, ...]:
    """Token positions of `spec` in a sentence: an int is a token position; a string matches one token (case
    insensitive) or, failing that, one whole word (its pieces, e.g. "didn't" -> didn ' t). Raises InputError
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
        hits = [tuple(i for i, w in enumerate(inp.word_ids) if w == k) for k, word in enumerate(inp.words)
                if _norm(word) == s]
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
        return DeltaMap(layer, head, tuple(al.labels), tuple(not s for s in al.same), _ro(b - a), _ro(a), _ro(b))


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
    att_a = np.stack([_np(a[0]) for a in run_encoder(model, inp_a).self_attention])  # (L, H, N, N)
    att_b = np.stack([_np(a[0]) for a in run_encoder(model, inp_b).self_attention])

    def label(spec: TokenSpec, pos: tuple[int, ...]) -> str:
        return spec.strip() if isinstance(spec, str) and not spec.strip().isdigit() else \
            " ".join(inp_a.tokens[i] for i in pos)

    return MinimalPair(
        text_a, text_b, al, q, (c1, c2),
        (label(query, q[0]), label(candidates[0], c1[0]), label(candidates[1], c2[0])),
        _ro(att_a), _ro(att_b),
        _ro(_weight_on(att_a, q[0], c1[0])), _ro(_weight_on(att_a, q[0], c2[0])),
        _ro(_weight_on(att_b, q[1], c1[1])), _ro(_weight_on(att_b, q[1], c2[1])),
        float(flip_margin),
    )


# ---- 2. head surgery ----------------------------------------------------------------------------------------------
HeadRef = tuple[int, int] | tuple[str, int, int]  # (layer, head) in the encoder, or (block, layer, head)


def heads_to_text(heads: Iterable[HeadRef]) -> str:
    """Heads as a short URL-safe string: "3.1,4.0" (encoder), "cross:1.2" for another block."""
    out = []
    for ref in heads:
        blk, layer, head = ("encoder", *ref) if len(ref) == 2 else ref
        out.append(f"{layer}.{head}" if blk == "encoder" else f"{blk}:{layer}.{head}")
    return ",".join(out)


def heads_from_text(text: str) -> list[HeadRef]:
    """The inverse of heads_to_text; raises InputError naming the first bad item (e.g. a hand-edited URL)."""
    out: list[HeadRef] = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        blk, _, lh = item.rpartition(":")
        layer, dot, head = lh.partition(".")
        if not (dot and layer.isdigit() and head.isdigit()) or (blk and blk not in BLOCKS):
            raise InputError(f"{item!r} is not a head: write layer.head, e.g. 3.1 (or cross:1.2).", key="not_a_head",
                             item=repr(item))
        ref = (int(layer), int(head))
        out.append(ref if blk in ("", "encoder") else (blk, *ref))
    return list(dict.fromkeys(out))


def ablations_for(heads: Iterable[HeadRef], mode: str = "zero", *, block: str = "encoder") -> dict:
    """Chosen heads -> the forward's `ablations` argument {(block, layer): HeadAblation(heads of that layer, mode)}.
    With mode "keep", each layer that has a chosen head keeps only its chosen heads."""
    per: dict[tuple[str, int], set[int]] = {}
    for ref in heads:
        blk, layer, head = (block, *ref) if len(ref) == 2 else ref
        per.setdefault((str(blk), int(layer)), set()).add(int(head))
    try:
        return {key: HeadAblation(tuple(sorted(hs)), mode) for key, hs in sorted(per.items())}
    except ValueError as e:
        raise InputError(str(e), key="ablation_invalid", detail=e) from None


def _check_heads(model, heads: Iterable[HeadRef], block: str) -> list[HeadRef]:
    heads = list(heads)
    for ref in heads:
        blk, layer, head = (block, *ref) if len(ref) == 2 else ref
        blocks = BLOCKS if model.kind == "encoder-decoder" else BLOCKS[:1]
        if blk not in blocks:
            raise InputError(f"{model.name} has no {blk!r} attention; it has {', '.join(blocks)}.", key="no_block",
                             model=model.name, block=repr(blk), blocks=", ".join(blocks))
        n_l, n_h = n_layers_heads(model, "encoder" if blk == "encoder" else "decoder")
        if not (0 <= layer < n_l and 0 <= head < n_h):
            raise InputError(f"There is no Layer {layer} · Head {head} in the {blk} of {model.name} "
                             f"({n_l} layers x {n_h} heads).", key="no_head", layer=layer, head=head, block=blk,
                             model=model.name, layers=n_l, heads=n_h)
    return heads


@dataclass(frozen=True)
class BatchedHeadAblation:
    """A different HeadAblation for each batch row (None: that row runs unchanged). Duck-types HeadAblation for the
    attention's `ablation` argument, applying the model's own HeadAblation row by row, so that one batched forward
    runs many ablations at once (rank-all: row r ablates one head)."""

    rows: tuple[HeadAblation | None, ...]

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        """z (b, h, n, k) -> (b, h, n, k)"""
        out = z.clone()
        for r, abl in enumerate(self.rows):
            if abl is not None:
                out[r : r + 1] = abl(z[r : r + 1])
        return out


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine along the last axis (float64)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.clip(np.divide((a * b).sum(-1), den, out=np.ones_like(den), where=den > 0), -1.0, 1.0)


def sentence_embedding(hidden: np.ndarray) -> np.ndarray:
    """(..., N, d) -> (..., d): mean pooling over tokens (specials included), the way all-MiniLM-L6-v2 is used."""
    return hidden.mean(axis=-2)


@dataclass(frozen=True)
class EncoderEffect:
    """What ablating heads does to an encoder's output."""

    tokens: tuple[str, ...]
    heads: tuple[HeadRef, ...]
    mode: str
    token_cosine: np.ndarray  # (N,) cosine of each token's final hidden state, before vs after
    sentence_cosine: float  # cosine of the mean-pooled sentence embedding, before vs after
    attention_before: np.ndarray  # (L, H, N, N)
    attention_after: np.ndarray  # (L, H, N, N)

    @property
    def token_change(self) -> np.ndarray:
        """(N,) 1 - cosine."""
        return 1.0 - self.token_cosine

    @property
    def sentence_change(self) -> float:
        return 1.0 - self.sentence_cosine

    @property
    def first_changed_layer(self) -> int:
        """The first layer whose attention maps change (layers before the first ablated one cannot)."""
        diff = np.abs(self.attention_after - self.attention_before).reshape(self.attention_before.shape[0], -1)
        changed = np.flatnonzero(diff.max(-1) > 0)
        return int(changed[0]) if changed.size else self.attention_before.shape[0]

    def rows(self) -> list[dict]:
        return [{"position": i, "token": t, "cosine": round(float(c), 5), "one_minus_cos": round(float(1 - c), 5)}
                for i, (t, c) in enumerate(zip(self.tokens, self.token_cosine))]


@dataclass(frozen=True)
class EncoderRun:
    """One encoder forward (normal or with heads ablated): what an effect compares. Cache the normal run per text
    and pass it as `baseline`, so that a re-run with new heads costs one forward."""

    text: str
    tokens: tuple[str, ...]
    heads: tuple[HeadRef, ...]
    mode: str
    hidden: np.ndarray  # (N, d) final hidden states
    attention: np.ndarray  # (L, H, N, N)


def encoder_run(model, text: str, heads: Iterable[HeadRef] = (), mode: str = "zero", **encode_kw) -> EncoderRun:
    """The encoder's own forward on `text` with the chosen heads ablated (none: the normal run)."""
    heads = _check_heads(model, heads, "encoder")
    inp = encoder_input(model, text, **encode_kw)
    out = run_encoder(model, inp, ablations=ablations_for(heads, mode) if heads else None)
    return EncoderRun(text, inp.tokens, tuple(heads), mode, _ro(_np(out.hidden[0])),
                      _ro(np.stack([_np(a[0]) for a in out.self_attention])))


def compare_runs(before: EncoderRun, after: EncoderRun) -> EncoderEffect:
    if before.tokens != after.tokens:
        raise ValueError("the two runs are of different texts")
    hb, ha = before.hidden, after.hidden
    return EncoderEffect(after.tokens, after.heads, after.mode, _ro(_cos(hb, ha)),
                         float(_cos(sentence_embedding(hb), sentence_embedding(ha))), before.attention, after.attention)


def encoder_effect(model, text: str, heads: Iterable[HeadRef], mode: str = "zero", *,
                   baseline: EncoderRun | None = None, **encode_kw) -> EncoderEffect:
    """Re-run the encoder with the chosen heads ablated and compare with the normal run (`baseline`: a cached
    `encoder_run(model, text)`; computed here when None)."""
    after = encoder_run(model, text, heads, mode, **encode_kw)
    if baseline is None:
        baseline = encoder_run(model, text, **encode_kw)
    elif baseline.heads or baseline.text != text:
        raise ValueError("the baseline must be the normal run of the same text")
    return compare_runs(baseline, after)


@dataclass(frozen=True)
class EffectGrid:
    """Every single-head ablation of an encoder: (L, H) effects."""

    tokens: tuple[str, ...]
    mode: str
    sentence_change: np.ndarray  # (L, H) 1 - cosine of the sentence embedding
    token_change: np.ndarray  # (L, H) mean over tokens of 1 - cosine of the final hidden state
    max_token_change: np.ndarray  # (L, H) the largest token's 1 - cosine
    most_changed_token: np.ndarray  # (L, H) int: position of that token

    def rows(self, by: str = "sentence") -> list[dict]:
        """One dict per head, largest effect first (`by`: "sentence" or "token")."""
        key = self.sentence_change if by == "sentence" else self.token_change
        L, H = key.shape
        order = sorted(((la, h) for la in range(L) for h in range(H)), key=lambda lh: (-key[lh], lh))
        return [{"rank": r, "layer": la, "head": h,
                 "sentence_change": float(f"{self.sentence_change[la, h]:.3g}"),
                 "token_change": float(f"{self.token_change[la, h]:.3g}"),
                 "most_changed": self.tokens[int(self.most_changed_token[la, h])]}
                for r, (la, h) in enumerate(order, start=1)]


def _chunk_rows(n_tokens: int, d_model: int, n_heads: int, n_layers: int, budget: float = 2.5e8) -> int:
    """Batch rows per forward so that activations and kept attention stay within ~`budget` bytes."""
    per_row = 4 * n_tokens * (12 * d_model + n_layers * n_heads * n_tokens + 3 * n_heads * n_tokens)
    return max(1, int(budget // per_row))


def rank_heads_by_effect(model, text: str, mode: str = "zero", *,
                         progress: Callable[[float], None] | None = None, chunk: int | None = None,
                         baseline: EncoderRun | None = None, **encode_kw) -> EffectGrid:
    """Ablate every encoder head on its own (L x H runs; 72 on MiniLM) and measure each effect. Runs batched: one
    forward of up to `chunk` rows (automatic: by memory), row r ablating head r; `progress(fraction)` after each.
    `baseline`: a cached `encoder_run(model, text)`."""
    if mode not in ABLATIONS:
        raise InputError(f"unknown ablation {mode!r}; use one of {', '.join(ABLATIONS)}", key="unknown_ablation",
                         mode=repr(mode), modes=", ".join(ABLATIONS))
    inp = encoder_input(model, text, **encode_kw)
    L, H = n_layers_heads(model, "encoder")
    n = len(inp)
    base = baseline.hidden if baseline is not None else _np(run_encoder(model, inp).hidden[0])  # (N, d)
    if baseline is not None and (baseline.heads or baseline.tokens != inp.tokens):
        raise ValueError("the baseline must be the normal run of the same text")
    base_sent = sentence_embedding(base)
    chunk = chunk or _chunk_rows(n, model.config.d_model, H, L)
    refs = [(la, h) for la in range(L) for h in range(H)]
    sent = np.zeros(L * H)
    tok = np.zeros(L * H)
    tmax = np.zeros(L * H)
    targ = np.zeros(L * H, dtype=np.int64)
    for start in range(0, len(refs), chunk):
        part = refs[start : start + chunk]
        per_layer: dict[int, list[HeadAblation | None]] = {}
        for r, (la, h) in enumerate(part):
            per_layer.setdefault(la, [None] * len(part))[r] = HeadAblation((h,), mode)
        abl = {("encoder", la): BatchedHeadAblation(tuple(rows)) for la, rows in per_layer.items()}
        hid = _np(run_encoder(model, inp, batch=len(part), ablations=abl).hidden)  # (b, N, d)
        c = 1.0 - _cos(hid, base[None])  # (b, N)
        sl = slice(start, start + len(part))
        sent[sl] = 1.0 - _cos(sentence_embedding(hid), base_sent[None])
        tok[sl], tmax[sl], targ[sl] = c.mean(-1), c.max(-1), c.argmax(-1)
        if progress is not None:
            progress(min(1.0, (start + len(part)) / len(refs)))
    shape = (L, H)
    return EffectGrid(inp.tokens, mode, _ro(sent.reshape(shape)), _ro(tok.reshape(shape)),
                      _ro(tmax.reshape(shape)), _ro(targ.reshape(shape), np.int64))


# ---- seq2seq: decoded output, exact answer, top-5 ------------------------------------------------------------------
@dataclass(frozen=True)
class DecoderEffect:
    """What ablating heads does to an encoder-decoder's greedy output."""

    source_tokens: tuple[str, ...]
    task: str | None
    heads: tuple[HeadRef, ...]
    mode: str
    expected: tuple[str, ...] | None  # the task's exact answer (tokens, <eos> included), when the model has tasks
    output_before: tuple[str, ...]  # generated tokens
    output_after: tuple[str, ...]
    text_before: str
    text_after: str
    step: int  # decoding step of the top-5 (0 = first generated token)
    top_before: tuple[tuple[str, float], ...]  # top-5 next tokens after the normal prefix
    top_after: tuple[tuple[str, float], ...]  # same prefix (the normal run's), heads ablated
    compared: tuple[tuple[str, float, float], ...] = ()  # every token of either top-k: (token, p before, p after)

    @property
    def exact_before(self) -> bool | None:
        return None if self.expected is None else self.output_before == self.expected

    @property
    def exact_after(self) -> bool | None:
        return None if self.expected is None else self.output_after == self.expected

    def top_rows(self) -> list[dict]:
        """Every token of either top-k with its probability before and after (also where it is not in the top-k)."""
        return [{"token": t, "before": round(b, 4), "after": round(a, 4)} for t, b, a in self.compared]


def _topk(probs: torch.Tensor, tok: Callable[[int], str | None], k: int) -> tuple[tuple[str, float], ...]:
    p, i = probs.topk(min(k, probs.shape[-1]))
    return tuple((tok(int(j)) or f"#{int(j)}", float(v)) for v, j in zip(p.tolist(), i.tolist()))


def expected_answer(model, text: str, task: str | None) -> tuple[str, ...] | None:
    """The exact answer of a task model (seq2seq-tiny: copy / reverse / swap of the text tokens, then <eos>)."""
    if task is None or not hasattr(model, "tasks"):
        return None
    from model.data import apply_task  # the training data's own definition of the tasks

    enc = model.encode_source(text, task=task)
    return (*apply_task(task, list(enc.tokens[1:-1])), model.tokenizer.id_to_token(model.eos_id))


def decoder_effect(model, text: str, heads: Iterable[HeadRef], mode: str = "zero", *, task: str | None = None,
                   step: int = 0, k: int = 5) -> DecoderEffect:
    """Greedy-decode with and without the ablation (heads: (block, layer, head) with block "encoder",
    "decoder_self" or "cross"; (layer, head) means the encoder). The top-k at `step` are read from the model's
    logits after the normal run's prefix, with and without the ablation, so their difference is the ablation's."""
    if model.kind != "encoder-decoder":
        raise InputError(f"{model.name} has no decoder: use encoder_effect.", key="no_decoder", model=model.name)
    heads = _check_heads(model, heads, "encoder")
    abl = ablations_for(heads, mode)
    kw = {"task": task} if task is not None else {}
    before = model.trace(text, **kw)
    after = model.trace(text, ablations=abl, **kw)
    dec_in = before.target_ids  # [<bos>, y1 ..] as the normal run decoded
    step = max(0, min(int(step), len(dec_in) - 1))
    src = torch.tensor([before.source_ids], dtype=torch.long, device=model.device)
    tgt = torch.tensor([dec_in[: step + 1]], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        p0 = model.module(src, tgt).logits[0, step].float().softmax(-1)
        p1 = model.module(src, tgt, ablations=abl).logits[0, step].float().softmax(-1)
    tok = model.tokenizer.id_to_token
    k = min(k, p0.shape[-1])
    ids = list(dict.fromkeys(p0.topk(k).indices.tolist() + p1.topk(k).indices.tolist()))
    compared = tuple((tok(i) or f"#{i}", float(p0[i]), float(p1[i])) for i in ids)
    return DecoderEffect(
        tuple(before.source_tokens), task, tuple(heads), mode, expected_answer(model, text, task),
        tuple(before.meta["generated_tokens"]), tuple(after.meta["generated_tokens"]),
        before.meta["output_text"], after.meta["output_text"], step, _topk(p0, tok, k), _topk(p1, tok, k),
        compared,
    )


# ---- 3. value-weighted norms --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueNorms:
    """Raw weights next to value-weighted norms ||alpha_ij f_h(x_j)|| (Kobayashi et al. 2020)."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    weights: np.ndarray  # (L, H, N, N) alpha
    norms: np.ndarray  # (L, H, N, N) ||alpha_ij f_h(x_j)||
    value_norms: np.ndarray  # (L, H, N) ||f_h(x_j)|| per key token

    @property
    def norm_share(self) -> np.ndarray:
        """(L, H, N, N): norms with each row scaled to sum to 1, comparable to the weights."""
        s = self.norms.sum(-1, keepdims=True)
        return np.divide(self.norms, s, out=np.zeros_like(self.norms), where=s > 0)

    @property
    def special_weight_share(self) -> np.ndarray:
        """(L, H): mean over query rows of the weight on [CLS]/[SEP]-type tokens."""
        return self.weights[..., list(self.special)].sum(-1).mean(-1) if any(self.special) else \
            np.zeros(self.weights.shape[:2], dtype=np.float32)

    @property
    def special_norm_share(self) -> np.ndarray:
        """(L, H): mean over query rows of the share of the norm on special tokens."""
        return self.norm_share[..., list(self.special)].sum(-1).mean(-1) if any(self.special) else \
            np.zeros(self.weights.shape[:2], dtype=np.float32)

    def special_rows(self) -> list[dict]:
        w, s = self.special_weight_share, self.special_norm_share
        return [{"layer": la, "head": h, "weight_share": round(float(w[la, h]), 3),
                 "norm_share": round(float(s[la, h]), 3)}
                for la in range(w.shape[0]) for h in range(w.shape[1])]


def head_value_vectors(attn_module, v: torch.Tensor) -> torch.Tensor:
    """f_h(x_j) = v_j^h W_O^h for every head: v (b, h, m, k) recorded by the forward (x W_V^h + b_V^h already)
    -> (b, h, m, d), with W_O^h = rows h*k:(h+1)*k of W_O (x @ W convention)."""
    w_o = attn_module.projection_matrices()["W_O"]  # (d, d)
    b, h, m, k = v.shape
    return torch.einsum("bhmk,hkd->bhmd", v, w_o.reshape(h, k, -1))


def value_norms(model, text: str, **encode_kw) -> ValueNorms:
    """Weights and value-weighted norms of every encoder head, from one recorded forward."""
    inp = encoder_input(model, text, **encode_kw)
    out = run_encoder(model, inp, record=True)
    layers = model.module.encoder.layers
    weights, fnorm = [], []
    with torch.inference_mode():
        for la, layer in enumerate(layers):
            rec = out.records[la]["self"]
            fx = head_value_vectors(layer.self_attn, rec.record["v"])  # (1, H, N, d)
            weights.append(_np(rec.weights[0]))
            fnorm.append(_np(fx[0].norm(dim=-1)))  # (H, N)
    w = np.stack(weights)  # (L, H, N, N)
    fn = np.stack(fnorm)  # (L, H, N)
    return ValueNorms(inp.tokens, inp.special, _ro(w), _ro(w * fn[:, :, None, :]), _ro(fn))


# ---- logit lens ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogitLens:
    """Top-k next tokens read from every decoder layer's output at one decoding step."""

    step: int
    prefix: tuple[str, ...]  # decoder input up to the step ([<bos>, y1 .. y_step])
    answer: str  # what the model emits at this step (the last layer's argmax)
    layers: tuple[str, ...]  # "Decoder layer 0" ..
    top_tokens: tuple[tuple[str, ...], ...]  # (L, k)
    top_probs: np.ndarray  # (L, k)
    answer_prob: np.ndarray  # (L,) probability of the final answer at each layer
    answer_rank: np.ndarray  # (L,) its rank (0 = top)

    @property
    def first_layer_with_answer(self) -> int | None:
        hits = np.flatnonzero(self.answer_rank == 0)
        return int(hits[0]) if hits.size else None

    def rows(self) -> list[dict]:
        out = []
        for la, name in enumerate(self.layers):
            row = {"layer": name, "p_answer": round(float(self.answer_prob[la]), 4),
                   "answer_rank": int(self.answer_rank[la]) + 1}
            for r, (t, p) in enumerate(zip(self.top_tokens[la], self.top_probs[la]), start=1):
                row[f"#{r}"] = f"{t} ({p:.2f})"
            out.append(row)
        return out


def logit_lens(model, text: str, *, step: int = 0, k: int = 5, task: str | None = None,
               ablations: dict | None = None) -> LogitLens:
    """Greedy-decode, then read step `step` (0 = the first generated token) from every decoder layer's output
    through the model's final linear layer (`generator`) and softmax."""
    if model.kind != "encoder-decoder":
        raise InputError(f"{model.name} has no decoder: the logit lens reads a decoder's layers.", key="lens_no_decoder",
                         model=model.name)
    kw = {"task": task} if task is not None else {}
    tr = model.trace(text, ablations=ablations, **kw) if ablations else model.trace(text, **kw)
    dec_in = tr.target_ids
    if not 0 <= step < len(dec_in):
        raise InputError(f"step {step} is outside the decoding (steps 0 to {len(dec_in) - 1}).", key="step_outside",
                         step=step, last=len(dec_in) - 1)
    src = torch.tensor([tr.source_ids], dtype=torch.long, device=model.device)
    tgt = torch.tensor([dec_in[: step + 1]], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        out = model.module(src, tgt, record=True, ablations=ablations)
        states = torch.stack([h[0, step] for h in out.decoder.hidden_states[1:]])  # (L, d) each layer's output
        probs = model.module.generator(states).float().softmax(-1)  # (L, V)
        final = int(out.logits[0, step].argmax())
        p, idx = probs.topk(min(k, probs.shape[-1]), dim=-1)
        rank = (probs > probs[:, final : final + 1]).sum(-1)
    tok = lambda i: model.tokenizer.id_to_token(int(i)) or f"#{int(i)}"  # noqa: E731
    return LogitLens(
        step, tuple(tok(i) for i in dec_in[: step + 1]), tok(final),
        tuple(f"Decoder layer {la}" for la in range(states.shape[0])),
        tuple(tuple(tok(i) for i in row) for row in idx.tolist()), _ro(_np(p)),
        _ro(_np(probs[:, final])), _ro(rank.cpu().numpy(), np.int64),
    )

