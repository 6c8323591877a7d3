"""The attention blocks of the one Transformer, by the names URLs, deck files, traces and saved arrays use:

    "encoder"        the encoder's self-attention (a decoder-only model's stack is "decoder_self")
    "decoder_self"   the decoder's masked self-attention
    "cross"          the decoder's cross-attention (queries: the decoder's positions, keys: the source's)

`Block` is their type in signatures (a Literal: the values stay plain strings, so a link, a deck file or an NPZ
written before reads the same).
"""

from __future__ import annotations

from typing import Literal, get_args

Block = Literal["encoder", "decoder_self", "cross"]
BLOCKS: tuple[Block, ...] = get_args(Block)
ENCODER, DECODER_SELF, CROSS = BLOCKS


def is_block(value) -> bool:
    """Whether `value` names a block (a URL parameter, a deck file's field)."""
    return value in BLOCKS
