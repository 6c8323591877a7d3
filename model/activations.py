"""The FFN's non-linearities, by the names config files use (TransformerConfig.activation).

The names and formulas are transformers' ACT2FN (checked against it in tests/test_hf_parity.py): "gelu" is the exact
erf GELU (the paper of BERT and MiniLM), "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast" / "gelu_accurate" its tanh
approximation (GPT-2), "silu" / "swish" x * sigmoid(x) (Marian; SwiGLU's gate), "relu" the paper's max(0, x).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def _gelu_fast(x: torch.Tensor) -> torch.Tensor:  # the tanh approximation, written as transformers writes it
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def _gelu_accurate(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


def _quick_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


def _gelu_10(x: torch.Tensor) -> torch.Tensor:  # exact gelu clipped to [-10, 10]
    return torch.clip(F.gelu(x), -10, 10)


def _relu2(x: torch.Tensor) -> torch.Tensor:
    return torch.square(F.relu(x))


def _linear(x: torch.Tensor) -> torch.Tensor:
    return x


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": F.gelu, "gelu_python": F.gelu, "relu": F.relu, "gelu_new": _gelu_tanh, "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_fast": _gelu_fast, "gelu_accurate": _gelu_accurate, "quick_gelu": _quick_gelu, "gelu_10": _gelu_10,
    "silu": F.silu, "swish": F.silu, "mish": F.mish, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "relu2": _relu2, "relu6": F.relu6, "leaky_relu": F.leaky_relu, "hardswish": F.hardswish, "linear": _linear,
}


def activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(ACTIVATIONS)}") from None
