"""BART and Marian folders on the project's encoder-decoder layers (model/layers.py): both are post-LN
like the paper. Their differences live in the embeddings and the output:

- BART: learned positions stored with an offset of 2 (row p + 2 is position p), LayerNorm on the embeddings
  (layernorm_embedding), embeddings times sqrt(d_model) when scale_embedding.
- Marian: sinusoidal positions in HF's layout (sines in the first half of the vector, cosines in the second,
  not interleaved), embeddings times sqrt(d_model), no embedding LayerNorm; decoding starts from <pad>.
- Both: logits = h E^T + final_logits_bias, E the shared token embedding.

The decoder's mask is look-ahead AND padding, but position 0 always stays visible (Marian starts with <pad>).
Notation: b batch, n target length, m source length, d d_model, V vocab.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..config import TransformerConfig
from ..embeddings import Embedding
from ..layers import Decoder, Encoder
from ..loaded import LoadedModel, Seq2SeqModel
from ..noinit import no_random_init
from ..transformer import Transformer
from .checkpoint import Checkpoint, load_state
from .configs import Fields, set_activation
from .folder import Folder
from .tokenizer import load_tokenizer

BART_POSITION_OFFSET = 2


def marian_sinusoids(n_positions: int, d: int) -> torch.Tensor:
    """(n, d) HF Marian table: column j uses frequency 10000^(-2 (j//2) / d); sin of the even columns' angles
    first (ceil(d/2) of them), then cos of the odd ones."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (n, 1)
    j = torch.arange(d, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / d)  # (n, d)
    return torch.cat([torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])], dim=1).float()


class HFSeq2Seq(Transformer):
    """The Transformer's interface (encode, decode, forward, greedy_decode) with HF's parameterisation:
    separate position tables, tied token embeddings and output, a bias on the logits."""

    def __init__(self, config: TransformerConfig, share_embeddings: bool = True):
        """`share_embeddings`: the encoder and decoder read one token table (a folder saved with
        tie_word_embeddings false by transformers 5 has one of its own for each; then the output is a third)."""
        nn.Module.__init__(self)  # Transformer.__init__ would draw a random init; the weights come from the folder
        self.config = config
        self.src_embed = Embedding(config)
        self.tgt_embed = Embedding(config)
        self.encoder = Encoder(config, config.n_encoder_layers)
        self.decoder = Decoder(config.decoder_config(), config.n_decoder_layers)
        self.generator = nn.Linear(config.d_model, config.vocab_size)  # bias = final_logits_bias
        if share_embeddings:
            self.tgt_embed.token.weight = self.src_embed.token.weight
        if config.tie_embeddings:
            self.generator.weight = self.src_embed.token.weight

    def decode(self, tgt, memory, src_mask, *, tgt_keep: torch.Tensor | None = None, **kw):
        """Transformer.decode with another default: without tgt_keep (the keys that are not padding, given by
        whoever padded a batch) every target token is a key, as transformers runs the decoder without a
        decoder_attention_mask: a <pad> id the model generated (Marian starts from <pad>, and a model may emit it)
        is a token like any other, so greedy decoding matches transformers'."""
        if tgt_keep is None:
            tgt_keep = torch.ones_like(tgt, dtype=torch.bool)  # (b, n)
        return super().decode(tgt, memory, src_mask, tgt_keep=tgt_keep, **kw)


def seq2seq_config(f: Fields) -> tuple[TransformerConfig, str, dict]:
    """(config, activation, special ids {start, eos}) for bart / marian."""
    bart = f.model_type == "bart"
    for name in ("normalize_before", "add_final_layer_norm", "add_bias_logits"):
        f.require(name, False, False)
    if bart:
        f.require("static_position_embeddings", False, False)
        f.require("extra_pos_embeddings", BART_POSITION_OFFSET, BART_POSITION_OFFSET)
        f.require("normalize_embedding", True, True)
    else:
        f.require("share_encoder_decoder_embeddings", True, True)
    d = f.int("d_model")
    heads = f.int("encoder_attention_heads")
    dec_heads = f.int("decoder_attention_heads")
    f.heads(d, heads, "encoder_attention_heads")
    f.heads(d, dec_heads, "decoder_attention_heads")
    vocab = f.int("vocab_size")
    if not bart and f.config.get("decoder_vocab_size") not in (None, vocab):
        f.unsupported("decoder_vocab_size", f.config["decoder_vocab_size"], f"equal to vocab_size ({vocab})")
    pad = f.int("pad_token_id", 1 if bart else 0, minimum=0)
    ids = {"start": f.optional_id("decoder_start_token_id"), "eos": f.optional_id("eos_token_id")}
    ids["start"] = pad if ids["start"] is None and not bart else ids["start"]
    for role, name in (("start", "decoder_start_token_id"), ("eos", "eos_token_id")):
        if ids[role] is None:
            f.bad(name, "is missing (decoding needs it)")
        if ids[role] >= vocab:
            f.bad(name, f"({ids[role]}) is not below vocab_size {vocab}")
    config = TransformerConfig(
        d_model=d, n_heads=heads, n_encoder_layers=f.int("encoder_layers"), n_decoder_layers=f.int("decoder_layers"),
        d_ff=f.int("encoder_ffn_dim"), d_ff_decoder=f.int("decoder_ffn_dim"), n_heads_decoder=dec_heads, dropout=0.0, vocab_size=vocab,
        max_positions=f.int("max_position_embeddings", 1024), activation="gelu", positional="learned",
        layer_norm_eps=1e-5, type_vocab_size=0, embedding_layer_norm=bart,
        scale_embeddings=f.flag("scale_embedding", not bart), tie_embeddings=f.flag("tie_word_embeddings", True),
        pad_id=pad)
    return config, f.activation("activation_function", "gelu" if bart else "swish"), ids


ATTN = {"self_attn": "self_attn", "encoder_attn": "cross_attn"}
NORMS = {"encoder": {"self_attn_layer_norm": "norm1", "final_layer_norm": "norm2"},
         "decoder": {"self_attn_layer_norm": "norm1", "encoder_attn_layer_norm": "norm2", "final_layer_norm": "norm3"}}


def seq2seq_state(ck: Checkpoint, config: TransformerConfig, bart: bool) -> dict[str, torch.Tensor]:
    d, V, P = config.d_model, config.vocab_size, config.max_positions
    token = ck.get("shared.weight" if ck.has("shared.weight") else "encoder.embed_tokens.weight", (V, d))

    def table(stack: str) -> torch.Tensor:
        """Tied (the usual case, one table saved): `shared`. Untied (transformers 5, tie_word_embeddings false):
        the stack's own table, saved under its own name."""
        own = None if config.tie_embeddings else ck.optional(f"{stack}.embed_tokens.weight", (V, d))
        return token if own is None else own

    bias = ck.optional("final_logits_bias", (1, V))
    s = {"src_embed.token.weight": table("encoder"), "tgt_embed.token.weight": table("decoder"),
         "generator.weight": token if config.tie_embeddings else ck.get("lm_head.weight", (V, d)),
         "generator.bias": bias[0] if bias is not None else torch.zeros(V)}
    for stack, embed in (("encoder", "src_embed"), ("decoder", "tgt_embed")):
        if bart:
            s[f"{embed}.position.weight"] = ck.get(f"{stack}.embed_positions.weight", (P + BART_POSITION_OFFSET, d))[
                BART_POSITION_OFFSET:]
            for p in ("weight", "bias"):
                s[f"{embed}.norm.{p}"] = ck.get(f"{stack}.layernorm_embedding.{p}", (d,))
        else:  # a fixed table: the checkpoint's copy when it has one
            table = ck.optional(f"{stack}.embed_positions.weight", (P, d))
            s[f"{embed}.position.weight"] = table if table is not None else marian_sinusoids(P, d)
        n_layers = config.n_encoder_layers if stack == "encoder" else config.n_decoder_layers
        ff = (config if stack == "encoder" else config.decoder_config()).d_ff
        for i in range(n_layers):
            src, dst = f"{stack}.layers.{i}.", f"{stack}.layers.{i}."
            w = lambda n, shape, src=src: ck.get(src + n + ".weight", shape)  # noqa: E731
            b = lambda n, size, src=src: ck.get(src + n + ".bias", (size,))  # noqa: E731
            for hf, ours in ATTN.items():
                if hf == "encoder_attn" and stack == "encoder":
                    continue
                s[dst + f"{ours}.in_proj.weight"] = torch.cat([w(f"{hf}.{p}_proj", (d, d)) for p in "qkv"])
                s[dst + f"{ours}.in_proj.bias"] = torch.cat([b(f"{hf}.{p}_proj", d) for p in "qkv"])
                s[dst + f"{ours}.out_proj.weight"], s[dst + f"{ours}.out_proj.bias"] = w(f"{hf}.out_proj", (d, d)), \
                    b(f"{hf}.out_proj", d)
            s[dst + "ffn.linear1.weight"], s[dst + "ffn.linear1.bias"] = w("fc1", (ff, d)), b("fc1", ff)
            s[dst + "ffn.linear2.weight"], s[dst + "ffn.linear2.bias"] = w("fc2", (d, ff)), b("fc2", d)
            for hf, ours in NORMS[stack].items():
                s[dst + f"{ours}.weight"], s[dst + f"{ours}.bias"] = w(hf, (d,)), b(hf, d)
    return s


class FolderSeq2SeqModel(Seq2SeqModel):
    """Seq2SeqModel whose decoder start and end ids come from config.json (BART </s>, Marian <pad>)."""

    def __init__(self, name, module, tokenizer, device, *, start_id: int, eos_id: int, description: str = "",
                 max_new_tokens: int = 64):
        LoadedModel.__init__(self, name, module, tokenizer, device, trained=True, description=description)
        self.bos_id, self.eos_id, self.max_new_tokens = start_id, eos_id, max_new_tokens


def build_seq2seq(folder: Folder) -> tuple[HFSeq2Seq, str, dict]:
    f = Fields(folder.config, folder.model_type, str(folder.path))
    config, act, ids = seq2seq_config(f)
    ck = Checkpoint(folder.weight_files, anchor="encoder.layers.0.self_attn.q_proj.weight")
    state = seq2seq_state(ck, config, folder.model_type == "bart")
    shared = torch.equal(state["src_embed.token.weight"], state["tgt_embed.token.weight"])
    with no_random_init():  # load_state is strict: every parameter is overwritten
        module = HFSeq2Seq(config, share_embeddings=shared)
    set_activation(module, act)
    load_state(module, state)
    return module, act, ids


def load_seq2seq(folder: Folder, device: torch.device, name: str) -> FolderSeq2SeqModel:
    module, act, ids = build_seq2seq(folder)
    c = module.config
    tok = load_tokenizer(folder.path, c.max_positions, c.vocab_size)
    scale = f", embeddings x sqrt({c.d_model}) = {math.sqrt(c.d_model):.1f}" if c.scale_embeddings else ""
    dec = c.decoder_config()

    def decoder(enc: int, own: int) -> str:  # the decoder's value where it differs from the encoder's
        return "" if own == enc else f" (decoder {own})"

    desc = (f"{folder.model_type} from {folder.path}: encoder-decoder, {c.n_encoder_layers} + {c.n_decoder_layers} "
            f"layers x {c.n_heads} heads{decoder(c.n_heads, dec.n_heads)}, d_model {c.d_model}, d_k {c.d_k}, {act} "
            f"FFN of {c.d_ff}{decoder(c.d_ff, dec.d_ff)}{scale}.")
    return FolderSeq2SeqModel(name, module, tok, device, start_id=ids["start"], eos_id=ids["eos"], description=desc)
