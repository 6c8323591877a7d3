"""One entry point for every registered folder: `load_local(device, path, name)` checks the folder and
builds the family's model. Imports torch-heavy modules only when called."""

from __future__ import annotations

import os

import torch

from .folder import inspect


def load_local(device: torch.device, path: str | os.PathLike, name: str | None = None):
    """A LoadedModel for the Hugging Face-format folder `path`: EncoderModel, DecoderOnlyModel or Seq2SeqModel."""
    folder = inspect(path)
    name = name or folder.path.name
    if folder.kind == "encoder":
        from .encoders import load_encoder

        return load_encoder(folder, device, name)
    if folder.kind == "decoder":
        from .decoder_only import load_decoder

        return load_decoder(folder, device, name)
    from .seq2seq import load_seq2seq

    return load_seq2seq(folder, device, name)
