"""Can the model read this text? Words its tokenizer cannot represent, from the tokens it actually produced.

A word is unreadable when one of its tokens is the unknown token ([UNK], <unk>) or when the tokenizer took a
syllabic script apart into its letters: MiniLM's uncased vocabulary decomposes Hangul syllables (NFD) into
conjoining jamo ("동" -> "ᄃ", "##ᅩ", "##ᆼ"), so every Korean word becomes a row of letter pieces with no meaning;
a byte-level BPE learned on English (SmolLM2, GPT-2) splits Hangul syllables into pieces of their UTF-8 bytes (and
SentencePiece falls back to bytes for a syllable its vocabulary lacks: Gemma's "<0xEB>").
Decided from the trace the page already has: no extra forward, no list of models. What the tokenizer did to the
words is reported too (`Readability.kinds`: unknown tokens, jamo or byte pieces), so a notice says what this model
does to this text, measured, never from the model's name; and the scripts of those words (`Readability.scripts`),
so a page can ask the registry which models read them (model.registry.readers).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.scripts import scripts_of
from model.tokenizer import piece_bytes, piece_text
from model.trace import AttentionTrace
from model.words import UNKNOWN_TOKENS, words

KINDS = ("unknown", "jamo", "bytes")  # what a tokenizer made of a word it cannot read: unknown tokens, letters, bytes


def _is_jamo(ch: str) -> bool:
    o = ord(ch)
    return 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F or 0xA960 <= o <= 0xA97F or 0xD7B0 <= o <= 0xD7FF


def _broken_bytes(token: str) -> bool:
    """A byte-level token that holds part of a character (SmolLM2 and GPT-2 read Hangul as UTF-8 bytes: "동" is three
    bytes, often in two tokens, neither of which is a letter), or a SentencePiece byte-fallback piece of one (Gemma
    spells a syllable missing from its vocabulary as "<0xEB>", "<0x8F>", "<0x99>")."""
    fallback = len(token) == 6 and token.startswith("<0x") and token.endswith(">")
    # None: not a byte-level token (WordPiece, SentencePiece, a special token)
    raw = piece_bytes(token, "sentencepiece" if fallback else "bytelevel")
    if raw is None:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _has_syllables(text: str) -> bool:
    return any(0xAC00 <= ord(c) <= 0xD7A3 for c in text)


@dataclass(frozen=True)
class Readability:
    n_words: int  # words of the text (special tokens excluded)
    unreadable: tuple[str, ...]  # the words the model cannot read, as the text wrote them (first few)
    n_unreadable: int
    kinds: tuple[str, ...] = ()  # what the tokenizer made of them, in KINDS' order: "unknown", "jamo", "bytes"
    scripts: tuple[str, ...] = ()  # the scripts of their letters (model.scripts): "Hangul", "Han" ...
    unknown_tokens: tuple[str, ...] = ()  # the unknown tokens it produced ("[UNK]", "<unk>"), in order met

    @property
    def fraction(self) -> float:
        return self.n_unreadable / self.n_words if self.n_words else 0.0

    @property
    def mostly_unreadable(self) -> bool:
        """At least half of the words are unreadable: what the model makes of the text (a translation, say) is
        noise, not worth showing."""
        return self.n_words > 0 and 2 * self.n_unreadable >= self.n_words


def from_unknown_words(text: str, unknown: list[str], unknown_token: str = "<unk>") -> Readability:
    """The readability of `text` for a model that names its unknown words itself (a translator's `unknown_words`:
    words whose pieces its vocabulary lacks); words are the text's whitespace-separated words."""
    n_words = len(text.split())
    return Readability(max(n_words, len(unknown)), tuple(unknown[:3]), len(unknown),
                       ("unknown",) if unknown else (), scripts_of(unknown), (unknown_token,) if unknown else ())


def readability(trace: AttentionTrace, *, keep: int = 3) -> Readability:
    """The source text's words and which of them come out as unknown tokens or as decomposed letters."""
    syllables = _has_syllables(trace.text)
    split = words(trace.text, trace.source_tokens, trace.source_word_ids, trace.source_offsets, trace.source_special)
    bad: list[str] = []
    n_bad = 0
    kinds: set[str] = set()
    scripts: list[str] = []
    unk_seen: dict[str, None] = {}
    for word, idx in split:
        toks = [trace.source_tokens[i] for i in idx]
        unknown = any(t in UNKNOWN_TOKENS for t in toks)
        # letters the tokenizer made of syllables: more jamo in the pieces than typed ("하ㅎㅎㅎ", laughter typed in
        # jamo, keeps its three ㅎ as three pieces' letters and is read as typed)
        jamo = syllables and (sum(_is_jamo(c) for t in toks for c in piece_text(t, first=False))
                              > sum(_is_jamo(c) for c in word))
        # a Hangul word in byte pieces (an emoji in byte pieces is still read: byte-level models learn them whole)
        in_bytes = _has_syllables(word) and any(_broken_bytes(t) for t in toks)
        if unknown or jamo or in_bytes:
            n_bad += 1
            kinds.update(k for k, hit in zip(KINDS, (unknown, jamo, in_bytes)) if hit)
            scripts.append(word)
            unk_seen.update((t, None) for t in toks if t in UNKNOWN_TOKENS)
            if len(bad) < keep:
                bad.append(word)
    return Readability(len(split), tuple(bad), n_bad, tuple(k for k in KINDS if k in kinds), scripts_of(scripts),
                       tuple(unk_seen))
