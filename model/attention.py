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
    out: torch.Tensor | None = None,  # optional (b, h, n, m) buffer that receives the weights (no autograd)
):
    """Return ``(output, weights)``, or the full :class:`AttentionStages` when asked.
    With `out`, the weights are computed in that tensor (a layer's slice of one
    (L, b, h, n, m) block), so collecting every layer's map needs no copy."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    if return_stages:
        return _stages(q, k, v, mask, scale)
    # Fast path, same numbers up to float rounding: scale Q (n x k) rather than the
    # scores (n x m), and reuse the one (b, h, n, m) buffer for the mask and the
    # softmax, so each call allocates a single score-sized tensor (the weights).
    # (b, h, n, m), already / sqrt(d_k)
    scores = torch.matmul(q * scale, k.transpose(-2, -1), **({} if out is None else {"out": out}))
    if mask is not None:
        # dtype-min rather than -inf: identical after softmax (exp underflows to
        # exactly 0) but a row with every key blocked can never turn into NaN.
        scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    if scores.requires_grad:
        weights = scores.softmax(dim=-1)  # (b, h, n, m)
    else:
        weights = torch.softmax(scores, dim=-1, out=scores)  # in place: no autograd graph to keep
    if dropout > 0.0:
        weights = F.dropout(weights, dropout, training=True)
    output = torch.matmul(weights, v)  # (b, h, n, k)
    return output, weights


def _stages(q, k, v, mask, scale) -> AttentionStages:
    """The lecture's walk-through, one named tensor per stage (no dropout)."""
    scores = torch.matmul(q, k.transpose(-2, -1))  # (b, h, n, m)
    scaled = scores * scale
    if mask is not None:
        logits = scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min)
        masked = scaled.masked_fill(~mask, float("-inf"))
    else:
        logits = masked = scaled
    weights = logits.softmax(dim=-1)  # (b, h, n, m)
    output = torch.matmul(weights, v)  # (b, h, n, k)
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

    def forward(
        self,
        x: torch.Tensor,  # (b, n, d) queries come from here
        memory: torch.Tensor | None = None,  # (b, m, d) keys/values; None = self-attention
        mask: torch.Tensor | None = None,  # bool, broadcasts to (b, h, n, m)
        *,
        record: bool = False,
        weights_out: torch.Tensor | None = None,  # (b, h, n, m) buffer for the weights, inference only
    ) -> AttentionResult:
        d, h = self.d_model, self.n_heads
        b, n, _ = x.shape
        w, bias = self.in_proj.weight, self.in_proj.bias
        if memory is None:
            qkv = F.linear(x, w, bias).view(b, n, 3, h, -1)  # (b, n, 3, h, k): one matmul for Q, K, V
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (b, h, n, k), views
        else:
            q = F.linear(x, w[:d], bias[:d]).view(b, n, h, -1).transpose(1, 2)  # (b, h, n, k)
            kv = F.linear(memory, w[d:], bias[d:]).view(b, memory.shape[1], 2, h, -1)  # (b, m, 2, h, k)
            k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)  # 2 x (b, h, m, k)
        p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout=p, out=weights_out)
        z = out.transpose(1, 2).reshape(b, n, d)  # (b, n, h*k): Concat(head_1..head_h)
        output = F.linear(z, self.out_proj.weight, self.out_proj.bias)  # (b, n, d): Concat(...) W_O + b_O
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
