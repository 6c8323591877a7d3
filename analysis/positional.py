"""Positional-encoding lab numbers: the model's own sinusoidal table and position-to-position similarity.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Shapes: n positions, d d_model.
"""

from __future__ import annotations

import numpy as np

from model.positional import sinusoidal_table

from .frozen import freeze, readonly

MAX_POSITIONS = 2048
MAX_D_MODEL = 1024


def sinusoidal(n: int, d: int, layout: str = "interleaved") -> np.ndarray:
    """PE (n, d) float32 from the model's own formula; `layout` as model.positional.sinusoidal_table ("marian": a
    Bergamot translator's, the sines of every frequency then the cosines)."""
    if not (1 <= n <= MAX_POSITIONS and 2 <= d <= MAX_D_MODEL):
        raise ValueError(f"choose 1..{MAX_POSITIONS} positions and d_model 2..{MAX_D_MODEL}; got {n} x {d}")
    return readonly(sinusoidal_table(n, d, layout=layout).numpy().astype(np.float32))


def similarity(pe: np.ndarray, cosine: bool = False) -> np.ndarray:
    """(n, d) -> (n, n): S[i, j] = PE_i · PE_j, or cos(PE_i, PE_j)."""
    v = np.asarray(pe, dtype=np.float32)
    if cosine:
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return readonly(v @ v.T)


# ---- rotary positions (RoPE, Su et al. 2021), as model/attention.Rotary applies them -------------------------------
# Pair j of a head's k dimensions, (j, j + k/2) in transformers' rotate-half layout, turns by the angle
# pos * omega_j, omega_j = theta^(-2j / k). The sinusoidal table's column pair (2i, 2i + 1) runs at 1 / 10000^(2i / d):
# the same geometric family of frequencies (RoPE's base theta, the table's 10000).

MAX_ROPE_K = 512
MAX_ROPE_DISTANCE = 4096
ROPE_DEFAULTS = (100000.0, 64)  # SmolLM2's theta and head_dim, when the sidebar's model has no rotary positions


def _check_rope(theta: float, k: int) -> None:
    if not (theta > 1.0 and np.isfinite(theta)) or not (2 <= k <= MAX_ROPE_K and k % 2 == 0):
        raise ValueError(f"choose theta > 1 and an even head width 2..{MAX_ROPE_K}; got theta={theta}, k={k}")


def rope_frequencies(theta: float, k: int) -> np.ndarray:
    """(k/2,) float64: the angle per position (radians) of pair j = 0..k/2-1, theta^(-2j / k)."""
    _check_rope(theta, k)
    return readonly(theta ** (-np.arange(0, k, 2, dtype=np.float64) / k))


def sinusoidal_frequencies(d: int) -> np.ndarray:
    """(d/2,) float64: the angle per position of the sinusoidal table's column pair i (sin 2i, cos 2i+1),
    1 / 10000^(2i / d), the frequencies of model.positional.sinusoidal_table."""
    if not 2 <= d <= MAX_D_MODEL or d % 2:
        raise ValueError(f"choose an even d_model 2..{MAX_D_MODEL}; got {d}")
    return readonly(10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d))


def wavelengths(freqs: np.ndarray) -> np.ndarray:
    """Tokens per full turn of each pair: 2 pi / omega."""
    return readonly(2 * np.pi / np.asarray(freqs, dtype=np.float64))


def rope_rotate(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """x (..., n, k) at `positions` (n,) -> turned (..., n, k), float64, in the rotate-half layout of
    model/attention.Rotary: x * cos + rotate_half(x) * sin, the angle of dimension j and j + k/2 being pos * omega_j."""
    x = np.asarray(x, dtype=np.float64)
    k = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rope_frequencies(theta, k)  # (n, k/2)
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))
    half = k // 2
    rotated_half = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated_half * sin


def rope_test_vectors(k: int, kind: str = "random", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fixed q and k (k,): "random" (standard normal, seeded) or "constant" (all ones)."""
    if kind == "constant":
        return np.ones(k), np.ones(k)
    if kind != "random":
        raise ValueError(f"unknown vectors {kind!r}; use 'random' or 'constant'")
    rng = np.random.default_rng(seed)
    return rng.standard_normal(k), rng.standard_normal(k)


def relative_scores(q: np.ndarray, key: np.ndarray, theta: float, offsets, max_distance: int) -> dict:
    """The score R(m) q · R(n) k of q at position m = n + delta and k at position n = offset, for delta =
    0..max_distance and each absolute offset: {"distance" (D+1,), "offsets" (o,), "scores" (o, D+1),
    "max_diff": the largest gap between the offsets' curves} (RoPE makes it rounding only: the score depends on
    m - n alone)."""
    if not 1 <= max_distance <= MAX_ROPE_DISTANCE:
        raise ValueError(f"choose a distance 1..{MAX_ROPE_DISTANCE}; got {max_distance}")
    q, key = np.asarray(q, dtype=np.float64), np.asarray(key, dtype=np.float64)
    offsets = np.asarray(list(offsets), dtype=np.int64)
    delta = np.arange(max_distance + 1)
    scores = np.stack([(rope_rotate(q[None], n + delta, theta) * rope_rotate(key[None], np.array([n]), theta)).sum(-1)
                       for n in offsets])  # (o, D+1)
    return freeze({"distance": delta, "offsets": offsets, "scores": scores,
                   "max_diff": float(np.ptp(scores, axis=0).max()) if len(offsets) > 1 else 0.0})


def head_distance_scores(q_proj: np.ndarray, k_proj: np.ndarray, theta: float, max_distance: int, *,
                         scaling: float = 1.0, scalar: float | None = None) -> np.ndarray:
    """One query's projection q = x W_Q (k,) and the keys' projections K_proj (m, k), before RoPE, with the model's
    own rotary module (model/attention.Rotary, float32 tables as transformers builds them): (m, D+1), the scaled
    score (R(delta) q) · k_j / sqrt(k) of q placed delta = 0..max_distance tokens after key j. At key j's real
    distance it is the model's own scaled score Q_i · K_j / sqrt(k), whatever the absolute positions. `scaling`: the
    layer's linear RoPE scaling; `scalar`: the number under the score's root where it is not k (Gemma 3)."""
    import torch

    from model.attention import Rotary

    if not 1 <= max_distance <= MAX_ROPE_DISTANCE:
        raise ValueError(f"choose a distance 1..{MAX_ROPE_DISTANCE}; got {max_distance}")
    q = torch.tensor(np.asarray(q_proj), dtype=torch.float32)
    keys = torch.tensor(np.asarray(k_proj), dtype=torch.float32)
    k = q.shape[-1]
    rotary = Rotary(k, float(theta), max_distance + 1, scaling)
    with torch.inference_mode():
        turned = rotary(q.expand(max_distance + 1, k)[None, None])[0, 0]  # (D+1, k): q at positions 0..D
        scores = keys @ turned.T / np.sqrt(k if scalar is None else scalar)  # (m, D+1): k_j at position 0 not turned
    return readonly(scores.numpy().astype(np.float64))


def head_distance_profile(steps: dict, token: int, max_distance: int) -> dict:
    """From one rotary head's stages (analysis.stages.attention_steps: "Q_proj", "K_proj", "rope_theta", "scaled",
    "mask"): query row `token`'s projection against every key's, at every distance 0..max_distance
    (`head_distance_scores`), with the mean over all the sentence's keys (a key after the query, masked in the
    sentence, is placed before it here like every other: the head's distance pattern), each key's real distance
    token - j and the model's own scaled score there (keys it may attend), and the largest gap between the two
    ("check")."""
    if "rope_theta" not in steps:
        raise ValueError("this head has no rotary positions (no Q_proj / K_proj in its stages)")
    # what RoPE turns: the projections, or (Qwen3, Gemma 3) their RMSNorm
    q_in, k_in = (steps["Q_norm"], steps["K_norm"]) if "Q_norm" in steps else (steps["Q_proj"], steps["K_proj"])
    n = steps["Q_proj"].shape[0]
    if not 0 <= token < n:
        raise ValueError(f"token {token} out of range 0..{n - 1}")
    theta = float(steps["rope_theta"])
    scores = head_distance_scores(q_in[token], k_in, theta, max_distance, scaling=float(steps.get("rope_scaling", 1.0)),
                                  scalar=float(steps["scalar"]) if "scalar" in steps else None)  # (m, D+1)
    allowed = np.asarray(steps["mask"][token], dtype=bool)  # (m,)
    real = token - np.arange(k_in.shape[0])  # (m,) each key's distance from the query
    shown = allowed & (real >= 0) & (real <= max_distance)
    model = np.asarray(steps["scaled"][token], dtype=np.float64)  # (m,)
    at_real = scores[np.flatnonzero(shown), real[shown]]
    check = float(np.abs(at_real - model[shown]).max()) if shown.any() else 0.0
    return freeze({"scores": scores, "mean": scores.mean(0),
                   "distance": np.arange(max_distance + 1), "real": real, "model": model, "shown": shown,
                   "theta": theta, "k": int(q_in.shape[1]), "check": check})
