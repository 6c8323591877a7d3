"""Byte pieces shown as the characters they spell (issue 38).

A byte-level BPE learned mostly on English (SmolLM2, GPT-2; Qwen less often) reads a Hangul syllable as its three
UTF-8 bytes, often in two or three tokens that are no character at all ("철" = EC B2 A0: 'ì' '²' 'ł'); SentencePiece
falls back to bytes for a syllable its vocabulary lacks (Gemma: "<0xEB>" "<0xB7>" "<0x81>" = "뷁"). For display, the
pieces of one character are grouped into units whose bytes are whole characters, labelled with the text they spell;
the attention is then aggregated as merging subwords does (analysis.metrics.merge_words: the sum over a unit's keys,
the mean over its queries). A piece that is a character or more by itself stays a unit of its own, as it is.

    units = spelled_units(tokens, special, "bytelevel")   # [[0, 1, 2], [3], ...] or None: nothing to group
    labels = unit_labels(tokens, units, "bytelevel")       # ["철", "Ġcross", ...]
"""

from __future__ import annotations

import re

from model.tokenizer import BYTE_SPELLING, WORD_START, piece_bytes, piece_text

FALLBACK = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # SentencePiece's byte-fallback piece
SPACE_MARK = {"bytelevel": BYTE_SPELLING[0x20], "sentencepiece": WORD_START}  # a space, as each scheme writes it


def _whole(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def spelled_units(tokens: list[str], special: list[bool], scheme: str | None) -> list[list[int]] | None:
    """Token indices grouped in order so that each group's bytes are whole UTF-8 characters, each group as short as
    that allows (a character's pieces); a special token, or one that is not bytes of text, stands alone. None when no
    piece is part of a character (nothing to group: every unit would be one token)."""
    units: list[list[int]] = []
    pending: list[int] = []
    raw = b""
    grouped = False
    for i, tok in enumerate(tokens):
        b = None if special[i] else piece_bytes(tok, scheme)
        if b is None:  # a special token: it closes a broken run (shown as it is) and stands alone
            if pending:
                units.append(pending)
                pending, raw = [], b""
            units.append([i])
            continue
        pending.append(i)
        raw += b
        if _whole(raw):
            grouped |= len(pending) > 1
            units.append(pending)
            pending, raw = [], b""
    if pending:
        units.append(pending)
    return units if grouped else None


def unit_text(tokens: list[str], unit: list[int], scheme: str | None, *, word: bool = False) -> str:
    """A unit's label: one token as it is (but in a word); pieces of bytes (a byte-level BPE's, or SentencePiece's
    byte fallback among them) as the text they spell, a leading space as the scheme's mark ("Ġ", "▁"), or dropped
    in a `word` (as analysis.metrics.unit_labels drops the marks); other pieces joined with their marks removed."""
    if len(unit) == 1 and not word:
        return tokens[unit[0]]
    parts = [piece_bytes(tokens[i], scheme) for i in unit]
    spelled = scheme == "bytelevel" or any(FALLBACK.fullmatch(tokens[i]) for i in unit)
    if spelled and all(p is not None for p in parts):
        text = b"".join(parts).decode("utf-8", errors="replace")
        if not text.startswith(" "):
            return text
        return text[1:] if word else SPACE_MARK.get(scheme or "", " ") + text[1:]
    return "".join(piece_text(tokens[i], first=k == 0) for k, i in enumerate(unit))


def unit_labels(tokens: list[str], units: list[list[int]], scheme: str | None, *, word: bool = False) -> list[str]:
    return [unit_text(tokens, u, scheme, word=word) for u in units]


def has_byte_pieces(tokens: list[str], special: list[bool], scheme: str | None) -> bool:
    """Whether some tokens are pieces of a character (the explorer then offers to show them as characters)."""
    return spelled_units(tokens, special, scheme) is not None
