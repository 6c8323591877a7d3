"""BERT, RoBERTa, XLM-RoBERTa and DistilBERT folders on the project's own BertEncoder (model/bert.py):
all four are post-LN encoders with word + position (+ token-type) embeddings and an embedding LayerNorm.

RoBERTa-style position ids are padding_idx + 1 + (running count of non-pad tokens), pad tokens at row
padding_idx (`PaddedPositionEmbedding`). DistilBERT has no token types; its sinusoidal table (when
sinusoidal_pos_embds) is the paper's interleaved one and is stored in the checkpoint anyway.
"""

from __future__ import annotations

import torch
from torch import nn

from ..bert import BertEncoder
from ..config import TransformerConfig
from ..embeddings import Embedding
from ..loaded import EncoderModel
from ..noinit import no_random_init
from ..positional import sinusoidal_table
from .checkpoint import Checkpoint, load_state
from .configs import Fields, set_activation
from .folder import Folder
from .tokenizer import load_tokenizer


class PaddedPositionEmbedding(Embedding):
    """RoBERTa's embeddings: token i of a sequence sits at position pad + 1 + (non-pad tokens up to i)."""

    def __init__(self, config: TransformerConfig, n_rows: int):
        super().__init__(config)
        self.position = nn.Embedding(n_rows, config.d_model)  # the full table, rows 0..pad included
        self.offset = config.pad_id + 1

    def position_table(self, n: int) -> torch.Tensor:
        return self.position.weight[self.offset : self.offset + n]  # (n, d) rows of an unpadded input

    def parts(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        real = (ids != self.config.pad_id).long()  # (b, n)
        pos = torch.cumsum(real, dim=1) * real + self.config.pad_id  # (b, n) position ids
        x = self.token(ids)
        parts = {"token": x, "position": self.position(pos)}
        total = x + parts["position"]
        if self.token_type is not None:
            parts["token_type"] = self.token_type(type_ids if type_ids is not None else torch.zeros_like(ids))
            total = total + parts["token_type"]
        parts["sum"] = total
        return parts


def _bert_config(f: Fields) -> tuple[TransformerConfig, str, int]:
    """(config, activation, rows of the position table) for bert / roberta / xlm-roberta."""
    f.require("position_embedding_type", "absolute", "absolute")
    f.require("is_decoder", False, False)
    f.require("add_cross_attention", False, False)
    d, h = f.int("hidden_size"), f.int("num_attention_heads")
    f.heads(d, h, "num_attention_heads")
    rows = f.int("max_position_embeddings", 512)
    pad = f.int("pad_token_id", 0 if f.model_type == "bert" else 1, minimum=0)
    usable = rows - (pad + 1 if f.model_type != "bert" else 0)  # RoBERTa's first pad + 1 rows are never a token's
    if usable < 2:
        f.bad("max_position_embeddings", f"({rows}) leaves no positions after padding_idx {pad}")
    config = TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=f.int("num_hidden_layers"), n_decoder_layers=0,
        d_ff=f.int("intermediate_size"), dropout=0.0, vocab_size=f.int("vocab_size"), max_positions=usable,
        activation="gelu", positional="learned", layer_norm_eps=f.float("layer_norm_eps", 1e-12),
        type_vocab_size=f.int("type_vocab_size", 2, minimum=0), embedding_layer_norm=True,
        scale_embeddings=False, tie_embeddings=False, pad_id=pad)
    return config, f.activation("hidden_act", "gelu"), rows


def _distilbert_config(f: Fields) -> tuple[TransformerConfig, str, int]:
    d, h = f.int("dim", 768), f.int("n_heads", 12)
    f.heads(d, h, "n_heads")
    rows = f.int("max_position_embeddings", 512)
    config = TransformerConfig(
        d_model=d, n_heads=h, n_encoder_layers=f.int("n_layers", 6), n_decoder_layers=0,
        d_ff=f.int("hidden_dim", 4 * d), dropout=0.0, vocab_size=f.int("vocab_size", 30522), max_positions=rows,
        activation="gelu", positional="learned", layer_norm_eps=1e-12, type_vocab_size=0,
        embedding_layer_norm=True, scale_embeddings=False, tie_embeddings=False,
        pad_id=f.int("pad_token_id", 0, minimum=0))
    return config, f.activation("activation", "gelu"), rows


LAYER_NAMES = {  # our name -> HF name inside one layer, per family
    "bert": {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "norm1": "attention.output.LayerNorm",
             "linear1": "intermediate.dense", "linear2": "output.dense", "norm2": "output.LayerNorm"},
    "distilbert": {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "o": "attention.out_lin",
                   "norm1": "sa_layer_norm", "linear1": "ffn.lin1", "linear2": "ffn.lin2",
                   "norm2": "output_layer_norm"},
}


def encoder_state(ck: Checkpoint, config: TransformerConfig, model_type: str, rows: int) -> dict[str, torch.Tensor]:
    d, ff, V = config.d_model, config.d_ff, config.vocab_size
    distil = model_type == "distilbert"
    names, layer_root = (LAYER_NAMES["distilbert"], "transformer.layer") if distil else (LAYER_NAMES["bert"],
                                                                                          "encoder.layer")
    pos = ck.optional("embeddings.position_embeddings.weight", (rows, d))
    if pos is None:  # DistilBERT with sinusoidal_pos_embds: a fixed table a checkpoint may omit
        pos = sinusoidal_table(rows, d) if distil else ck.get("embeddings.position_embeddings.weight", (rows, d))
    s = {"embed.token.weight": ck.get("embeddings.word_embeddings.weight", (V, d)),
         "embed.position.weight": pos,
         "embed.norm.weight": ck.get("embeddings.LayerNorm.weight", (d,)),
         "embed.norm.bias": ck.get("embeddings.LayerNorm.bias", (d,))}
    if config.type_vocab_size:
        s["embed.token_type.weight"] = ck.get("embeddings.token_type_embeddings.weight", (config.type_vocab_size, d))
    for i in range(config.n_encoder_layers):
        src, dst = f"{layer_root}.{i}.", f"encoder.layers.{i}."
        w = lambda n, shape, src=src: ck.get(src + names[n] + ".weight", shape)  # noqa: E731
        b = lambda n, size, src=src: ck.get(src + names[n] + ".bias", (size,))  # noqa: E731
        s[dst + "self_attn.in_proj.weight"] = torch.cat([w(n, (d, d)) for n in "qkv"])  # (3d, d) [W_Q; W_K; W_V]
        s[dst + "self_attn.in_proj.bias"] = torch.cat([b(n, d) for n in "qkv"])
        s[dst + "self_attn.out_proj.weight"], s[dst + "self_attn.out_proj.bias"] = w("o", (d, d)), b("o", d)
        s[dst + "ffn.linear1.weight"], s[dst + "ffn.linear1.bias"] = w("linear1", (ff, d)), b("linear1", ff)
        s[dst + "ffn.linear2.weight"], s[dst + "ffn.linear2.bias"] = w("linear2", (d, ff)), b("linear2", d)
        for norm in ("norm1", "norm2"):
            s[dst + f"{norm}.weight"], s[dst + f"{norm}.bias"] = w(norm, (d,)), b(norm, d)
    return s


def build_encoder(folder: Folder) -> tuple[BertEncoder, str]:
    """The module with the folder's weights, and the activation name."""
    f = Fields(folder.config, folder.model_type, str(folder.path))
    config, act, rows = _distilbert_config(f) if folder.model_type == "distilbert" else _bert_config(f)
    ck = Checkpoint(folder.weight_files, anchor="embeddings.word_embeddings.weight")
    state = encoder_state(ck, config, folder.model_type, rows)
    with no_random_init():  # load_state is strict: every parameter is overwritten
        module = BertEncoder(config)
        if folder.model_type in ("roberta", "xlm-roberta"):
            module.embed = PaddedPositionEmbedding(config, rows)
    set_activation(module, act)
    load_state(module, state)
    return module, act


def load_encoder(folder: Folder, device: torch.device, name: str) -> EncoderModel:
    module, act = build_encoder(folder)
    c = module.config
    tok = load_tokenizer(folder.path, c.max_positions, c.vocab_size, c.type_vocab_size)
    desc = (f"{folder.model_type} from {folder.path}: {c.n_encoder_layers} layers x {c.n_heads} heads, "
            f"d_model {c.d_model}, d_k {c.d_k}, {act} FFN of {c.d_ff}.")
    return EncoderModel(name, module, tok, device, trained=True, description=desc)
