"""Head surgery: zero, mean-ablate or keep heads inside the forward, and the effects on an encoder or seq2seq-tiny."""


from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from model.blocks import Block
from model.errors import InputError
from model.run import ablate
from model.trace import BLOCKS

from ..frozen import ro, to_numpy
from .common import ABLATIONS, encoder_input, n_layers_heads, run_encoder

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


def ablations_for(model, heads: Iterable[HeadRef], mode: str = "zero", *, block: Block = "encoder",
                  rows: tuple[int, ...] | None = None) -> tuple:
    """Chosen heads -> a run request's edits (model/run.py ablate, per layer): (layer, head) is in `block`,
    (block, layer, head) names its own. With mode "keep", each layer that has a chosen head keeps only its chosen
    heads. The encoder (and a decoder-only model's one stack, numbered as the encoder) is the main stack (block
    None). rows: the batch rows the edits apply to (None: all)."""
    per: dict[tuple[str, int], set[int]] = {}
    for ref in heads:
        blk, layer, head = (block, *ref) if len(ref) == 2 else ref
        per.setdefault((str(blk), int(layer)), set()).add(int(head))
    try:
        return tuple(e for (blk, layer), hs in sorted(per.items()) for e in ablate(
            layer, hs, mode, n_heads=model.n_heads(blk), block=None if blk == "encoder" else blk, rows=rows))
    except ValueError as e:
        raise InputError(str(e), key="ablation_invalid", detail=e) from None


def ablatable_blocks(model) -> tuple[str, ...]:
    """The blocks whose heads can be ablated: the encoder (a decoder-only model's one stack is numbered as the
    encoder), and an encoder-decoder's decoder self-attention and cross-attention; an SSRU decoder (Bergamot) has no
    self-attention heads, so only its encoder and cross-attention."""
    if model.kind != "encoder-decoder":
        return BLOCKS[:1]
    ssru = model.config.decoder_mixer == "ssru"
    return tuple(b for b in BLOCKS if not (ssru and b == "decoder_self"))


def _check_heads(model, heads: Iterable[HeadRef], block: Block) -> list[HeadRef]:
    heads = list(heads)
    blocks = ablatable_blocks(model)
    for ref in heads:
        blk, layer, head = (block, *ref) if len(ref) == 2 else ref
        if blk not in blocks:
            raise InputError(f"{model.name} has no {blk!r} attention; it has {', '.join(blocks)}.", key="no_block",
                             model=model.name, block=repr(blk), blocks=", ".join(blocks))
        n_l, n_h = n_layers_heads(model, "encoder" if blk == "encoder" else "decoder")
        if not (0 <= layer < n_l and 0 <= head < n_h):
            raise InputError(f"There is no Layer {layer} · Head {head} in the {blk} of {model.name} "
                             f"({n_l} layers x {n_h} heads).", key="no_head", layer=layer, head=head, block=blk,
                             model=model.name, layers=n_l, heads=n_h)
    return heads


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
    out = run_encoder(model, inp, edits=ablations_for(model, heads, mode))
    return EncoderRun(text, inp.tokens, tuple(heads), mode, ro(to_numpy(out.hidden[0])),
                      ro(np.stack([to_numpy(a[0]) for a in out.self_attention])))


def compare_runs(before: EncoderRun, after: EncoderRun) -> EncoderEffect:
    if before.tokens != after.tokens:
        raise ValueError("the two runs are of different texts")
    hb, ha = before.hidden, after.hidden
    return EncoderEffect(after.tokens, after.heads, after.mode, ro(_cos(hb, ha)),
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
    base = baseline.hidden if baseline is not None else to_numpy(run_encoder(model, inp).hidden[0])  # (N, d)
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
        # row r ablates head part[r] (its own edits, on that row alone)
        edits = tuple(e for r, ref in enumerate(part) for e in ablations_for(model, [ref], mode, rows=(r,)))
        hid = to_numpy(run_encoder(model, inp, batch=len(part), edits=edits).hidden)  # (b, N, d)
        c = 1.0 - _cos(hid, base[None])  # (b, N)
        sl = slice(start, start + len(part))
        sent[sl] = 1.0 - _cos(sentence_embedding(hid), base_sent[None])
        tok[sl], tmax[sl], targ[sl] = c.mean(-1), c.max(-1), c.argmax(-1)
        if progress is not None:
            progress(min(1.0, (start + len(part)) / len(refs)))
    shape = (L, H)
    return EffectGrid(inp.tokens, mode, ro(sent.reshape(shape)), ro(tok.reshape(shape)),
                      ro(tmax.reshape(shape)), ro(targ.reshape(shape), np.int64))


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


def _topk(probs: torch.Tensor, tok: Callable[..., list], k: int) -> tuple[tuple[str, float], ...]:
    """tok: the model's token_texts (ids, missing) -> strings."""
    p, i = probs.topk(min(k, probs.shape[-1]))
    return tuple((t, float(v)) for v, t in zip(p.tolist(), tok(i.tolist(), "#{id}")))


def expected_answer(model, text: str, task: str | None) -> tuple[str, ...] | None:
    """The exact answer of a task model (seq2seq-tiny: copy / reverse / swap of the text tokens, then <eos>)."""
    if task is None or not model.abilities.tasks:
        return None
    from model.data import apply_task  # the training data's own definition of the tasks

    tokens = encoder_input(model, text, task=task).tokens
    return (*apply_task(task, list(tokens[1:-1])), *model.token_texts([model.eos_id]))


def decoder_effect(model, text: str, heads: Iterable[HeadRef], mode: str = "zero", *, task: str | None = None,
                   step: int = 0, k: int = 5) -> DecoderEffect:
    """Greedy-decode with and without the ablation (heads: (block, layer, head) with block "encoder",
    "decoder_self" or "cross"; (layer, head) means the encoder). The top-k at `step` are read from the model's
    logits after the normal run's prefix, with and without the ablation, so their difference is the ablation's."""
    if model.kind != "encoder-decoder":
        raise InputError(f"{model.name} has no decoder: use encoder_effect.", key="no_decoder", model=model.name)
    heads = _check_heads(model, heads, "encoder")
    abl = ablations_for(model, heads, mode)
    kw = {"task": task} if task is not None else {}
    before = model.trace(text, **kw)
    after = model.trace(text, edits=abl, **kw)
    dec_in = before.target_ids  # [<bos>, y1 ..] as the normal run decoded
    step = max(0, min(int(step), len(dec_in) - 1))
    src = torch.tensor([before.source_ids], dtype=torch.long, device=model.device)
    tgt = torch.tensor([dec_in[: step + 1]], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        p0 = model.module(src, tgt).logits[0, step].float().softmax(-1)
        p1 = model.module(src, tgt, edits=abl).logits[0, step].float().softmax(-1)
    tok = model.token_texts
    k = min(k, p0.shape[-1])
    ids = list(dict.fromkeys(p0.topk(k).indices.tolist() + p1.topk(k).indices.tolist()))
    compared = tuple((t, float(p0[i]), float(p1[i])) for t, i in zip(tok(ids, "#{id}"), ids))
    return DecoderEffect(
        tuple(before.source_tokens), task, tuple(heads), mode, expected_answer(model, text, task),
        tuple(before.meta["generated_tokens"]), tuple(after.meta["generated_tokens"]),
        before.meta["output_text"], after.meta["output_text"], step, _topk(p0, tok, k), _topk(p1, tok, k),
        compared,
    )


# ---- decoder-only (GPT-2): the next-token distribution and the greedy continuation ----------------------------------
def next_token_effect(model, text: str, heads: Iterable[HeadRef], mode: str = "zero", *, k: int = 5,
                      n_new: int = 8) -> DecoderEffect:
    """What ablating heads of a decoder-only model's causal stack ((layer, head)) does to its next-token
    distribution after `text` (top-k before and after, from the model's logits) and to its greedy continuation of
    `n_new` tokens (every step's forward ablated). Returned as a DecoderEffect: no task, step 0 = the next token."""
    if model.kind != "decoder":
        raise InputError(f"{model.name} is not a decoder-only model.", key="not_decoder_only", model=model.name)
    heads = _check_heads(model, heads, "encoder")  # its one stack, numbered as the encoder's
    abl = ablations_for(model, heads, mode)
    ids = model.encode_prompt(text).ids
    with torch.inference_mode():
        p0 = model.forward_ids(ids, last_only=True).logits[0, -1].float().softmax(-1)  # (V,)
        p1 = model.forward_ids(ids, last_only=True, edits=abl).logits[0, -1].float().softmax(-1)
    before = model.greedy_continue(text, n_new, 1)
    after = model.greedy_continue(text, n_new, 1, edits=abl)
    tok = model.token_texts
    k = min(k, p0.shape[-1])
    ids_k = list(dict.fromkeys(p0.topk(k).indices.tolist() + p1.topk(k).indices.tolist()))
    decode = model.detokenize
    return DecoderEffect(
        tuple(model.encode_prompt(text).tokens), None, tuple(heads), mode, None,
        tuple(s.choice.token for s in before), tuple(s.choice.token for s in after),
        decode([s.choice.id for s in before]), decode([s.choice.id for s in after]), 0, _topk(p0, tok, k),
        _topk(p1, tok, k), tuple((t, float(p0[i]), float(p1[i])) for t, i in zip(tok(ids_k, "#{id}"), ids_k)))
