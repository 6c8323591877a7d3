"""Value-weighted norms (Kobayashi et al. 2020): ||alpha_ij f_h(x_j)|| beside the attention weights."""


from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..frozen import ro, to_numpy
from .common import encoder_input, run_encoder


# ---- 3. value-weighted norms --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueNorms:
    """Raw weights next to value-weighted norms ||alpha_ij f_h(x_j)|| (Kobayashi et al. 2020)."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    weights: np.ndarray  # (L, H, N, N) alpha
    norms: np.ndarray  # (L, H, N, N) ||alpha_ij f_h(x_j)||
    value_norms: np.ndarray  # (L, H, N) ||f_h(x_j)|| per key token

    @property
    def norm_share(self) -> np.ndarray:
        """(L, H, N, N): norms with each row scaled to sum to 1, comparable to the weights."""
        s = self.norms.sum(-1, keepdims=True)
        return np.divide(self.norms, s, out=np.zeros_like(self.norms), where=s > 0)

    @property
    def special_weight_share(self) -> np.ndarray:
        """(L, H): mean over query rows of the weight on [CLS]/[SEP]-type tokens."""
        return self.weights[..., list(self.special)].sum(-1).mean(-1) if any(self.special) else \
            np.zeros(self.weights.shape[:2], dtype=np.float32)

    @property
    def special_norm_share(self) -> np.ndarray:
        """(L, H): mean over query rows of the share of the norm on special tokens."""
        return self.norm_share[..., list(self.special)].sum(-1).mean(-1) if any(self.special) else \
            np.zeros(self.weights.shape[:2], dtype=np.float32)

    def special_rows(self) -> list[dict]:
        w, s = self.special_weight_share, self.special_norm_share
        return [{"layer": la, "head": h, "weight_share": round(float(w[la, h]), 3),
                 "norm_share": round(float(s[la, h]), 3)}
                for la in range(w.shape[0]) for h in range(w.shape[1])]


def head_value_vectors(attn_module, v: torch.Tensor) -> torch.Tensor:
    """f_h(x_j) = v_j^h W_O^h for every head: v (b, h, m, k) recorded by the forward (x W_V^h + b_V^h already)
    -> (b, h, m, d), with W_O^h = rows h*k:(h+1)*k of W_O (x @ W convention)."""
    w_o = attn_module.projection_matrices()["W_O"]  # (h*k, d)
    b, h, m, k = v.shape
    return torch.einsum("bhmk,hkd->bhmd", v, w_o.reshape(h, k, -1))


def value_norms(model, text: str, **encode_kw) -> ValueNorms:
    """Weights and value-weighted norms of every encoder head, from one recorded forward."""
    inp = encoder_input(model, text, **encode_kw)
    out = run_encoder(model, inp, record=True)
    layers = model.layer_modules(model.main_block)  # the encoder, or a decoder-only model's one stack
    weights, fnorm = [], []
    with torch.inference_mode():
        for la, layer in enumerate(layers):
            rec = out.records[la]["self"]
            fx = head_value_vectors(layer.self_attn, rec.record["v"])  # (1, H, N, d)
            weights.append(to_numpy(rec.weights[0]))
            fnorm.append(to_numpy(fx[0].norm(dim=-1)))  # (H, N)
    w = np.stack(weights)  # (L, H, N, N)
    fn = np.stack(fnorm)  # (L, H, N)
    return ValueNorms(inp.tokens, inp.special, ro(w), ro(w * fn[:, :, None, :]), ro(fn))
