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
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from model.data import ASSET_DIR, MAX_TEXT_TOKENS, SPECIAL_TOKENS, UNK

N_WORDS = 16_000  # whole words in the vocabulary (by frequency)
N_PIECE_WORDS = 40_000  # the next words of the list, on which word pieces are trained
N_PIECES = 1_500  # WordPiece trainer budget (its alphabet included)
SENTENCE_WORDS = 60_000  # sentence-like sequences draw from this many words (by frequency)
KO_WORDS = 16_000  # Korean entries of wordfreq's Korean list (morphemes as MeCab-ko segments them), by frequency
KO_SHARE = 0.4  # share of the sentence-like training stream that is Korean

# Korean particles and endings as people write them after a stem (a hand-written grammar list: case particles,
# verb endings and their frequent combinations, honorific and tense markers, 하다 / 되다 forms). Each becomes a
# continuation piece ("##었어요"), so "늦었어요" is two tokens, 늦 ##었어요, instead of four.
KO_ENDINGS = """
은 는 이 가 을 를 에 에서 에게 께 께서 의 도 만 로 으로 와 과 랑 이랑 하고 까지 부터 처럼 보다 마다 에는 에서는 에게는 으로는 로는 과는 와는 이나 나 이라도 라도
조차 밖에 뿐 이다 입니다 이에요 예요 이었다 였다 이었어요 였어요 인데 이지만 이고 이며 이라고 라고 이라는 라는 에도 에서도 으로도 로도 까지는 부터는 에서부터 한테 한테서
이랑은 만은 만큼 같이 다 요 어요 아요 여요 해요 었다 았다 했다 었어요 았어요 했어요 었습니다 았습니다 였습니다 했습니다 습니다 니다 합니다 한다 는다 고 지 지만 는데 은데
면 으면 서 어서 아서 해서 여서 니까 으니까 자 세요 으세요 셨다 으셨다 셨어요 으셨어요 십니다 으십니다 셨습니다 으셨습니다 겠다 겠어요 겠습니다 겠네요 기 던 었던 았던 했던
게 도록 려고 으려고 러 으러 면서 으면서 다가 었다가 았다가 고서 거나 든지 네요 군요 구나 지요 죠 잖아요 을까 을까요 까요 래요 대요 냐 니 어라 아라 자고 다고 냐고 는다고
었는데 았는데 했는데 었지만 았지만 했지만 었고 았고 했고 었기 았기 했기 어야 아야 해야 어도 아도 해도 었으면 았으면 했으면 어서요 아서요 해서요 는데요 은데요 거든요 는지
은지 을지 기로 기에 기가 기를 기는 기도 음 았음 었음 함 됨 어야지 아야지 해야지 겠지 겠지만 을게요 게요 을게 을래 을래요 래 려면 으려면 더니 었더니 았더니 했더니 다면
는다면 었다면 았다면 했다면 라서 이라서 이어서 하다 한 할 하는 하지 하면 하니 하게 해 했 하여 하였다 됩니다 된다 되었다 됐다 되어 돼 돼요 됐어요 되었습니다 시 으시 신
으신 실 으실 시는 으시는 시고 으시고 셔서 으셔서 세 이었 였 었 았 겠 시켜 시킨 에요 인가요 나요 가요 은가요 던가요 데요 대로 수 수가 수는 줄 적 척 뻔 이지 이죠 인지
이면 이라면 이었다면 였다면 이니까 니까요 으니까요 다는 는다는 았다는 었다는 했다는 들 들이 들은 들을 들과 들의 들에게 들도 들이랑 들한테 님 님의 님께서 님께 님이 님은 님을
님도 님과 님이랑 하신 하시고 하세요 하실 하시는 하겠습니다 하니까 하려고 하기 하기로 하도록 하면서 하지만 하는데 하자 합시다 하셨다 하셨어요 하셨습니다 해라 되다 되고 되는
되면 되지 되었어요 된 될 되니까 되어서 돼서 되기 되도록 었어 았어 였어 했어 어 아 여 야 이야 거야 을거야 는거야 잖아 네 지마 지마세요 마세요 말고 스럽다 스러운 스럽게
롭다 로운 롭게 적인 적으로 적이다 답다 다운 답게 같다 같은 없다 없는 없이 있다 있는 있게
""".split()

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
EVERYDAY_KO_PATH = ASSET_DIR / "everyday_ko.txt"  # Korean sentences written by hand (issue 16)
EVERYDAY_KO_HOLDOUT_PATH = ASSET_DIR / "everyday_ko_holdout.txt"  # kept aside until the final checkpoint

LETTERS = string.ascii_lowercase
DIGITS = string.digits
# ASCII punctuation and the typographic marks phones and word processors type (after lowercasing / accent
# stripping); each is its own token
PUNCT = string.punctuation + "‘’‚“”„–—…•·°£€¥¢§¶©®™×÷±½¼¾¹²³µ¿¡«»"
_ALPHA = re.compile(r"[a-z]+")


def normalizer():
    """Lowercase, strip accents, clean control characters, space out CJK ideographs, as BERT does, but recompose
    Hangul (NFC) afterwards: stripping accents decomposes text (NFD), which takes every Hangul syllable apart into
    jamo ("동" -> "ᄃ ᅩ ᆼ"), and NFC puts it back together (accents, already removed, stay removed)."""
    return normalizers.Sequence([
        normalizers.BertNormalizer(lowercase=True, strip_accents=False, clean_text=True, handle_chinese_chars=True),
        normalizers.NFD(), normalizers.StripAccents(), normalizers.NFC()])


def pre_tokenizer():
    return pre_tokenizers.Sequence([pre_tokenizers.BertPreTokenizer(), pre_tokenizers.Digits(individual_digits=True)])


# ---- the word list (wordfreq) ----------------------------------------------------

def read_wordfreq(n: int = N_WORDS + N_PIECE_WORDS + 20_000) -> list[tuple[str, float]]:
    """(word, frequency) of the n most frequent English entries of wordfreq, most frequent first."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("en")
    return [(w, freq[w]) for w in wordfreq.top_n_list("en", n)]


HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]+")


def ks_x_1001_syllables() -> list[str]:
    """The 2,350 Hangul syllables of the KS X 1001 (EUC-KR) set, in code order: every everyday Korean word is
    spelled with them, so each is a word start and a ## continuation and no Hangul word becomes <unk>."""
    return [chr(c) for c in range(0xAC00, 0xD7A4) if len(chr(c).encode("euc-kr", errors="ignore")) == 2]


def read_wordfreq_ko(n: int = 30_000) -> list[tuple[str, float]]:
    """(entry, frequency) of wordfreq's Korean list (Hangul-only entries, most frequent first)."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("ko")
    return [(w, freq[w]) for w in wordfreq.top_n_list("ko", n) if HANGUL_WORD.fullmatch(w)]


def _norm_words(words: list[tuple[str, float]]) -> list[tuple[str, float]]:
    norm = normalizer()
    return [(norm.normalize_str(w), f) for w, f in words]


def vocabulary(words: list[tuple[str, float]], n_words: int = N_WORDS,
               korean: list[tuple[str, float]] | None = None, n_korean: int = KO_WORDS) -> list[str]:
    """Specials, characters, whole words and contraction pieces, then trained word pieces (see the module doc);
    then Korean (when given): entries of the Korean list as word starts and as ## continuations, the particles and
    endings of KO_ENDINGS as continuations, and the 2,350 KS X 1001 syllables both ways."""
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
    if korean is not None:
        ko = [w for w, _ in korean[:n_korean]]
        for w in ko:
            add(w)
        for w in [*ko, *KO_ENDINGS]:
            add("##" + w)
        syllables = ks_x_1001_syllables()
        for c in syllables:
            add(c)
        for c in syllables:
            add("##" + c)
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


@dataclass(frozen=True)
class KoreanTokens:
    n_tokens: int  # text tokens of the texts
    unk_rate: float  # share of them that are <unk>
    n_eojeol: int  # whitespace-separated words with Hangul
    eojeol_le2: float  # share of those whose letters are at most 2 tokens
    mean_tokens: float  # tokens per eojeol


def korean_tokens(tok: Tokenizer, texts: list[str]) -> KoreanTokens:
    """How the tokenizer reads Korean: the <unk> share of all text tokens, and for each eojeol (a space-separated
    word with Hangul) the tokens of its letters: punctuation and digits are left out (digits are one token each
    by design, so that every number is exact)."""
    unk = tok.token_to_id(UNK)
    n_tok = n_unk = 0
    lengths: list[int] = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        n_tok += len(ids)
        n_unk += ids.count(unk)
        for w in text.split():
            core = re.sub(r"[^\uac00-\ud7a3A-Za-z]", "", w)
            if HANGUL_WORD.search(core):
                lengths.append(len(tok.encode(core, add_special_tokens=False).ids))
    n = max(len(lengths), 1)
    return KoreanTokens(n_tok, n_unk / max(n_tok, 1), len(lengths), sum(x <= 2 for x in lengths) / n,
                        sum(lengths) / n)


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


class KoreanSentenceMaker:
    """Korean sentence-like strings: eojeol built as a stem of wordfreq's Korean list (by frequency, a quarter
    uniformly) plus zero to two particles or endings, numbers with Korean counters, punctuation. Not Korean text
    from any source: the everyday Korean sets are written by hand and share nothing with it."""

    COUNTERS = ["개", "명", "시", "분", "원", "년", "월", "일", "번", "살", "층", "km", "%"]

    def __init__(self, words: list[tuple[str, float]], n: int = KO_WORDS):
        words = words[:n]
        self.words = [w for w, _ in words]
        total, acc = sum(f for _, f in words), 0.0
        self.cum = []
        for _, f in words:
            acc += f / total
            self.cum.append(acc)
        self.endings = KO_ENDINGS + [w for w in self.words[:400] if len(w) <= 2]

    def eojeol(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.06:
            return SentenceMaker.number(rng) + (rng.choice(self.COUNTERS) if rng.random() < 0.7 else "")
        stem = rng.choice(self.words) if r < 0.3 else rng.choices(self.words, cum_weights=self.cum)[0]
        k = rng.choices((0, 1, 2), weights=(0.3, 0.55, 0.15))[0]
        return stem + "".join(rng.choice(self.endings) for _ in range(k))

    def sentence(self, rng: random.Random, n_words: int) -> str:
        out = []
        for i in range(n_words):
            w = self.eojeol(rng)
            if rng.random() < 0.02:
                out.extend([w] * rng.randint(1, 2))
            out.append(w)
            if i < n_words - 1 and rng.random() < 0.08:
                out[-1] += rng.choice([",", ",", ".", "!", "?", "…"])
            elif rng.random() < 0.02:
                out[-1] = rng.choice(['"', "(", "'", "“"]) + out[-1] + rng.choice(['"', ")", "'", "”"])
            elif rng.random() < 0.03:  # a Latin word inside Korean text ("Python으로", "AI")
                out[-1] = rng.choice(["AI", "PDF", "Python", "email", "app", "OK", "TV", "PC"]) + out[-1][-1:]
        text = " ".join(out)
        return text + rng.choice([".", ".", ".", "?", "!", "", "요."]) if rng.random() < 0.8 else text

    def sentences(self, seed: int, count: int, max_words: int = 30) -> list[str]:
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
    t = build_tokenizer(vocabulary(read_wordfreq(), korean=read_wordfreq_ko()))
    t.save(str(ASSET_DIR / "tokenizer.json"))
    cov, miss = word_coverage(t, read_lines(EVERYDAY_PATH))
    print(f"wrote {ASSET_DIR / 'tokenizer.json'} ({t.get_vocab_size()} entries); "
          f"everyday words that are one token: {cov:.1%}")
