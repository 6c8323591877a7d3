"""The source of every Hugging Face-format folder: check the folder, read its config through the family's record,
its weights through the family's weight table, its tokenizer; model/source.py builds it and wraps it by kind.
`transformers` is never imported."""

from __future__ import annotations

import math
import os

import torch

from ..config import TransformerConfig
from ..loaded import LoadedModel
from ..source import Source, build
from ..weights import Checkpoint
from .configs import Fields
from .families import FAMILIES
from .folder import inspect
from .tokenizer import load_tokenizer


def describe(where: str, c: TransformerConfig) -> str:
    """One line on what the folder holds, from the config the model was built with."""
    dec = c.decoder_config()
    own = lambda enc, value: "" if value == enc else f" (decoder {value})"  # noqa: E731 - the decoder's, if its own
    if c.kind == "encoder":
        return where + (f"{c.n_encoder_layers} layers x {c.n_heads} heads, d_model {c.d_model}, d_k {c.d_k}, "
                        f"{c.activation} FFN of {c.d_ff}.")
    if c.kind == "decoder":
        return where + (f"decoder-only, {c.n_decoder_layers} layers x {c.n_heads} heads, d_model {c.d_model}, "
                        f"d_k {c.d_k}, causal self-attention.")
    scale = f", embeddings x sqrt({c.d_model}) = {math.sqrt(c.d_model):.1f}" if c.scale_embeddings else ""
    return where + (f"encoder-decoder, {c.n_encoder_layers} + {c.n_decoder_layers} layers x {c.n_heads} heads"
                    f"{own(c.n_heads, dec.n_heads)}, d_model {c.d_model}, d_k {c.d_k}, {c.activation} FFN of {c.d_ff}"
                    f"{own(c.d_ff, dec.d_ff)}{scale}.")


def folder_source(path: str | os.PathLike, name: str | None = None) -> Source:
    """The source of the Hugging Face-format folder `path` (inspected now: no weights are read)."""
    folder = inspect(path)
    family = FAMILIES[folder.model_type]

    def config(r) -> TransformerConfig:
        config, r.kept["ids"] = family.config(Fields(folder.config, folder.model_type, str(folder.path)))
        return config

    def ids(r) -> dict:  # encoder-decoders: decoding's start and end
        ids = r.kept["ids"]
        return {"bos_id": ids["start"], "eos_id": ids["eos"]} if r.config.kind == "encoder-decoder" else {}

    return Source(
        name or folder.path.name, {"config": folder.path / "config.json", "tokenizer": folder.path / "tokenizer.json"},
        config=config, weights=lambda r: Checkpoint(folder.weight_files, anchor=family.anchor),
        table=lambda r: family.table(r.config), ignored=lambda r: family.ignored(r.file),
        tokenizer=lambda r: load_tokenizer(folder.path, r.config.max_positions, r.config.vocab_size,
                                           r.config.type_vocab_size),
        ids=ids, description=lambda r: describe(f"{folder.model_type} from {folder.path}: ", r.config))


def load_local(device: torch.device, path: str | os.PathLike, name: str | None = None) -> LoadedModel:
    """A LoadedModel for the Hugging Face-format folder `path`: EncoderModel, DecoderOnlyModel or Seq2SeqModel."""
    return build(folder_source(path, name), device)
