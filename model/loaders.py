"""Loaders for the registry's built-in models (weights from installed files only)."""

from __future__ import annotations

import torch

from .bert import BertEncoder
from .config import PRESETS
from .loaded import EncoderModel, Seq2SeqModel
from .noinit import no_random_init
from .tokenizer import TextTokenizer
from .transformer import Transformer
from .weights import load_minilm, minilm_dir


def load_minilm_l6(device: torch.device) -> EncoderModel:
    config = PRESETS["minilm-l6"]
    with no_random_init():  # every parameter is loaded below, strictly
        module = BertEncoder(config)
    tok_path = load_minilm(module)
    tok = TextTokenizer.from_file(tok_path, config.max_positions)
    return EncoderModel("minilm-l6", module, tok, device, trained=True,
                        description="all-MiniLM-L6-v2 (pretrained)")


def load_paper_base(device: torch.device) -> Seq2SeqModel:
    """The paper's base shapes with random weights from a fixed seed; it borrows
    MiniLM's WordPiece tokenizer (30522 entries), [CLS] as <bos> and [SEP] as <eos>."""
    config = PRESETS["paper-base"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = Transformer(config)
    tok = TextTokenizer.from_file(minilm_dir() / "tokenizer.json", config.max_positions)
    return Seq2SeqModel("paper-base", module, tok, device, trained=False, bos="[CLS]", eos="[SEP]",
                        max_new_tokens=16, description="untrained: random weights")
