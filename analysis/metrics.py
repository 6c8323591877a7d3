"""Pure numpy transforms and per-head metrics of attention (no plotting, no Streamlit).

Shapes: attention stacks are (L, H, n, m): L layers, H heads, n query rows, m key columns; every row sums to 1.

Transforms the explorer composes (in this order: mode, then hide specials, then merge words):
- head_average:   mean over heads -> (L, 1, n, m).
- rollout:        attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", eq. for
                  raw-attention rollout): per layer A' = 0.5 * mean_h(A) + 0.5 * I, rows renormalised, then
                  R_0 = A'_0 and R_l = A'_l @ R_{l-1}; R_l says how much each input token flows to each position
                  of layer l's output. Self-attention only (n == m).
- drop_special:   remove [CLS]/[SEP] rows and columns and renormalise each row to sum to 1 again.
- merge_words:    subword pieces -> words. Attention TO a word is the sum over its pieces (mass is preserved);
                  attention FROM a word is the mean over its pieces (rows still sum to 1).
Metrics per head (each (L, H)): entropy in bits (mean over rows of -sum p log2 p), mass on special key tokens,
mass on self / previous / next token, and mean attention distance sum_j A[i, j] |i - j| (mean over rows).
"""

from __future__ import annotations

import numpy as np

from model.tokenizer import piece_text

# the head metrics, by key (their names are in the catalogue: ex.metric.<key>)
METRICS = ("entropy", "special", "self", "prev", "next", "distance")


# ---- transforms -----------------------------------------------------------------------------------------------
def renormalise(att: np.ndarray) -> np.ndarray:
    """Rows rescaled to sum to 1; all-zero rows stay zero."""
    s = att.sum(axis=-1, keepdims=True)
    return np.divide(att, s, out=np.zeros_like(att), where=s > 0)


def drop_special(att: np.ndarray, row_special, col_special) -> tuple[np.ndarray, list[int], list[int]]:
    """(..., n, m) -> (..., n', m') without special rows/columns, rows renormalised; returns kept indices too."""
    rows = [i for i, s in enumerate(row_special) if not s]
    cols = [j for j, s in enumerate(col_special) if not s]
    if not rows or not cols:  # nothing but specials: keep everything rather than show an empty matrix
        return att, list(range(att.shape[-2])), list(range(att.shape[-1]))
    sub = att[..., rows, :][..., :, cols]
    return renormalise(sub), rows, cols


def word_units(word_ids) -> list[list[int]]:
    """Token indices grouped into units in order: tokens sharing a word id form one unit; -1 (special) stand alone."""
    units: list[list[int]] = []
    seen: dict[int, int] = {}
    for i, w in enumerate(word_ids):
        if w < 0 or w not in seen:
            if w >= 0:
                seen[w] = len(units)
            units.append([i])
        else:
            units[seen[w]].append(i)
    return units


def merge_matrix(units: list[list[int]], n: int, *, mean: bool) -> np.ndarray:
    """(units, n) pooling matrix: row u has 1 (sum) or 1/len (mean) on the tokens of unit u."""
    p = np.zeros((len(units), n), dtype=np.float32)
    for u, idx in enumerate(units):
        p[u, idx] = 1.0 / len(idx) if mean else 1.0
    return p


def merge_words(att: np.ndarray, row_units: list[list[int]], col_units: list[list[int]]) -> np.ndarray:
    """(..., n, m) -> (..., U_r, U_c): mean over the pieces of a query word, sum over the pieces of a key word."""
    pr = merge_matrix(row_units, att.shape[-2], mean=True)  # (U_r, n)
    pc = merge_matrix(col_units, att.shape[-1], mean=False)  # (U_c, m)
    return (pr @ att @ pc.T).astype(np.float32)


def unit_labels(tokens: list[str], units: list[list[int]]) -> list[str]:
    """A word's label is its pieces joined, with the subword marks removed (WordPiece '##', SentencePiece '▁')."""
    return ["".join(piece_text(tokens[i], first=k == 0) for k, i in enumerate(u)) for u in units]


def head_average(att: np.ndarray) -> np.ndarray:
    """(L, H, n, m) -> (L, 1, n, m)."""
    return att.mean(axis=1, keepdims=True)


def residual_attention(att: np.ndarray) -> np.ndarray:
    """(L, H, n, n) -> (L, n, n) float64: per layer 0.5 * mean over heads + 0.5 * I (the residual connection), rows
    renormalised: the one formula under rollout and attention flow."""
    att = np.asarray(att)
    if att.ndim != 4 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"needs square self-attention (L, H, n, n), got shape {att.shape}")
    n = att.shape[-1]
    a = 0.5 * att.mean(axis=1, dtype=np.float64) + 0.5 * np.eye(n)[None]
    return a / a.sum(axis=-1, keepdims=True)


def rollout(att: np.ndarray) -> np.ndarray:
    """(L, H, n, n) -> (L, n, n): attention rollout up to each layer (Abnar & Zuidema 2020)."""
    a = residual_attention(att)  # (L, n, n)
    out = np.empty(a.shape, dtype=np.float32)
    r = np.eye(a.shape[-1], dtype=np.float64)
    for layer in range(a.shape[0]):
        r = a[layer] @ r
        out[layer] = r
    return out


# ---- per-head metrics -------------------------------------------------------------------------------------------
def head_metrics(att: np.ndarray, col_special=None, *, square: bool | None = None) -> dict[str, np.ndarray]:
    """Each metric as an (L, H) float array. Positional metrics (self / prev / next / distance) need the rows and
    columns to be the same sequence (`square`); otherwise they are NaN (e.g. cross-attention)."""
    att = np.asarray(att, dtype=np.float32)
    L, H, n, m = att.shape
    square = (n == m) if square is None else square
    p = np.clip(att, 1e-12, 1.0)
    out = {"entropy": -(att * np.log2(p)).sum(-1).mean(-1)}  # (L, H)
    if col_special is not None and any(col_special):
        out["special"] = att[..., np.asarray(col_special, dtype=bool)].sum(-1).mean(-1)
    else:
        out["special"] = np.zeros((L, H), dtype=np.float32)
    nan = np.full((L, H), np.nan, dtype=np.float32)
    if square:
        out["self"] = np.diagonal(att, axis1=-2, axis2=-1).mean(-1)
        out["prev"] = np.diagonal(att, offset=-1, axis1=-2, axis2=-1).mean(-1) if n > 1 else nan
        out["next"] = np.diagonal(att, offset=1, axis1=-2, axis2=-1).mean(-1) if n > 1 else nan
        dist = np.abs(np.arange(n)[:, None] - np.arange(m)[None, :]).astype(np.float32)  # (n, m)
        out["distance"] = (att * dist).sum(-1).mean(-1)
    else:
        out.update(self=nan, prev=nan, next=nan, distance=nan)
    return {k: np.asarray(v, dtype=np.float32) for k, v in out.items()}


def metrics_rows(metrics: dict[str, np.ndarray]) -> list[dict]:
    """One dict per head (layer, head, then each metric by key, rounded to 3 decimals), for a sortable table."""
    L, H = next(iter(metrics.values())).shape
    rows = []
    for layer in range(L):
        for head in range(H):
            row = {"layer": layer, "head": head}
            for k in METRICS:
                v = float(metrics[k][layer, head])
                row[k] = None if np.isnan(v) else round(v, 3)
            rows.append(row)
    return rows


def top_attended(att: np.ndarray, query: int, col_labels: list[str], exclude: int | None = None) -> list[dict]:
    """For one query row: in every layer and head, the most attended key (optionally not `exclude`) and its weight."""
    rows = att[:, :, query, :].astype(np.float32)  # (L, H, m)
    if exclude is not None and 0 <= exclude < rows.shape[-1] and rows.shape[-1] > 1:
        rows = rows.copy()
        rows[..., exclude] = -1.0
    best = rows.argmax(-1)  # (L, H)
    out = []
    for layer in range(rows.shape[0]):
        for head in range(rows.shape[1]):
            j = int(best[layer, head])
            out.append({"layer": layer, "head": head, "most_attended": col_labels[j], "position": j,
                        "weight": round(float(att[layer, head, query, j]), 3)})
    return out
