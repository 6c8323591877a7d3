"""Tokenization with the `tokenizers` library (never `transformers`).

Pitfalls of MiniLM's tokenizer.json handled here: it ships fixed padding to 128
and truncation at 128; padding is switched off and truncation set to the model's
positions (512), and truncation is reported to the caller. It lowercases, strips
accents, splits "didn't" into `didn ' t` and adds [CLS]/[SEP].

Words are grouped from character offsets: tokens whose spans touch or overlap (no
gap of whitespace between them) form one word, so `didn ' t` shows as "didn't"
and the jamo pieces of a Korean word stay one word.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from .errors import InputError

WORD_START = "\u2581"  # SentencePiece's word-start mark (XLM-R / multilingual-e5-small): "▁동물", "은"
BYTE_SPACE = "\u0120"  # byte-level BPE's space before a word (GPT-2, RoBERTa): "Ġit"


def _byte_spelling() -> dict[int, str]:
    """GPT-2's printable spelling of the 256 bytes (bytes_to_unicode): the printable Latin-1 bytes stand for
    themselves, the others take the characters from U+0100 on, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, n = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, map(chr, chars)))


BYTE_SPELLING: dict[int, str] = _byte_spelling()  # byte -> its character in byte-level BPE (GPT-2, Llama 3, Qwen)
BYTE_OF: dict[str, int] = {c: b for b, c in BYTE_SPELLING.items()}  # and back
_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # SentencePiece's byte-fallback pieces (Gemma, Llama 2): "<0xEA>"


def piece_bytes(token: str, scheme: str | None) -> bytes | None:
    """The bytes of text a token stands for, or None where the token is not bytes of text (a special token; a
    token of a scheme that spells characters, not bytes). Byte-level BPE ("bytelevel"): each character is one byte
    (BYTE_OF). SentencePiece: a byte-fallback piece "<0xEA>" is its byte, any other piece its UTF-8 with "▁" a space."""
    if scheme == "bytelevel":
        if not token or any(c not in BYTE_OF for c in token):
            return None
        return bytes(BYTE_OF[c] for c in token)
    if scheme == "sentencepiece":
        m = _FALLBACK.fullmatch(token)
        return bytes([int(m.group(1), 16)]) if m else token.replace(WORD_START, " ").encode("utf-8")
    return None


def piece_text(token: str, first: bool = True) -> str:
    """A token's text inside its word: WordPiece's '##' (a continuation) and SentencePiece's leading '▁' (a word
    start) or byte-level BPE's leading 'Ġ' (a space before the word) removed. `first`: the token opens its word
    ('##' is then kept: a word that starts with '##')."""
    if token.startswith((WORD_START, BYTE_SPACE)):  # "▁" alone: the word's start, its text follows in the next piece
        return token[1:]
    if not first and token.startswith("##"):
        return token[2:]
    return token


SHOWN_WHITESPACE = {"\n": "↵", " ": "␣", "\t": "⇥", "\r": "␍"}  # how shown_piece marks what is not seen


def shown_piece(token: str, scheme: str | None) -> str:
    """A token as a reader sees it. For a byte-level tokenizer ("bytelevel": GPT-2, SmolLM2) its bytes decoded to
    text, with a newline shown as ↵, a space as ␣ and a tab as ⇥ ("ĊĠĠĠĠĠ" -> "↵␣␣␣␣␣", "Ġthe" -> "␣the"), and a
    byte that is only part of a character as <0xEB> (a Hangul syllable is three bytes, often in two tokens); a
    SentencePiece byte-fallback piece the same way ("<0x0A>" -> "↵"); any other token as it is."""
    fallback = scheme == "sentencepiece" and _FALLBACK.fullmatch(token)
    raw = piece_bytes(token, scheme) if scheme == "bytelevel" or fallback else None
    if raw is None:
        return token
    out, i = [], 0
    while i < len(raw):
        for j in range(min(len(raw), i + 4), i, -1):  # the longest whole character from here (UTF-8: 1-4 bytes)
            try:
                ch = raw[i:j].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append("".join(SHOWN_WHITESPACE.get(c, c if c.isprintable() else f"<0x{ord(c):02X}>") for c in ch))
            i = j
            break
        else:
            out.append(f"<0x{raw[i]:02X}>")
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Encoded:
    tokens: list[str]  # as the tokenizer sees them, e.g. ["[CLS]", "the", ..., "[SEP]"]
    ids: list[int]
    offsets: list[tuple[int, int]]  # character span of each token in its own text; (0, 0) for specials
    special: list[bool]  # True for [CLS], [SEP], <bos>, task tokens, ...
    type_ids: list[int]  # segment: 0 for the first text, 1 for the pair
    word_ids: list[int]  # word index per token (touching spans share one); -1 for special tokens
    truncated: bool  # True when the text had more tokens than max_length
    n_tokens_untruncated: int  # token count before truncation (specials included)

    def __len__(self) -> int:
        return len(self.ids)

    def words(self) -> list[str]:
        """Each word as the joined text of its tokens (subword marks '##' and '▁' removed)."""
        out: dict[int, str] = {}
        for tok, w in zip(self.tokens, self.word_ids):
            if w >= 0:
                out[w] = out.get(w, "") + piece_text(tok, first=w not in out)
        # NFC: the normaliser splits Hangul syllables into jamo (NFD); recompose them for display
        return [unicodedata.normalize("NFC", out[w]) for w in sorted(out)]


def check_text(text: str) -> str:
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InputError("The text is empty: type a sentence to see its attention.", key="empty_text")
    return text


def group_words(offsets, special, sequence_ids, tokens=None) -> list[int]:
    """A new word starts after a gap (start > end of the previous token), in a new
    sequence, or (SentencePiece) at a token marked '▁'. Pieces of one character share its span (Korean syllables
    split into jamo: "나" -> "ᄂ", "##ᅡ" both (0, 1)), so overlapping spans stay in one word. SentencePiece spans
    include the space, so for such a tokenizer (`tokens` given) the '▁' mark alone decides; so does byte-level BPE's
    'Ġ' (GPT-2: "Ġan", "im", "al" is one word; its spans may include the space too)."""
    mark = WORD_START
    if tokens is not None and not any(t.startswith(WORD_START) for t in tokens) and any(
            t.startswith(BYTE_SPACE) for t in tokens):
        mark = BYTE_SPACE
    marks = tokens is not None and any(t.startswith(mark) for t in tokens)
    word_ids, word, prev_end, prev_seq = [], -1, None, None
    for k, ((start, end), is_special, seq) in enumerate(zip(offsets, special, sequence_ids)):
        if is_special:
            word_ids.append(-1)
            continue
        starts = tokens[k].startswith(mark) if marks else start > (prev_end if prev_end is not None else -1)
        if prev_end is None or starts or seq != prev_seq:
            word += 1
            prev_end = end
        else:
            prev_end = max(prev_end, end)
        word_ids.append(word)
        prev_seq = seq
    return word_ids


# a decoder's (or pre-tokenizer's) kind -> the scheme; ByteFallback: SentencePiece's BPE with byte pieces (Gemma)
_SCHEMES = {"WordPiece": "wordpiece", "Metaspace": "sentencepiece", "ByteLevel": "bytelevel",
            "ByteFallback": "sentencepiece"}


def tokenizer_scheme(tok: Tokenizer) -> str | None:
    """The piece-marking scheme of a `tokenizers.Tokenizer` (TextTokenizer.scheme): its decoder's kind, else its
    pre-tokenizer's (a Sequence: the first known one), else its model's (WordPiece)."""
    def kinds(component) -> list[str]:
        if component is None:
            return []
        state = json.loads(component.__getstate__())
        parts = state.get("decoders") or state.get("pretokenizers") or [state]
        return [p.get("type", "") for p in parts if isinstance(p, dict)]

    for component in (tok.decoder, tok.pre_tokenizer):
        for kind in kinds(component):
            if kind in _SCHEMES:
                return _SCHEMES[kind]
    return _SCHEMES.get(type(tok.model).__name__)


class TextTokenizer:
    """Wraps a `tokenizers.Tokenizer`; returns :class:`Encoded`."""

    def __init__(self, tokenizer: Tokenizer, max_length: int):
        self.max_length = max_length
        self._tok = tokenizer
        self._tok.no_padding()
        self._tok.enable_truncation(max_length)

    @functools.cached_property
    def _counter(self) -> Tokenizer:
        """A second, never-truncating tokenizer to count the tokens of over-long text; the shared instance is never
        toggled, so concurrent app sessions are safe. It shares this one's model (the vocabulary, merges or pieces:
        22 MiB for SmolLM2's, 250 MB for multilingual-e5-small's before it used SentencePiece) and components, and
        holds the same added tokens in id order. Built on first use."""
        tok = self._tok
        counter = Tokenizer(tok.model)
        counter.normalizer, counter.pre_tokenizer = tok.normalizer, tok.pre_tokenizer
        counter.post_processor, counter.decoder = tok.post_processor, tok.decoder
        added = tok.get_added_tokens_decoder()
        for i in sorted(added):
            (counter.add_special_tokens if added[i].special else counter.add_tokens)([added[i]])
        counter.encode_special_tokens = tok.encode_special_tokens
        counter.no_truncation()
        return counter

    @classmethod
    def from_file(cls, path: str | Path, max_length: int) -> TextTokenizer:
        return cls(Tokenizer.from_file(str(path)), max_length)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    @functools.cached_property
    def scheme(self) -> str | None:
        """How the tokenizer marks word pieces, read from its own components (never from a model's name):
        "wordpiece" (`##` continues a word: BERT), "sentencepiece" (`▁` starts a word: XLM-R, T5), "bytelevel"
        (`Ġ` is the space before a word: GPT-2, RoBERTa, Llama 3 / SmolLM2), or None (whole words, no marks)."""
        return tokenizer_scheme(self._tok)

    @functools.cached_property
    def special_tokens(self) -> tuple[str, ...]:
        """The vocabulary's special tokens, in id order (e.g. ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))."""
        added = self._tok.get_added_tokens_decoder()
        return tuple(added[i].content for i in sorted(added) if added[i].special)

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self._tok.id_to_token(i)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def tokens_of(self, enc, text: str, pair: str | None) -> list[str]:
        """The tokens' strings as shown: the tokenizer's own (a subclass may write some from the text it read)."""
        return list(enc.tokens)

    def prepared(self, text: str) -> tuple[str, list[int] | None]:
        """The text the tokenizer reads, and for each of its characters the index of the typed character it came
        from (None: the text as typed). A subclass that normalises before `tokenizers` does (multilingual-e5-small)
        maps back, so that offsets stay spans of what the user typed."""
        return text, None

    def encode(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Encoded:
        check_text(text)
        if pair is not None:
            check_text(pair)
        text, tmap = self.prepared(text)
        pair, pmap = (None, None) if pair is None else self.prepared(pair)
        maps = (tmap, pmap)  # by sequence id
        enc = self._tok.encode(text, pair, add_special_tokens=add_special_tokens)
        if not enc.ids:  # a tokenizer that drops control characters and adds no specials (SmolLM2 on "\x16")
            raise InputError("The text has no tokens (only spaces or control characters): type a sentence.",
                             key="no_tokens")
        n_untruncated = len(enc.ids) + sum(len(o.ids) for o in enc.overflowing)
        truncated = bool(enc.overflowing)
        if truncated:  # overflow pieces may repeat specials: count precisely, only when needed
            n_untruncated = len(self._counter.encode(text, pair, add_special_tokens=add_special_tokens).ids)
        special = [bool(s) for s in enc.special_tokens_mask]
        seq_ids = [s if s is not None else -1 for s in enc.sequence_ids]
        tokens = self.tokens_of(enc, text, pair)
        offsets = [(a, b) if q is None or maps[q] is None or b <= a else (maps[q][a], maps[q][b - 1] + 1)
                   for q, (a, b) in zip(enc.sequence_ids, enc.offsets)]
        return Encoded(
            tokens=tokens,
            ids=list(enc.ids),
            offsets=offsets,
            special=special,
            type_ids=list(enc.type_ids),
            word_ids=group_words(offsets, special, seq_ids, tokens),
            truncated=truncated,
            n_tokens_untruncated=n_untruncated,
        )
