"""Shared by the Head lab's computations: the encoder's input and forward, read-only arrays."""


from __future__ import annotations

from dataclasses import dataclass

import torch

from model.blocks import Block
from model.errors import InputError
from model.run import ABLATIONS as ABLATIONS  # zero, mean, keep (model/run.py ablate), for the Head lab
from model.run import plans_for

from ..frozen import to_numpy

PRESET_A = "The animal didn't cross the street because it was tired"
PRESET_B = "The animal didn't cross the street because it was wide"
PRESET_QUERY = "it"
PRESET_CANDIDATES = ("animal", "street")
# the same pair in Korean, for multilingual-e5-small: does "그것은" go to "동물은" or to "길을"?
PRESET_KO_A = "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다"
PRESET_KO_B = "그 동물은 길을 건너지 않았다. 그것은 너무 넓었기 때문이다"
PRESET_KO_QUERY = "그것은"
PRESET_KO_CANDIDATES = ("동물은", "길을")
FLIP_MARGIN = 0.03  # a preference must be at least this large on both sides to count as a flip

TokenSpec = str | int | tuple[int, int]  # a token or word, a token position in A, or positions (in A, in B)


_np = to_numpy


# ---- running the encoder --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EncoderInput:
    """A tokenized source and the tensors its encoder forward needs (batch of one)."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    word_ids: tuple[int, ...]
    words: tuple[str, ...]
    ids: torch.Tensor  # (1, N)
    type_ids: torch.Tensor | None  # (1, N) or None

    def __len__(self) -> int:
        return len(self.tokens)


def encoder_input(model, text: str, **kw) -> EncoderInput:
    """Tokenize `text` as the model's encoder sees it (kw: e.g. task= for seq2seq-tiny)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("The text is empty: type a sentence.", key="empty_text")
    enc = model.encode(text, **kw)  # the model's one way in (model/token_ops.py); it decides the token types too
    ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
    type_ids = model.type_ids(enc.type_ids)  # (1, N) or None
    return EncoderInput(tuple(enc.tokens), tuple(bool(s) for s in enc.special), tuple(enc.word_ids),
                        tuple(enc.words()), ids, type_ids)


def run_encoder(model, inp: EncoderInput, *, batch: int = 1, record: bool | set[int] = False, edits: tuple = ()):
    """The model's own first stack (the encoder; a decoder-only model's one causal stack stands in for it) on
    `batch` copies of the input -> StackOutput (hidden (b, N, d), self_attention L x (b, H, N, N), records when
    asked). edits: a run request's edits of that stack (model/run.py; block None: the main stack)."""
    ids = inp.ids.expand(batch, -1)
    type_ids = inp.type_ids.expand(batch, -1) if inp.type_ids is not None else None
    plan = next(iter(plans_for(model.module, edits).values())) if edits else None  # the first stack's
    with torch.inference_mode():
        return model.module.main_stack(ids, type_ids, record=record, plan=plan)


def n_layers_heads(model, block: Block = "encoder") -> tuple[int, int]:
    return model.n_layers(block), model.n_heads(block)
