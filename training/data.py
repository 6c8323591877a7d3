"""Vocabulary, tokenizer and training data for `seq2seq-tiny`.

Vocabulary source: the English word-frequency list of the PyPI package
`wordfreq==3.1.1` (data CC BY-SA 4.0, code Apache-2.0; Robyn Speer et al.,
Wikipedia, subtitles, news, books, web text, Reddit and Twitter counts). The
vocabulary is written to ``assets/seq2seq-tiny/tokenizer.json`` (rebuilt by
``python -m training.data``); training reads wordfreq for its sentence-like
sequences; the app never imports it.

The vocabulary, in id order:
  1. ``<pad> <unk> <bos> <eos> <copy> <reverse> <swap>`` (ids 0..6)
  2. single characters: a-z, 0-9, ASCII punctuation and common typographic marks,
     and their ``##`` continuations for letters (any a-z word can be spelled)
  3. the N most frequent purely alphabetic English words (default 16,000), plus
     the pieces of the frequent contractions as the pre-tokenizer splits them
     ("didn't" -> ``didn ' t``)
  4. word pieces learned by `tokenizers`' WordPieceTrainer on the next 40,000
     words of the list, so a rarer word becomes a few pieces rather than letters.
  Entries in BLOCKED (profanities and slurs) keep their ids and are renamed ``<unusedN>``.

The tokenizer lowercases, strips accents, splits on whitespace and punctuation
and splits numbers into digits (every number is exact, digit by digit). A word
with a character outside the vocabulary (emoji, Hangul, Greek, ...) becomes one
``<unk>``.

Training sequences (token ids; the task is token-level, so no text is needed):
  * sentence-like: words drawn by their wordfreq frequency from the 60,000 most
    frequent entries (so out-of-vocabulary words appear as pieces), contractions,
    numbers (digits, times, prices, percentages), punctuation and quotes;
  * uniform: ids drawn uniformly from every text entry of the vocabulary
    (pieces, characters and ``<unk>`` included), so every entry is seen;
both at every length from 1 to MAX_TEXT_TOKENS. None of it is an English
sentence from any text source: the everyday evaluation sets
(``assets/seq2seq-tiny/everyday*.txt``) are written by hand and share no source
with it.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from model.data import ASSET_DIR, MAX_TEXT_TOKENS, SPECIAL_TOKENS, UNK

N_WORDS = 16_000  # whole words in the vocabulary (by frequency)
N_PIECE_WORDS = 40_000  # the next words of the list, on which word pieces are trained
N_PIECES = 1_500  # WordPiece trainer budget (its alphabet included)
SENTENCE_WORDS = 60_000  # sentence-like sequences draw from this many words (by frequency)

# Profanities and slurs of the word list. The app shows vocabulary entries that the model ranks low (the top-5
# next tokens, the logit lens), so in a lecture any entry can appear on the projector: these entries keep their
# ids but are renamed <unusedN> (no typed text can produce them); typed, these words become pieces or letters and
# are copied like any other. Chosen by hand from the 140 entries of better-profanity 0.7.0's list that are in the
# vocabulary; everyday words of that list (god, kill, sex, drunk, naked, stupid, hell, damn, ...) stay.
BLOCKED = frozenset("""
asshole bitch bitches bullshit cock cum cunt dumbass faggot fuck fucked fucker fuckers fuckin fucking fucks
goddamn motherfucker negro nigga pussy retarded shit shits shitty slut tits whore
""".split())

TRAIN_SEED, HELDOUT_SEED = 0, 12345  # training streams use TRAIN_SEED + --seed; held-out inputs never

EVERYDAY_PATH = ASSET_DIR / "everyday.txt"
EVERYDAY_HOLDOUT_PATH = ASSET_DIR / "everyday_holdout.txt"

LETTERS = string.ascii_lowercase
DIGITS = string.digits
# ASCII punctuation and the typographic marks phones and word processors type (after lowercasing / accent
# stripping); each is its own token
PUNCT = string.punctuation + "‘’‚“”„–—…•·°£€¥¢§¶©®™×÷±½¼¾¹²³µ¿¡«»"
_ALPHA = re.compile(r"[a-z]+")


def normalizer():
    return normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True, handle_chinese_chars=True)


def pre_tokenizer():
    return pre_tokenizers.Sequence([pre_tokenizers.BertPreTokenizer(), pre_tokenizers.Digits(individual_digits=True)])


# ---- the word list (wordfreq) ----------------------------------------------------

def read_wordfreq(n: int = N_WORDS + N_PIECE_WORDS + 20_000) -> list[tuple[str, float]]:
    """(word, frequency) of the n most frequent English entries of wordfreq, most frequent first."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("en")
    return [(w, freq[w]) for w in wordfreq.top_n_list("en", n)]


def _norm_words(words: list[tuple[str, float]]) -> list[tuple[str, float]]:
    norm = normalizer()
    return [(norm.normalize_str(w), f) for w, f in words]


def vocabulary(words: list[tuple[str, float]], n_words: int = N_WORDS) -> list[str]:
    """Specials, characters, whole words and contraction pieces, then trained word pieces (see the module doc)."""
    words = _norm_words(words)
    vocab: list[str] = list(SPECIAL_TOKENS)
    seen = set(vocab)

    def add(tok: str) -> None:
        if tok and tok not in seen:
            seen.add(tok)
            vocab.append(tok)

    for c in LETTERS + DIGITS + PUNCT:
        add(c)
    for c in LETTERS:
        add("##" + c)
    alpha = [w for w, _ in words if _ALPHA.fullmatch(w)]
    for w in alpha[:n_words]:
        add(w)
    for w, _ in words[: n_words]:  # contractions: the pre-tokenizer splits "didn't" into didn ' t
        if "'" in w and re.fullmatch(r"[a-z]+('[a-z]+)+", w):
            for part in w.split("'"):
                add(part)
    # word pieces for rarer words, learned by tokenizers' WordPiece trainer on the next words of the list
    tail = alpha[n_words : n_words + N_PIECE_WORDS]
    tok = Tokenizer(models.WordPiece(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordPieceTrainer(vocab_size=N_PIECES, special_tokens=[UNK], min_frequency=2,
                                        show_progress=False, initial_alphabet=list(LETTERS))
    tok.train_from_iterator(tail, trainer)
    # the trainer breaks frequency ties differently from run to run (the same set, another order): sort
    learned = sorted(p for p in tok.get_vocab() if re.fullmatch(r"(##)?[a-z]+", p))
    for piece in sorted(learned, key=lambda p: (p.startswith("##"), len(p), p)):
        add(piece)
    return [f"<unused{i}>" if tok in BLOCKED else tok for i, tok in enumerate(vocab)]


def build_tokenizer(vocab: list[str], max_text_tokens: int = MAX_TEXT_TOKENS) -> Tokenizer:
    """A WordPiece tokenizer with exactly `vocab` (ids in list order)."""
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token=UNK,
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizer()
    tok.pre_tokenizer = pre_tokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(SPECIAL_TOKENS)
    for i, s in enumerate(SPECIAL_TOKENS):  # ids 0..6 in a fixed order; <pad> = 0 = config.pad_id
        if tok.token_to_id(s) != i:
            raise RuntimeError(f"special token {s} got id {tok.token_to_id(s)}, expected {i}")
    return tok


# ---- everyday evaluation sets -----------------------------------------------------

def read_lines(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def word_coverage(tok: Tokenizer, texts: list[str]) -> tuple[float, list[str]]:
    """Share of the words of `texts` that are one vocabulary token each, and the words that are not.

    A word is a maximal run of letters after the tokenizer's normaliser (so "didn't" is the two words
    "didn" and "t", as the pre-tokenizer splits it); numbers are digits and punctuation marks are single
    characters, always in the vocabulary, so they are not counted."""
    norm = normalizer()
    vocab = tok.get_vocab()
    words = [w for t in texts for w in _ALPHA.findall(norm.normalize_str(t))]
    missing = [w for w in words if w not in vocab]
    return 1 - len(missing) / max(len(words), 1), missing


# ---- training sequences -----------------------------------------------------------

class SentenceMaker:
    """Sentence-like strings: words drawn by frequency, with contractions, numbers and punctuation."""

    def __init__(self, words: list[tuple[str, float]], n: int = SENTENCE_WORDS):
        words = [(w, f) for w, f in words[:n] if re.fullmatch(r"[a-z]+('[a-z]+)*", w)]
        self.words = [w for w, _ in words]
        total, acc = sum(f for _, f in words), 0.0
        self.cum = []
        for _, f in words:
            acc += f / total
            self.cum.append(acc)

    def word(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.07:
            return self.number(rng)
        if r < 0.30:  # a uniform word of the list, so rare words occur as often as the everyday ones
            return rng.choice(self.words)
        return rng.choices(self.words, cum_weights=self.cum)[0]

    @staticmethod
    def number(rng: random.Random) -> str:
        """Numbers as people type them. Digits are single tokens, so round numbers ("2000", "1,000,000") and
        repeated digits ("999") put runs of one token in the source: the model must track them by position."""
        kind = rng.random()
        if kind < 0.30:
            return str(rng.randint(0, 100))
        if kind < 0.42:  # round numbers, with or without thousands separators
            n = rng.randint(1, 9) * 10 ** rng.randint(1, 6) + (rng.randint(1, 9) * 10 ** 2 if rng.random() < 0.2 else 0)
            return f"{n:,}" if rng.random() < 0.6 else str(n)
        if kind < 0.55:
            return str(rng.randint(1800, 2040))
        if kind < 0.65:
            return f"{rng.randint(1, 12)}:{rng.randint(0, 59):02d}"
        if kind < 0.73:
            return f"{rng.randint(1, 999)},{rng.randint(0, 999):03d}"
        if kind < 0.83:
            cents = f".{rng.randint(0, 99):02d}" if rng.random() < 0.5 else ""
            return rng.choice(["$", "£", "€"]) + f"{rng.choice([rng.randint(1, 500), 10 ** rng.randint(1, 4)])}" + cents
        if kind < 0.9:  # repeated digits: 999, 7777, 00
            return rng.choice("0123456789") * rng.randint(2, 4)
        return f"{rng.randint(1, 100)}" + rng.choice(["%", "st", "nd", "rd", "th", "km", "kg"])

    def sentence(self, rng: random.Random, n_words: int) -> str:
        out = []
        for i in range(n_words):
            w = self.word(rng)
            if rng.random() < 0.12:
                w = w.capitalize()
            out.append(w)
            if rng.random() < 0.02:  # a word said twice or three times ("very, very", "no no no")
                out.extend([w] * rng.randint(1, 2))
            r = rng.random()
            if i < n_words - 1 and r < 0.10:
                out[-1] += rng.choice([",", ",", ",", ";", ":", " -", " –", "'s"])
            elif r < 0.02:
                out[-1] = rng.choice(['"', "(", "'", "“"]) + out[-1] + rng.choice(['"', ")", "'", "”"])
        text = " ".join(out)
        if rng.random() < 0.7:
            text += rng.choice([".", ".", ".", "?", "!", "...", "?!"])
        return text[:1].upper() + text[1:]

    def sentences(self, seed: int, count: int, max_words: int = 50) -> list[str]:
        rng = random.Random(seed)
        return [self.sentence(rng, rng.randint(1, max_words)) for _ in range(count)]


def pad(rows: list[list[int]], pad_id: int = 0) -> torch.Tensor:
    """Rows of ids, right-padded with pad_id: (b, longest row)."""
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def text_ids(tok: Tokenizer, texts: list[str], max_len: int = MAX_TEXT_TOKENS) -> list[list[int]]:
    """Token ids without specials, cut at max_len; empty results dropped."""
    tok.no_truncation()
    tok.no_padding()
    out = [e.ids[:max_len] for e in tok.encode_batch(texts, add_special_tokens=False)]
    return [x for x in out if x]


if __name__ == "__main__":  # rebuild the word list and the tokenizer from wordfreq
    t = build_tokenizer(vocabulary(read_wordfreq()))
    t.save(str(ASSET_DIR / "tokenizer.json"))
    cov, miss = word_coverage(t, read_lines(EVERYDAY_PATH))
    print(f"wrote {ASSET_DIR / 'tokenizer.json'} ({t.get_vocab_size()} entries); "
          f"everyday words that are one token: {cov:.1%}")
