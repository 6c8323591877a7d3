"""One run request through the one Transformer: what to feed it, what to change inside its forward, what to keep.

    from model.run import HeadOutput, Keep, Residual, Resume, Run
    rec = loaded.run(Run(ids, edits=(HeadOutput(layer=3, head=1, op="zero"),), keep=Keep(heads=True)))
    rec.logits                  # (b, n, V), or (b, 1, V) with Keep(logits="last"), or None
    rec.main.layers[3].heads    # (b, h, n, k): every head's output Z_i of layer 3, after the edits
    rec.main.layers[3].attention  # (b, h, n, m)

It is the issue "One way in, one way through" (item 3): one request, typed per-layer records, the interventions
and the cache part of the request, nothing stored on a module. The request is carried out by the model's own forward
(Transformer.encode / decode and model/layers.py Stack): `compile` turns it into one StackPlan per stack, which the
stack reads layer by layer; there is no second forward path. The keyword arguments of encode / decode (`record`,
`hidden`, `upto`, `cache`) may be given beside a plan; head edits reach the forward only as a plan.

The edits (frozen; several may be given, applied in order):

- HeadOutput(layer, head, op, value, positions, rows, block): one head's output Z_i (b, h, n, k), before Concat and
  W_O: "zero" it, replace it by its "mean" over the positions, or "set" it to
  `value` (activation patching: Z_i of another run). positions: which query positions (None: all of them); rows:
  which batch rows (None: all), so that one batch can carry a different patch in each row.
- Residual(layer, value, positions, rows, block): set the residual stream entering `layer` (resid_pre; layer =
  n_layers is the stack's output, before the final norm).
- Resume(layer, hidden, block): begin the stack at `layer` with the residual stream `hidden` (b, n, d), what an
  earlier run kept as layer `layer`'s resid_pre: the layers below it are not run (they would give the same numbers),
  so a patch in layer L costs only the layers from L up.

Stop after a layer with `upto`; keep keys and values for generation with `cache` (a DecodeCache: `ids` then holds
only the new tokens, which follow the cached ones; an encoder-decoder's `target` does, and `memory` passes the encoder
output of its first step, so the source is encoded once). `block` is "encoder", "decoder_self" or "cross" (None: the main
stack, the encoder of an encoder model, else the decoder's self-attention); a Residual or Resume names a stack
("encoder" or the decoder, by "decoder_self" or "cross").

Notation: b batch, h heads, n query length, m key length, k d_k, d d_model, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from .blocks import Block

DecodeCache = Any  # model/transformer.py's DecodeCache (not imported: transformer.py imports this module)

HEAD_OPS = ("zero", "mean", "set")
BLOCKS = ("encoder", "decoder_self", "cross")


def _index(sel: Sequence[int] | None, size: int, device) -> torch.Tensor:
    """Selected indices (None: all of them) as a 1-D long tensor."""
    if sel is None:
        return torch.arange(size, device=device)
    return torch.as_tensor(list(sel), dtype=torch.long, device=device)


@dataclass(frozen=True)
class HeadOutput:
    """Change one head's output Z_i (the per-head `weights @ V`, (b, h, n, k), before Concat and W_O)."""

    layer: int
    head: int
    op: Literal["zero", "mean", "set"] = "zero"
    value: torch.Tensor | None = None  # "set": (p, k), or (r, p, k) one per selected row
    positions: tuple[int, ...] | None = None  # query positions of this call (None: every position)
    rows: tuple[int, ...] | None = None  # batch rows (None: every row)
    block: Block | None = None  # "encoder" | "decoder_self" | "cross"; None: the main stack

    def __post_init__(self) -> None:
        if self.op not in HEAD_OPS:
            raise ValueError(f"unknown head op {self.op!r}; use one of {HEAD_OPS}")
        if (self.op == "set") != (self.value is not None):
            raise ValueError("a value is given with op='set', and only then")
        if self.block is not None and self.block not in BLOCKS:
            raise ValueError(f"unknown block {self.block!r}; use one of {BLOCKS}")

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        """z (b, h, n, k) -> z with this head changed, in place (the caller passes its own copy)."""
        b, h, n, _ = z.shape
        if not 0 <= self.head < h:
            raise ValueError(f"head {self.head} out of range 0..{h - 1}")
        r = _index(self.rows, b, z.device)[:, None]  # (r, 1)
        p = _index(self.positions, n, z.device)[None, :]  # (1, p)
        if self.op == "zero":
            z[r, self.head, p] = 0.0
        elif self.op == "mean":  # each row's mean over all its positions
            z[r, self.head, p] = z[r[:, 0], self.head].mean(dim=1)[:, None, :]
        else:
            z[r, self.head, p] = self.value.to(z)  # (p, k) or (r, p, k), broadcast over (r, p)
        return z


@dataclass(frozen=True)
class Residual:
    """Set the residual stream entering `layer` (b, n, d) at some positions and rows."""

    layer: int
    value: torch.Tensor  # (p, d) or (r, p, d)
    positions: tuple[int, ...] | None = None
    rows: tuple[int, ...] | None = None
    block: Block | None = None

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        r = _index(self.rows, x.shape[0], x.device)[:, None]
        p = _index(self.positions, x.shape[1], x.device)[None, :]
        x[r, p] = self.value.to(x)
        return x


@dataclass(frozen=True)
class Resume:
    """Begin the stack at `layer` with this residual stream (b, n, d): the layers below are not run."""

    layer: int
    hidden: torch.Tensor
    block: Block | None = None


Edit = HeadOutput | Residual | Resume
ABLATIONS = ("zero", "mean", "keep")


def ablate(layer: int, heads, mode: str = "zero", *, n_heads: int | None = None, block: Block | None = None,
           rows: tuple[int, ...] | None = None) -> tuple[HeadOutput, ...]:
    """Head surgery on one attention sublayer as edits: "zero" the chosen heads' Z_i, replace each by its "mean"
    over the positions, or "keep" only them (every other head of the layer zeroed: n_heads needed). W_O's bias b_O
    is untouched. rows: the batch rows it applies to (None: all)."""
    if mode not in ABLATIONS:
        raise ValueError(f"unknown ablation {mode!r}; use one of {ABLATIONS}")
    heads = sorted(set(heads))
    if mode == "keep":
        if n_heads is None:
            raise ValueError("'keep' needs the layer's n_heads")
        heads, mode = [h for h in range(n_heads) if h not in heads], "zero"
    return tuple(HeadOutput(layer, h, mode, rows=rows, block=block) for h in heads)


@dataclass(frozen=True)
class Keep:
    """What the record keeps besides each layer's attention weights (always there: the forward makes them)."""

    heads: bool = False  # each layer's per-head outputs Z (b, h, n, k), after the edits
    sublayers: bool = False  # each layer's resid_pre, attn_out (after W_O, with its bias) and mlp_out, (b, n, d)
    hidden: bool = False  # the L + 1 residual states of each stack (StackOutput.hidden_states)
    detail: bool | frozenset[int] = False  # every stage of these layers (True: all), the `record` of model/layers.py
    logits: Literal["all", "last", "none"] = "all"


@dataclass(frozen=True)
class Run:
    """One request. ids (n,) or (b, n): the source (an encoder's) or the tokens (a decoder-only model's); target
    (b, T): an encoder-decoder's decoder input (teacher forcing)."""

    ids: Any  # a list of ids, or a (b, n) / (n,) long tensor
    target: Any = None
    type_ids: torch.Tensor | None = None  # (b, n) token types (BERT family)
    keep_mask: torch.Tensor | None = None  # (b, n) which source tokens are real (a padded batch)
    target_keep: torch.Tensor | None = None  # (b, T)
    edits: tuple[Edit, ...] = ()
    keep: Keep = field(default_factory=Keep)
    upto: int | None = None  # stop after this layer of the last stack run (no logits then)
    cache: DecodeCache | None = None  # incremental decoding: `ids` (decoder-only) or `target` holds the new tokens
    memory: Any = None  # an encoder-decoder's encoder output from an earlier run (Record.encoder.output), reused


# ---- the typed record -----------------------------------------------------------------------------------------------
@dataclass
class LayerRecord:
    """One layer of a run, as kept (None: not asked for, or not there)."""

    attention: torch.Tensor | None  # (b, h, n, m) self-attention weights (None: an SSRU)
    cross: torch.Tensor | None = None  # (b, h, n, m_src) cross-attention weights
    heads: torch.Tensor | None = None  # (b, h, n, k) Z after the edits (self-attention)
    resid_pre: torch.Tensor | None = None  # (b, n, d) what the layer read
    attn_out: torch.Tensor | None = None  # (b, n, d) the self-attention sublayer's output (Concat(Z) W_O + b_O)
    mlp_out: torch.Tensor | None = None  # (b, n, d) the Feed Forward's output
    detail: dict | None = None  # every stage (Keep.detail): model/layers.py's record


@dataclass
class StackRecord:
    layers: dict[int, LayerRecord]  # by layer index (a resumed stack starts at its Resume layer)
    hidden: torch.Tensor  # (b, n, d) the residual stream after the last layer run, before the final norm
    final: torch.Tensor | None  # (b, n, d) what the output projection reads (final norm applied); None with upto
    mask: torch.Tensor | None  # the self-attention mask applied (True = may attend)
    hidden_states: list[torch.Tensor]  # Keep.hidden: resid_pre of every layer run, then `hidden`
    output: Any  # the stack's StackOutput (model/layers.py), for code written before this request


@dataclass
class Record:
    logits: torch.Tensor | None  # (b, n, V) or (b, 1, V)
    encoder: StackRecord | None
    decoder: StackRecord | None
    cache: DecodeCache | None = None

    @property
    def main(self) -> StackRecord:
        """The stack a page shows first: the encoder, or a decoder-only model's decoder."""
        return self.encoder if self.encoder is not None else self.decoder


# ---- a request, compiled per stack -------------------------------------------------------------------------------
class HeadEdits:
    """Every head edit of one attention sublayer as the one callable z -> z that the attention applies to the
    per-head outputs (model/attention.py: `ablation(stages.output)`)."""

    def __init__(self, edits: tuple[HeadOutput, ...]):
        self.edits = edits

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        z = z.clone()
        # consecutive whole-head zeroings of the same rows are one assignment (head surgery's "keep" zeroes every
        # other head of the layer); any other edit runs on its own, in order
        run: list[HeadOutput] = []
        for e in self.edits:
            if e.op == "zero" and e.positions is None and (not run or run[0].rows == e.rows):
                run.append(e)
                continue
            _zero_heads(z, run)
            run = [e] if e.op == "zero" and e.positions is None else []
            if not run:
                e.apply(z)
        _zero_heads(z, run)
        return z


def _zero_heads(z: torch.Tensor, edits: list[HeadOutput]) -> None:
    """Zero the heads of `edits` (whole-head "zero" edits of the same rows) in place: what each one's apply does."""
    if len(edits) == 1:
        edits[0].apply(z)
    elif edits:
        h = z.shape[1]
        heads = [e.head for e in edits]
        if not all(0 <= i < h for i in heads):
            raise ValueError(f"head {next(i for i in heads if not 0 <= i < h)} out of range 0..{h - 1}")
        r = _index(edits[0].rows, z.shape[0], z.device)[:, None]  # (r, 1)
        z[r, torch.as_tensor(heads, device=z.device)[None, :]] = 0.0


@dataclass(frozen=True)
class StackPlan:
    """A request as one stack reads it (model/layers.py Stack.forward, `plan=`)."""

    heads: dict[int, dict[str, tuple[HeadOutput, ...]]] = field(default_factory=dict)  # layer -> {"self"|"cross": ...}
    residual: dict[int, tuple[Residual, ...]] = field(default_factory=dict)
    resume: Resume | None = None
    keep: Keep = field(default_factory=Keep)

    @property
    def start(self) -> int:
        return 0 if self.resume is None else self.resume.layer

    def before(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """The residual stream entering `layer`, with this plan's Residual edits applied."""
        for e in self.residual.get(layer, ()):
            x = e.apply(x)
        return x

    def ablation(self, layer: int) -> dict | None:
        """The layer's {"self" | "cross": HeadEdits} (None: no head edit there)."""
        mine = self.heads.get(layer)
        return {kind: HeadEdits(edits) for kind, edits in mine.items()} if mine else None

    def layer_record(self, x: torch.Tensor, attn: dict) -> LayerRecord | None:
        """What to keep of one layer (x: what it read; attn: its sublayers' results, model/layers.py Layer)."""
        k = self.keep
        if not (k.heads or k.sublayers):
            return None
        s = attn["self"]
        return LayerRecord(attention=s.weights, cross=attn["cross"].weights if "cross" in attn else None,
                           heads=getattr(s, "heads", None) if k.heads else None,
                           resid_pre=x if k.sublayers else None, attn_out=s.output if k.sublayers else None,
                           mlp_out=attn.get("ffn") if k.sublayers else None)


def _stack_of(block: Block | None, main: Block) -> tuple[str, str]:
    """(stack, attention kind) of a block name: "encoder" -> ("encoder", "self"), "decoder_self" -> ("decoder",
    "self"), "cross" -> ("decoder", "cross"); None is the main block."""
    block = block or main
    return ("encoder", "self") if block == "encoder" else ("decoder", "cross" if block == "cross" else "self")


def compile_plans(edits: tuple[Edit, ...], keep: Keep, main: str, n_layers: dict[str, int]) -> dict[str, StackPlan]:
    """The request's edits per stack ("encoder", "decoder"), each checked against the stack's layers."""
    heads: dict[str, dict[int, dict[str, list[HeadOutput]]]] = {}
    residual: dict[str, dict[int, list[Residual]]] = {}
    resume: dict[str, Resume] = {}
    for e in edits:
        stack, kind = _stack_of(e.block, main)
        if stack not in n_layers:
            raise ValueError(f"the model has no {stack} for {type(e).__name__}")
        top = n_layers[stack] + (1 if isinstance(e, Residual) else 0)
        if not 0 <= e.layer < top:
            raise ValueError(f"layer {e.layer} out of range 0..{top - 1} for the {stack}")
        if isinstance(e, HeadOutput):
            heads.setdefault(stack, {}).setdefault(e.layer, {}).setdefault(kind, []).append(e)
        elif isinstance(e, Residual):
            residual.setdefault(stack, {}).setdefault(e.layer, []).append(e)
        elif isinstance(e, Resume):
            if stack in resume:
                raise ValueError(f"one Resume per stack ({stack})")
            resume[stack] = e
        else:
            raise TypeError(f"not an edit: {e!r}")
    return {stack: StackPlan(
        heads={la: {k: tuple(v) for k, v in kinds.items()} for la, kinds in heads.get(stack, {}).items()},
        residual={la: tuple(v) for la, v in residual.get(stack, {}).items()}, resume=resume.get(stack), keep=keep)
        for stack in n_layers}


def plans_for(module, edits: tuple[Edit, ...] = (), keep: Keep | None = None) -> dict[str, StackPlan]:
    """A module's edits (and what to keep) compiled once per stack, {"encoder"?: StackPlan, "decoder"?: ...}."""
    cfg = module.config
    n_layers = {k: v for k, v in (("encoder", cfg.n_encoder_layers), ("decoder", cfg.n_decoder_layers)) if v}
    main = "encoder" if module.encoder is not None else "decoder_self"
    return compile_plans(tuple(edits), keep or Keep(), main, n_layers)


def _ids(x, device) -> torch.Tensor | None:
    if x is None:
        return None
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.long)
    return (t[None] if t.dim() == 1 else t).to(device)


def _stack_record(out, plan: StackPlan) -> StackRecord:
    layers = dict(out.kept)
    start = plan.start
    for j, w in enumerate(out.self_attention or [None] * len(out.forget_gates)):
        i = start + j
        rec = layers.get(i) or LayerRecord(attention=w)
        if i in out.records:
            rec.detail = out.records[i]
        if rec.cross is None and j < len(out.cross_attention):
            rec.cross = out.cross_attention[j]
        layers[i] = rec
    return StackRecord(layers=layers, hidden=out.hidden, final=out.final, mask=out.mask,
                       hidden_states=out.hidden_states, output=out)


def execute(module, run: Run) -> Record:
    """Carry out `run` on a Transformer (model/transformer.py) through its one forward. Call under
    torch.inference_mode() (LoadedModel.run does)."""
    device = next(module.parameters()).device
    plans = plans_for(module, run.edits, run.keep)
    k = run.keep
    detail = k.detail if isinstance(k.detail, bool) else set(k.detail)
    ids, target = _ids(run.ids, device), _ids(run.target, device)
    enc = dec = None
    if module.encoder is not None:
        last = module.decoder is None or target is None
        enc = run.memory if run.memory is not None else module.encode(
            ids, run.type_ids, run.keep_mask, record=detail, hidden=k.hidden, upto=run.upto if last else None,
            plan=plans["encoder"])
        if not last:
            dec = module.decode(target, enc, run.target_keep, record=detail, hidden=k.hidden, upto=run.upto,
                                cache=run.cache, plan=plans["decoder"])
    else:
        dec = module.decode(ids, None, run.keep_mask, record=detail, hidden=k.hidden, upto=run.upto,
                            cache=run.cache, plan=plans["decoder"])
    logits = None
    if dec is not None and dec.final is not None and k.logits != "none":
        logits = module.generator(dec.final[:, -1:] if k.logits == "last" else dec.final)
    return Record(logits, None if enc is None else _stack_record(enc, plans["encoder"]),
                  None if dec is None else _stack_record(dec, plans["decoder"]), run.cache)
