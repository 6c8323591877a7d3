"""The trace of a sentence as the app shares it: the model's AttentionTrace with every array made read-only."""

from __future__ import annotations

from model.trace import AttentionTrace

from .frozen import freeze


def trace(loaded, text: str, **kw) -> AttentionTrace:
    """`loaded.trace(text, intermediates=True, **kw)` with read-only arrays (a cached trace is shared by sessions)."""
    return freeze(loaded.trace(text, intermediates=True, **kw))


def trace_many(loaded, texts: list[str]) -> list[AttentionTrace]:
    """trace() of each text from one padded forward (model.loaded.EncoderModel.trace_many), read-only."""
    return [freeze(tr) for tr in loaded.trace_many(texts, intermediates=True)]


def can_batch(loaded) -> bool:
    """Whether the model traces several texts in one forward (the encoders: MiniLM, e5, local BERT folders)."""
    return loaded.abilities.batches


def position_table(loaded, n: int):
    """(n, d) read-only: the model's learned position rows or its sinusoidal table."""
    return freeze(loaded.position_table(n))
