"""AttentionTrace: one result type for any model.

Attention arrays are float32 numpy of shape (layers, heads, query_len, key_len):
- encoder_attention        (L_enc, H, N, N)   encoder self-attention
- decoder_self_attention   (L_dec, H, T, T)   masked decoder self-attention (encoder-decoder only)
- cross_attention          (L_dec, H, T, N)   target rows x source columns
An SSRU decoder (Bergamot) has no self-attention: `decoder_self_attention` is None and `decoder_forget_gates`
(L_dec, T, d) holds its recurrence's forget gates.

A decoder-only model (GPT-2) has no encoder: its trace holds `decoder_self_attention` (L, H, N, N) over
the source tokens (the prompt) and `encoder_attention` is None.

Masks are boolean with the project convention True = may attend.
On request (`intermediates=True`) the trace also holds the per-layer hidden
states that the step-by-step view starts from; Q, K, V and outputs are
recomputed from those and the model's weights (see `analysis.stages`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .blocks import BLOCKS, Block

BLOCK_LABELS = {
    "encoder": "Encoder self-attention",
    "decoder_self": "Decoder self-attention",
    "cross": "Cross-attention (encoder-decoder)",
}


@dataclass
class AttentionTrace:
    model: str  # registry name, e.g. "minilm-l6"
    text: str  # the input as typed
    source_tokens: list[str]
    source_ids: list[int]
    source_special: list[bool]
    source_word_ids: list[int]  # word index per token, -1 for special tokens
    encoder_attention: np.ndarray | None  # (L, H, N, N) float32; None for a decoder-only model
    source_offsets: list[tuple[int, int]] = field(default_factory=list)
    target_tokens: list[str] | None = None
    target_ids: list[int] | None = None
    target_special: list[bool] | None = None
    decoder_self_attention: np.ndarray | None = None  # (L, H, T, T)
    cross_attention: np.ndarray | None = None  # (L, H, T, N)
    masks: dict[str, np.ndarray] = field(default_factory=dict)  # bool, True = may attend
    truncated: bool = False
    n_tokens_untruncated: int = 0
    encoder_hidden_states: np.ndarray | None = None  # (L+1, N, d) on request: input of each layer + final
    decoder_hidden_states: np.ndarray | None = None  # (L+1, T, d) on request
    decoder_forget_gates: np.ndarray | None = None  # (L, T, d): an SSRU decoder's forget gates (it has no self-attention)
    meta: dict = field(default_factory=dict)  # device, trained, task, output text, config ...
    source_type_ids: list[int] = field(default_factory=list)  # token type (segment) per token: 0 text, 1 its pair

    # ---- access -------------------------------------------------------
    @property
    def tokens(self) -> list[str]:
        return self.source_tokens

    @property
    def is_encoder_decoder(self) -> bool:
        return self.cross_attention is not None

    @property
    def is_decoder_only(self) -> bool:
        return self.encoder_attention is None and self.decoder_self_attention is not None

    @property
    def blocks(self) -> list[Block]:
        if self.is_decoder_only:
            return ["decoder_self"]
        if self.is_encoder_decoder:  # an SSRU decoder has no self-attention
            return [b for b in BLOCKS if b != "decoder_self" or self.decoder_self_attention is not None]
        return ["encoder"]

    def attention(self, block: Block = "encoder") -> np.ndarray:
        arr = {"encoder": self.encoder_attention, "decoder_self": self.decoder_self_attention,
               "cross": self.cross_attention}.get(block)
        if arr is None:
            raise ValueError(f"this trace has no {block!r} attention; it has {self.blocks}")
        return arr

    def axis_tokens(self, block: Block = "encoder") -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) labelling the rows and columns of `attention(block)`."""
        if block == "encoder":
            return self.source_tokens, self.source_tokens
        if block == "decoder_self":
            tgt = self.target_tokens if self.target_tokens is not None else self.source_tokens  # decoder-only
            return tgt, tgt
        return self.target_tokens, self.source_tokens

    def mask_of(self, block: Block, layer: int) -> np.ndarray | None:
        """The self-attention mask (True = may attend) that `layer` of the block applied: a sliding-window layer's
        band ("<block>_local", meta "local_layers") or the block's own; None where the trace holds none (an
        encoder, cross-attention)."""
        if layer in self.meta.get("local_layers", ()) and f"{block}_local" in self.masks:
            return self.masks[f"{block}_local"]
        return self.masks.get(block)

    def axis_special(self, block: Block = "encoder") -> tuple[list[bool], list[bool]]:
        if block == "encoder" or (block == "decoder_self" and self.target_tokens is None):
            return self.source_special, self.source_special
        tgt = self.target_special or [False] * len(self.target_tokens or [])
        return (tgt, tgt) if block == "decoder_self" else (tgt, self.source_special)

    @property
    def n_layers(self) -> int:
        return self.attention(self.blocks[0]).shape[0]

    @property
    def n_heads(self) -> int:
        return self.attention(self.blocks[0]).shape[1]

    def nbytes(self) -> int:
        total = 0
        for v in self.__dict__.values():
            if isinstance(v, np.ndarray):
                total += v.nbytes
        total += sum(m.nbytes for m in self.masks.values())
        return total

    # ---- save / load ---------------------------------------------------
    _ARRAYS = ("encoder_attention", "decoder_self_attention", "cross_attention",
               "encoder_hidden_states", "decoder_hidden_states", "decoder_forget_gates")
    _LISTS = ("source_ids", "source_special", "source_word_ids", "source_offsets", "source_type_ids",
              "target_ids", "target_special")

    def to_npz_dict(self) -> dict[str, np.ndarray]:
        d: dict[str, np.ndarray] = {
            "tokens": np.array(self.source_tokens, dtype=str),
            "source_tokens": np.array(self.source_tokens, dtype=str),
        }
        if self.target_tokens is not None:
            d["target_tokens"] = np.array(self.target_tokens, dtype=str)
        for name in self._ARRAYS:
            v = getattr(self, name)
            if v is not None:
                d[name] = np.asarray(v, dtype=np.float32)
        for name in self._LISTS:
            v = getattr(self, name)
            if v is not None and len(v):
                d[name] = np.asarray(v)
        for k, m in self.masks.items():
            d[f"mask_{k}"] = np.asarray(m, dtype=bool)
        d["meta_json"] = np.array(json.dumps(self._meta_all(), ensure_ascii=False))
        return d

    def _meta_all(self) -> dict:
        return {"model": self.model, "text": self.text, "truncated": self.truncated,
                "n_tokens_untruncated": self.n_tokens_untruncated, **self.meta}

    def save_npz(self, path: str | Path) -> Path:
        path = Path(path)
        np.savez_compressed(path, **self.to_npz_dict())
        return path

    def to_json_dict(self) -> dict:
        d = {"model": self.model, "text": self.text, "meta": self.meta, "truncated": self.truncated,
             "n_tokens_untruncated": self.n_tokens_untruncated,
             "source_tokens": self.source_tokens, "target_tokens": self.target_tokens,
             "masks": {k: np.asarray(v).astype(int).tolist() for k, v in self.masks.items()},
             "shape_convention": "(layers, heads, query_len, key_len)"}
        for name in self._LISTS:
            v = getattr(self, name)
            d[name] = [list(x) if isinstance(x, tuple) else x for x in v] if v is not None else None
        for name in self._ARRAYS:
            v = getattr(self, name)
            if v is not None:
                d[name] = np.round(np.asarray(v, dtype=np.float64), 6).tolist()
        return d

    def save_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_json_dict(), ensure_ascii=False))
        return path

    def save(self, path: str | Path) -> Path:
        """Save by extension: .npz or .json."""
        suffix = Path(path).suffix.lower()
        if suffix == ".npz":
            return self.save_npz(path)
        if suffix == ".json":
            return self.save_json(path)
        raise ValueError(f"unknown trace format {suffix!r}: use .npz or .json")

    @classmethod
    def load_npz(cls, path: str | Path) -> AttentionTrace:
        with np.load(path, allow_pickle=False) as z:  # never unpickle
            meta = json.loads(str(z["meta_json"]))
            get = lambda k: z[k] if k in z.files else None  # noqa: E731
            lst = lambda k: (z[k].tolist() if k in z.files else None)  # noqa: E731
            masks = {k[5:]: z[k] for k in z.files if k.startswith("mask_")}
            model, text = meta.pop("model"), meta.pop("text")
            truncated, n_untr = meta.pop("truncated"), meta.pop("n_tokens_untruncated")
            return cls(
                model=model, text=text,
                source_tokens=[str(t) for t in z["source_tokens"]],
                source_ids=lst("source_ids") or [],
                source_special=lst("source_special") or [],
                source_word_ids=lst("source_word_ids") or [],
                source_offsets=[tuple(o) for o in (lst("source_offsets") or [])],
                source_type_ids=lst("source_type_ids") or [],
                encoder_attention=get("encoder_attention"),
                target_tokens=[str(t) for t in z["target_tokens"]] if "target_tokens" in z.files else None,
                target_ids=lst("target_ids"),
                target_special=lst("target_special"),
                decoder_self_attention=get("decoder_self_attention"),
                cross_attention=get("cross_attention"),
                masks=masks, truncated=truncated, n_tokens_untruncated=n_untr,
                encoder_hidden_states=get("encoder_hidden_states"),
                decoder_hidden_states=get("decoder_hidden_states"),
                decoder_forget_gates=get("decoder_forget_gates"),
                meta=meta,
            )
