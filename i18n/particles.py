"""Korean particles after a value: 은/는, 이/가, 을/를, 와/과, 으로/로 ... chosen by how the value ends when read
aloud in Korean ("헤드 1은", "헤드 2는", "seq2seq-tiny를", "multilingual-e5-small로", "bergamot-en-pt를").

In a catalogue string the particle goes into the placeholder's format spec, after a bar: `{head:|는}`, `{model:|을}`,
`{score:.3f|은}` (a number format, then the particle). Either form of the pair may be written; the helper picks the
right one. A fixed particle right after a placeholder ("{head}는") is wrong for half the values and a test forbids it.

Every value has a reading, so a particle is always one form, never the fallback "이(가)" (only the empty text has
none). How a value ends, read aloud:
- a model name or an acronym of the table i18n/readings.json ("names": "pt" 피티, "GPT-2" 지피티 투, "MiniLM" 미니엘엠,
  "e5" 이파이브, "BART" 바트, "RoPE" 로프, "cos" 코사인): the last syllable of its reading; matched without case as
  the value's end after a space, a hyphen, an underscore or a dot;
- a Hangul syllable: its final consonant (받침), if any; ㄹ matters for 으로/로 ("길로", "집으로"); a lone jamo by its
  name (ㄱ 기역, ㄹ 리을, ㅏ 아);
- digits: the Korean reading of the number's end: 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠, 8 팔, 9 구, 0 영;
  trailing zeros are 십 / 백 / 천 / 만 / 억 ("10은", "100은", "1000은", "20은"); but one digit right after a Latin
  letter (or after one and a hyphen or underscore) is part of a name and read in English, as Koreans read them
  ("GPT-2" 투, "L6" 식스, "W_1" 원, "x1" 원); any Unicode digit (², ₀, ①) by its value, a fraction by its numerator
  (¼ 사분의 일);
- Latin letters (accents dropped: é e, ë e): a single letter, an acronym (all capitals), a name's capital tail
  ("MiniLM": L, M) or a run with no vowel ("pt", "js", "ffn") letter by letter, by the Korean letter names (L 엘,
  M 엠, N 엔, R 알; the others end in a vowel: "PNG는", "CPU는", "Q는", "Z는"); a word by its last sound (-l ㄹ, -m /
  -n / -ng a final consonant; -p / -t / -k after a short vowel ㅂ ㅅ ㄱ, "swap" 스왑, "cat" 캣, but after a consonant
  or a long vowel a syllable of their own, "product" 프로덕트, "speak" 스피크; -x 스 and -ght 트; a silent -e after
  m, n, l keeps theirs, "time" 타임, "line" 라인, "table" 테이블; "small로", "tiny를", "Python은", "Softmax로");
- other letters, symbols and emoji by their name: a symbol of the table's "symbols" by its Korean name ("·"
  가운뎃점, " " 공백, "\n" 줄바꿈, "," 쉼표), any other by the last word of its Unicode name read as an English word
  (α ALPHA 알파, ε EPSILON 엡실론, Л EL 엘, 🐶 DOG FACE 페이스);
- punctuation, quotes, brackets and code marks after letters or digits are not read: the character before them is
  ("“그것은”" 은, "`it`)" 잇).
"""

from __future__ import annotations

import functools
import json
import unicodedata
from fractions import Fraction
from pathlib import Path

# particle -> (after a final consonant, after a vowel); 으로/로 also takes 로 after ㄹ
PAIRS = {
    "은": ("은", "는"), "는": ("은", "는"), "이": ("이", "가"), "가": ("이", "가"), "을": ("을", "를"),
    "를": ("을", "를"), "과": ("과", "와"), "와": ("과", "와"), "으로": ("으로", "로"), "로": ("으로", "로"),
    "이나": ("이나", "나"), "나": ("이나", "나"), "이라": ("이라", "라"), "라": ("이라", "라"),
    "이랑": ("이랑", "랑"), "랑": ("이랑", "랑"), "이다": ("이다", "다"), "이에요": ("이에요", "예요"),
    "예요": ("이에요", "예요"), "으로서": ("으로서", "로서"), "로서": ("으로서", "로서"),
}
RIEUL = 8  # index of ㄹ among the final consonants (jongseong)
READINGS_PATH = Path(__file__).resolve().parent / "readings.json"
_DIGIT_FINAL = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ", "9": ""}
_ENGLISH_DIGIT_FINAL = {"0": "", "1": "ㄴ", "2": "", "3": "", "4": "", "5": "", "6": "", "7": "ㄴ", "8": "ㅅ", "9": "ㄴ"}
# 제로 원 투 쓰리 포 파이브 식스 세븐 에잇 나인
_ZEROS_FINAL = {1: "ㅂ", 2: "ㄱ", 3: "ㄴ", 4: "ㄴ", 5: "ㄴ", 6: "ㄴ", 7: "ㄴ", 8: "ㄱ"}  # 십 백 천 만 십만 백만 천만 억
_LETTER_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "r": "ㄹ"}  # letter names: 엘 엠 엔 알; the others end in a vowel
_WORD_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ"}  # a word's last letter that is a final consonant in Korean
_STOPS = {"p": "ㅂ", "t": "ㅅ", "k": "ㄱ"}  # after a short vowel: 스왑, 캣, 북
_LONG_VOWELS = ("ea", "ee", "ai", "oa", "ei", "ie", "oo")  # then a stop is a syllable of its own: 스피크, 부트, 루프
_VOWELS = set("aeiouy")
_JAMO_VOWELS = {"A", "AE", "YA", "YAE", "EO", "E", "YEO", "YE", "O", "WA", "WAE", "OE", "YO", "U", "WEO", "WE", "WI",
                "YU", "EU", "YI", "I", "ARAEA", "ARAEAE"}  # a jamo named so is a vowel (아, 애, ...)
_CLOSERS = "`*\"'”’」』>)]}"  # quotes, code marks and brackets round a symbol: "`▁`" is read as "▁"
_READ_AFTER = frozenset("%°℃+#")  # symbols read aloud after a word or number ("3%" 삼 퍼센트, "C++" 씨 플러스)


@functools.cache
def readings() -> tuple[dict[str, str], dict[str, str]]:
    """The table (i18n/readings.json): names and acronyms by lower-case key -> reading; symbols -> Korean name."""
    data = json.loads(READINGS_PATH.read_text(encoding="utf-8"))
    return {k.lower(): v for k, v in data["names"].items()}, dict(data["symbols"])


def hangul_final(text: str) -> str:
    """The final sound of the last Hangul syllable of `text` ("" a vowel, "ㄹ", or "ㅇ" for any other consonant)."""
    for ch in reversed(text):
        if "\uac00" <= ch <= "\ud7a3":
            jong = (ord(ch) - 0xAC00) % 28
            return "" if jong == 0 else ("ㄹ" if jong == RIEUL else "ㅇ")  # any batchim but ㄹ acts alike here
    raise ValueError(f"no Hangul syllable in the reading {text!r}")


def _is_read(ch: str) -> bool:
    """A letter or a digit (what is read aloud), or a symbol read after a word ("%")."""
    return ch.isalnum() or unicodedata.category(ch)[0] in "LN" or ch in _READ_AFTER


def _table(s: str) -> str | None:
    """The reading's final sound when the end of `s` is a name of the table: the whole value, or its end after a
    space, hyphen, underscore, dot or any other mark (the longest such end that is listed)."""
    names = readings()[0]
    for j in range(max(0, len(s) - 40), len(s)):  # no name is longer than 40 characters
        if (j == 0 or not s[j - 1].isalnum()) and s[j:].lower() in names:
            return hangul_final(names[s[j:].lower()])
    return None


def _number(s: str) -> str:
    """The final sound of the number that ends `s` (its last character is a digit)."""
    vals, k = [], len(s)
    while k > 0 and (unicodedata.digit(s[k - 1], None) is not None or (s[k - 1] == "," and vals)):
        if s[k - 1] != ",":
            vals.append(str(unicodedata.digit(s[k - 1])))
        k -= 1
    digits = "".join(reversed(vals))
    before = s[:k]
    glued = before[-1:] if before[-1:] not in ("-", "_") else before[-2:-1] if len(before) > 1 else ""
    if len(digits) == 1 and glued.isascii() and glued.isalpha():  # a name's digit: GPT-2 투, L6 식스, W_1 원
        return _ENGLISH_DIGIT_FINAL[digits]
    stripped = digits.rstrip("0")
    if not stripped:
        return _DIGIT_FINAL["0"]  # 0, 00: 영
    zeros = len(digits) - len(stripped)
    return _ZEROS_FINAL.get(zeros, "ㄴ") if zeros else _DIGIT_FINAL[stripped[-1]]


def _fold(ch: str) -> str:
    """A Latin letter without its accents ("é" -> "e", "ı" -> "i", "Ŀ" -> "L"), else the character."""
    base = unicodedata.normalize("NFKD", ch)
    base = "".join(c for c in base if not unicodedata.combining(c))[:1] or ch
    return {"ı": "i", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ß": "s", "æ": "e", "œ": "e",
            "ŀ": "l"}.get(ch, base if base.isascii() else ch)


def _latin(s: str) -> str:
    """The final sound of the Latin letters that end `s`."""
    run = ""
    for ch in reversed(s):
        f = _fold(ch)
        if not (f.isascii() and f.isalpha()):
            break
        run = f + run
    low = run.lower()
    tail_caps = len(run) - len(run.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    if len(run) == 1 or run.isupper() or tail_caps >= 2 or not (_VOWELS & set(low)):
        return _LETTER_FINAL.get(low[-1], "")  # letter by letter: PNG, MiniLM, pt, js
    return word_final(low)


def word_final(w: str) -> str:
    """The final sound of an English word read in Korean (lower case)."""
    if w.endswith("ng"):
        return "ㅇ"
    if w.endswith(("ck", "ic", "ac")):
        return "ㄱ"  # back 백, logic 로직
    if w.endswith(("x", "ght")):  # -x is read 스 (box 박스, Softmax 소프트맥스); -ght 트 (light 라이트)
        return ""
    if len(w) > 2 and w[-1] == "e" and w[-2] not in _VOWELS:  # a silent e: time 타임, line 라인, table 테이블
        return _WORD_FINAL.get(w[-2], "")
    last = w[-1]
    if last in _STOPS:
        if len(w) == 1 or w[-2] not in _VOWELS or w[-3:-1] in _LONG_VOWELS:
            return ""  # product 프로덕트, help 헬프, speak 스피크, loop 루프
        return _STOPS[last]  # swap 스왑, cat 캣, book 북
    return _WORD_FINAL.get(last, "")


def _name_final(ch: str) -> str:
    """A character by its name: a Korean symbol name from the table, a jamo's name, else the last word of its
    Unicode name read as an English word (a control character by its code, as figures show it: \\x07)."""
    symbols = readings()[1]
    if ch in symbols:
        return hangul_final(symbols[ch])
    if ch.isspace():
        return hangul_final(symbols[" "])
    name = unicodedata.name(ch, "")
    if not name:
        code = f"{ord(ch):02x}"
        return _number(code) if code[-1].isdigit() else _LETTER_FINAL.get(code[-1], "")
    words = name.replace("-", " ").split()
    if words[0] == "HANGUL":  # a jamo: ㄱ 기역, ㄹ 리을 (compounds end as their last part), ㅏ 아
        last = words[-1].split("-")[-1]
        return "" if last in _JAMO_VOWELS else ("ㄹ" if last.endswith("RIEUL") else "ㅇ")
    alpha = [w for w in words if w.isalpha()]
    word = (alpha[-1] if alpha else words[-1]).lower()
    return _LETTER_FINAL.get(word, "") if len(word) == 1 else word_final(word)


def final_sound(value: str) -> str | None:
    """The final consonant of `value` read aloud in Korean ("" = it ends in a vowel, "ㄹ", or "ㅇ" for any other
    consonant); None only for the empty text."""
    s = str(value)
    if not s:
        return None
    if not s.strip():
        return _name_final(s[-1])  # a space, a newline
    s = s.rstrip()
    end = len(s)
    while end > 0 and not _is_read(s[end - 1]):
        end -= 1
    if end == 0:  # no letter or digit: the last symbol by its name ("·" 가운뎃점, "," 쉼표), inside its quotes
        return _name_final(s.rstrip(_CLOSERS)[-1:] or s[-1])
    s = s[:end]
    named = _table(s)
    if named is not None:
        return named
    c = s[-1]
    if "\uac00" <= c <= "\ud7a3":
        return hangul_final(c)
    if c in _READ_AFTER:
        return _name_final(c)
    if unicodedata.digit(c, None) is not None:
        return _number(s)
    if unicodedata.category(c)[0] == "N":  # ¼, Ⅳ, ①: a fraction by its numerator (사분의 일), else its value
        v = Fraction(unicodedata.numeric(c)).limit_denominator(1000)
        return _number(str(v.numerator))
    f = _fold(c)
    if f.isascii() and f.isalpha():
        return _latin(s)
    return _name_final(c)


def particle(value: str, form: str) -> str:
    """The form of particle `form` (either of its pair) that follows `value`."""
    if form not in PAIRS:
        raise ValueError(f"unknown particle {form!r}; known: {', '.join(PAIRS)}")
    after_consonant, after_vowel = PAIRS[form]
    end = final_sound(value)
    if end is None:  # cannot tell: both forms, as Korean writes it then ("은(는)", "(으)로")
        return "(으)로" if after_consonant == "으로" else f"{after_consonant}({after_vowel})"
    if after_consonant == "으로" or after_consonant == "으로서":
        return after_vowel if end in ("", "ㄹ") else after_consonant
    return after_consonant if end else after_vowel


def with_particle(value: str, form: str) -> str:
    return f"{value}{particle(value, form)}"


class Shown(str):
    """Text made ready for where it is shown (escaped for markdown or HTML, quoted, shortened) that remembers the raw
    text it shows: a particle after it is chosen from the raw text, never from the escaping ("<bos>가", not
    "&lt;bos&gt;이"; "<eos>를", not "\\<eos\\>"). `ui.view.md_escape` and `viz.theme.esc` return one."""

    raw: str

    def __new__(cls, shown: str, raw: object = None) -> Shown:
        obj = super().__new__(cls, shown)
        obj.raw = str(shown if raw is None else getattr(raw, "raw", raw))
        return obj

    def __reduce__(self):  # copy, deepcopy (plotly copies its figures' text) and pickle keep the raw text
        return (Shown, (str(self), self.raw))


def raw_text(value: object) -> str:
    """The text a particle is chosen from: a Shown value's raw text, else the value as text."""
    return value.raw if isinstance(value, Shown) else str(value)
