"""Device choice: CUDA when available, else CPU; overridable by argument or by
the HEADLIGHT_DEVICE environment variable (auto | cpu | cuda)."""

from __future__ import annotations

import os

import torch

from .errors import InputError

ENV_VAR = "HEADLIGHT_DEVICE"
CHOICES = ("auto", "cpu", "cuda")


def available_devices() -> list[str]:
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def resolve_device(requested: str | None = None) -> torch.device:
    choice = (requested or os.environ.get(ENV_VAR) or "auto").strip().lower()
    if choice not in CHOICES:
        raise InputError(f"unknown device {choice!r}; choose one of {', '.join(CHOICES)}", key="unknown_device",
                         device=repr(choice), choices=", ".join(CHOICES))
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise InputError("device 'cuda' was requested but no CUDA GPU is available; use --device cpu", key="no_cuda")
    return torch.device(choice)
