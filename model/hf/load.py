"""One pipeline for every Hugging Face-format folder: check the folder, read its config through the family's
record, build the one Transformer, load it through the family's weight table, read its tokenizer, wrap it by kind.
`transformers` is never imported."""

from __future__ import annotations

import math
import os

import torch

from ..loaded import DecoderOnlyModel, EncoderModel, LoadedModel, Seq2SeqModel
from ..noinit import no_random_init
from ..transformer import Transformer
from ..weights import Checkpoint, load_weights
from .configs import Fields
from .families import FAMILIES
from .folder import Folder, inspect
from .tokenizer import load_tokenizer


def build(folder: Folder) -> tuple[Transformer, dict]:
    """The folder's module with its weights, and its special ids by role (encoder-decoders: start, eos)."""
    family = FAMILIES[folder.model_type]
    config, ids = family.config(Fields(folder.config, folder.model_type, str(folder.path)))
    ck = Checkpoint(folder.weight_files, anchor=family.anchor)
    with no_random_init():  # load_weights is strict: every parameter is overwritten
        module = Transformer(config)
    load_weights(module, ck, family.table(config), name=folder.model_type)
    return module, ids


def describe(folder: Folder, module: Transformer) -> str:
    """One line on what the folder holds, from the config the model was built with."""
    c = module.config
    dec = c.decoder_config()

    def own(enc: int, value: int) -> str:  # the decoder's value where it differs from the encoder's
        return "" if value == enc else f" (decoder {value})"

    head = f"{folder.model_type} from {folder.path}: "
    if c.kind == "encoder":
        return head + (f"{c.n_encoder_layers} layers x {c.n_heads} heads, d_model {c.d_model}, d_k {c.d_k}, "
                       f"{c.activation} FFN of {c.d_ff}.")
    if c.kind == "decoder":
        return head + (f"decoder-only, {c.n_decoder_layers} layers x {c.n_heads} heads, d_model {c.d_model}, "
                       f"d_k {c.d_k}, causal self-attention.")
    scale = f", embeddings x sqrt({c.d_model}) = {math.sqrt(c.d_model):.1f}" if c.scale_embeddings else ""
    return head + (f"encoder-decoder, {c.n_encoder_layers} + {c.n_decoder_layers} layers x {c.n_heads} heads"
                   f"{own(c.n_heads, dec.n_heads)}, d_model {c.d_model}, d_k {c.d_k}, {c.activation} FFN of {c.d_ff}"
                   f"{own(c.d_ff, dec.d_ff)}{scale}.")


def load_local(device: torch.device, path: str | os.PathLike, name: str | None = None) -> LoadedModel:
    """A LoadedModel for the Hugging Face-format folder `path`: EncoderModel, DecoderOnlyModel or Seq2SeqModel."""
    folder = inspect(path)
    name = name or folder.path.name
    module, ids = build(folder)
    c = module.config
    tok = load_tokenizer(folder.path, c.max_positions, c.vocab_size, c.type_vocab_size)
    kw = dict(trained=True, description=describe(folder, module))
    if c.kind == "encoder":
        return EncoderModel(name, module, tok, device, **kw)
    if c.kind == "decoder":
        return DecoderOnlyModel(name, module, tok, device, **kw)
    return Seq2SeqModel(name, module, tok, device, bos_id=ids["start"], eos_id=ids["eos"], **kw)
