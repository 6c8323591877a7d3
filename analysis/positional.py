"""Positional-encoding lab numbers: the model's own sinusoidal table and position-to-position similarity.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Shapes: n positions, d d_model.
"""

from __future__ import annotations

import numpy as np

from model.positional import sinusoidal_table

from .frozen import readonly

MAX_POSITIONS = 2048
MAX_D_MODEL = 1024


def sinusoidal(n: int, d: int) -> np.ndarray:
    """PE (n, d) float32 from the model's own formula."""
    if not (1 <= n <= MAX_POSITIONS and 2 <= d <= MAX_D_MODEL):
        raise ValueError(f"choose 1..{MAX_POSITIONS} positions and d_model 2..{MAX_D_MODEL}; got {n} x {d}")
    return readonly(sinusoidal_table(n, d).numpy().astype(np.float32))


def similarity(pe: np.ndarray, cosine: bool = False) -> np.ndarray:
    """(n, d) -> (n, n): S[i, j] = PE_i · PE_j, or cos(PE_i, PE_j)."""
    v = np.asarray(pe, dtype=np.float32)
    if cosine:
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return readonly(v @ v.T)
