"""The norms of every block, built as the config says (model/config.py).

    LayerNorm (the paper, BERT, GPT-2):   y = γ ⊙ (x - mean(x)) / sqrt(var(x) + eps) + β
    RMSNorm (Llama and the LLMs since):   y = γ ⊙ x / sqrt(mean(x²) + eps)
    Gemma's RMSNorm (norm_offset 1):      y = (1 + γ) ⊙ x / sqrt(mean(x²) + eps), in float32

Gemma stores γ - 1, so a weight of 0 is the identity (transformers' Gemma3RMSNorm; llama.cpp's GGUF converter adds
the 1 back, and the GGUF reader takes it off again: model/gguf.py).
"""

from __future__ import annotations

import torch
from torch import nn

from .config import TransformerConfig


class OffsetRMSNorm(nn.RMSNorm):
    """RMSNorm that scales by (offset + γ), computed in float32 as transformers' Gemma3RMSNorm computes it."""

    def __init__(self, width: int, eps: float, offset: float):
        super().__init__(width, eps=eps)
        self.offset = offset

    @property
    def scale(self) -> torch.Tensor:
        """(width,) the factor each dimension is multiplied by: offset + γ."""
        return self.offset + self.weight.float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., width) -> (..., width)"""
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (self.offset + self.weight.float())).type_as(x)


def make_norm(config: TransformerConfig, width: int | None = None) -> nn.Module:
    """The config's norm over `width` features (default d_model; Qwen3 / Gemma 3 norm each head's q and k over d_k)."""
    width = width or config.d_model
    if config.norm == "rmsnorm":
        if config.norm_offset:
            return OffsetRMSNorm(width, config.layer_norm_eps, config.norm_offset)
        return nn.RMSNorm(width, eps=config.layer_norm_eps)
    return nn.LayerNorm(width, eps=config.layer_norm_eps)


def norm_scale(norm: nn.Module) -> torch.Tensor:
    """The factor a norm multiplies each dimension by, γ (Gemma's: 1 + γ as stored)."""
    return norm.scale if isinstance(norm, OffsetRMSNorm) else norm.weight
