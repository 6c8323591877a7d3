"""Scaled dot-product and multi-head attention that *return* their weights.

Vaswani et al. 2017, eq. (1):  Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
Multi-head (section 3.2.2): head_i = Attention(X W_Q^i, X W_K^i, X W_V^i),
MultiHead = Concat(head_1..head_h) W_O.

Notation in shape comments (x-transformers style):
    b batch, h heads, n query length, m key length, d d_model, k d_k = d / h

Weights are returned, never kept on a module: one cached model serves every
user of the app, so any state on a module would be a race. The fused
``F.scaled_dot_product_attention`` is deliberately not used: it returns no
weights, and every path here may be drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig


@dataclass
class AttentionStages:
    """Every matrix of the lecture's walk-through, all (b, h, n, m) but `output`."""

    scores: torch.Tensor  # Q K^T
    scaled: torch.Tensor  # Q K^T / sqrt(d_k)
    masked: torch.Tensor  # scaled, blocked cells = -inf (exactly what softmax sees, for display)
    weights: torch.Tensor  # softmax(masked): rows sum to 1, blocked cells exactly 0
    output: torch.Tensor  # (b, h, n, k) weights @ V


def scaled_dot_product_attention(
    q: torch.Tensor,  # (b, h, n, k)
    k: torch.Tensor,  # (b, h, m, k)
    v: torch.Tensor,  # (b, h, m, k)
    mask: torch.Tensor | None = None,  # bool, True = may attend, broadcasts to (b, h, n, m)
    *,
    dropout: float = 0.0,
    return_stages: bool = False,
):
    """Return ``(output, weights)``, or the full :class:`AttentionStages` when asked."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1))  # (b, h, n, m)
    scaled = scores * scale
    if mask is not None:
        # dtype-min rather than -inf: identical after softmax (exp underflows to
        # exactly 0) but a row with every key blocked can never turn into NaN.
        logits = scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min)
    else:
        logits = scaled
    weights = logits.softmax(dim=-1)  # (b, h, n, m)
    if dropout > 0.0:
        weights = F.dropout(weights, dropout, training=True)
    output = torch.matmul(weights, v)  # (b, h, n, k)
    if not return_stages:
        return output, weights
    masked = scaled if mask is None else scaled.masked_fill(~mask, float("-inf"))
    return AttentionStages(scores=scores, scaled=scaled, masked=masked, weights=weights, output=output)


@dataclass
class AttentionResult:
    output: torch.Tensor  # (b, n, d) after W_O
    weights: torch.Tensor  # (b, h, n, m)
    record: dict | None = None  # on request: q, k, v (b, h, *, k), z (b, n, d) = concat of heads


class MultiHeadAttention(nn.Module):
    """h heads in parallel. W_Q, W_K, W_V are stored stacked in one (3d, d)
    linear layer, [W_Q; W_K; W_V] in PyTorch's (out, in) layout, so a
    self-attention projects with one matmul."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.d_model = config.d_model
        self.dropout = config.dropout
        self.in_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)  # W_O

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, -1).transpose(1, 2)  # (b, n, d) -> (b, h, n, k)

    def forward(
        self,
        x: torch.Tensor,  # (b, n, d) queries come from here
        memory: torch.Tensor | None = None,  # (b, m, d) keys/values; None = self-attention
        mask: torch.Tensor | None = None,  # bool, broadcasts to (b, h, n, m)
        *,
        record: bool = False,
    ) -> AttentionResult:
        d = self.d_model
        if memory is None:
            q, k, v = F.linear(x, self.in_proj.weight, self.in_proj.bias).split(d, dim=-1)
        else:
            w, bias = self.in_proj.weight, self.in_proj.bias
            q = F.linear(x, w[:d], bias[:d])
            k, v = F.linear(memory, w[d:], bias[d:]).split(d, dim=-1)
        q, k, v = self._split(q), self._split(k), self._split(v)  # (b, h, *, k)
        p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout=p)
        b, _, n, _ = out.shape
        z = out.transpose(1, 2).reshape(b, n, d)  # (b, n, h*k): Concat(head_1..head_h)
        output = self.out_proj(z)  # (b, n, d)
        rec = {"q": q, "k": k, "v": v, "z": z} if record else None
        return AttentionResult(output, weights, rec)

    def projection_matrices(self) -> dict[str, torch.Tensor]:
        """W_Q, W_K, W_V, W_O in the lecture's x @ W convention, each (d, d);
        head i uses columns i*k:(i+1)*k of W_Q/W_K/W_V and rows of W_O. Biases too."""
        d = self.d_model
        w, b = self.in_proj.weight, self.in_proj.bias
        return {
            "W_Q": w[:d].T, "W_K": w[d : 2 * d].T, "W_V": w[2 * d :].T, "W_O": self.out_proj.weight.T,
            "b_Q": b[:d], "b_K": b[d : 2 * d], "b_V": b[2 * d :], "b_O": self.out_proj.bias,
        }
