"""Writing systems (scripts) of a text's letters, and the names the registry declares a model's reading with.

A model's `ModelSpec.scripts` says which scripts its vocabulary reads (declared, never guessed from its name); the
pages that find words a model cannot read (analysis.readability, a translator's unknown words) ask the registry
(`model.registry.readers`) for the models that read the scripts of those words, and offer a switch to one of them.

The script of a letter is the first word of its Unicode name ("HANGUL SYLLABLE GA" -> Hangul, "CJK UNIFIED
IDEOGRAPH-52D5" -> Han), as Python's unicodedata has no script property; digits, punctuation, symbols and emoji
belong to no script here (every model writes them alike, or none reads them as words).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

LATIN, HANGUL, HAN = "Latin", "Hangul", "Han"
# the scripts XLM-R's vocabulary covers among the 100 languages it was trained on (multilingual-e5-small)
XLMR_SCRIPTS = (LATIN, HANGUL, HAN, "Hiragana", "Katakana", "Cyrillic", "Greek", "Arabic", "Hebrew", "Thai",
                "Devanagari", "Bengali", "Tamil", "Telugu", "Georgian", "Armenian")
_WIDTHS = ("HALFWIDTH", "FULLWIDTH")  # "FULLWIDTH LATIN CAPITAL LETTER A", "HALFWIDTH KATAKANA LETTER A"


def script_of(ch: str) -> str | None:
    """The script of one character ("가" -> "Hangul", "ᄀ" -> "Hangul", "é" -> "Latin", "動" -> "Han"), or None
    for what is not a letter (digits, punctuation, spaces, symbols, emoji)."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    words = name.split()
    first = words[1] if words[0] in _WIDTHS and len(words) > 1 else words[0]
    return HAN if first == "CJK" else first.title()  # LATIN -> Latin, HANGUL -> Hangul, HIRAGANA -> Hiragana, CYRILLIC -> Cyrillic ...


def scripts_of(texts: str | Iterable[str]) -> tuple[str, ...]:
    """The scripts of the letters of `texts` (one text or several), in order of first appearance."""
    seen: dict[str, None] = {}
    for text in [texts] if isinstance(texts, str) else texts:
        for ch in text:
            s = script_of(ch)
            if s is not None:
                seen.setdefault(s, None)
    return tuple(seen)
