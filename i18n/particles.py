"""Korean particles after a value: 은/는, 이/가, 을/를, 와/과, 으로/로 ... chosen by how the value ends when read
aloud in Korean ("헤드 1은", "헤드 2는", "seq2seq-tiny를", "multilingual-e5-small로").

In a catalogue string the particle goes into the placeholder's format spec, after a bar: `{head:|는}`, `{model:|을}`,
`{score:.3f|은}` (a number format, then the particle). Either form of the pair may be written; the helper picks the
right one. A fixed particle right after a placeholder ("{head}는") is wrong for half the values and a test forbids it.

How a value ends, read aloud:
- a Hangul syllable: its final consonant (받침), if any; ㄹ matters for 으로/로 ("길로", "집으로");
- digits: the Korean reading of the number's end: 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠, 8 팔, 9 구, 0 영;
  trailing zeros are 십 / 백 / 천 / 만 / 억 ("10은", "100은", "1000은", "20은");
- Latin letters: an acronym or a single letter by its letter name (L 엘, M 엠, N 엔; "PNG는", "CPU는"); a word by
  its last sound (-l ㄹ, -m / -n / -ng / -k / -p / -t a final consonant: "small로", "tiny를", "Python은";
  but -x is read 스 and -ght 트, vowels: "Softmax로", "Headlight를");
- anything else (punctuation, quotes, brackets, code marks) is skipped to the character before it; a value with no
  readable end gets both forms, "은(는)".
"""

from __future__ import annotations

# particle -> (after a final consonant, after a vowel); 으로/로 also takes 로 after ㄹ
PAIRS = {
    "은": ("은", "는"), "는": ("은", "는"), "이": ("이", "가"), "가": ("이", "가"), "을": ("을", "를"),
    "를": ("을", "를"), "과": ("과", "와"), "와": ("과", "와"), "으로": ("으로", "로"), "로": ("으로", "로"),
    "이나": ("이나", "나"), "나": ("이나", "나"), "이라": ("이라", "라"), "라": ("이라", "라"),
    "이랑": ("이랑", "랑"), "랑": ("이랑", "랑"), "이다": ("이다", "다"), "이에요": ("이에요", "예요"),
    "예요": ("이에요", "예요"), "으로서": ("으로서", "로서"), "로서": ("으로서", "로서"),
}
RIEUL = 8  # index of ㄹ among the final consonants (jongseong)
_DIGIT_FINAL = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ", "9": ""}
_ZEROS_FINAL = {1: "ㅂ", 2: "ㄱ", 3: "ㄴ", 4: "ㄴ", 5: "ㄴ", 6: "ㄴ", 7: "ㄴ", 8: "ㄱ"}  # 십 백 천 만 십만 백만 천만 억
_LETTER_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ"}  # letter names: 엘 엠 엔; the others end in a vowel
_WORD_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "k": "ㄱ", "p": "ㅂ", "t": "ㅅ", "b": "", "d": "", "g": ""}


def final_sound(value: str) -> str | None:
    """The final consonant of `value` read aloud in Korean ("" = it ends in a vowel), or None if it cannot say."""
    s = str(value).rstrip()
    while s and not (s[-1].isalnum()):
        s = s[:-1].rstrip()
    if not s:
        return None
    c = s[-1]
    if "\uac00" <= c <= "\ud7a3":
        jong = (ord(c) - 0xAC00) % 28
        return "" if jong == 0 else ("ㄹ" if jong == RIEUL else "ㅇ")  # any batchim other than ㄹ acts alike here
    if c.isdigit():
        digits = ""
        for ch in reversed(s):
            if not (ch.isdigit() or ch == ","):
                break
            digits = ch + digits
        digits = digits.replace(",", "")
        stripped = digits.rstrip("0")
        if not stripped:
            return _DIGIT_FINAL["0"]  # 0, 00: 영
        zeros = len(digits) - len(stripped)
        return _ZEROS_FINAL.get(zeros, "ㄴ") if zeros else _DIGIT_FINAL[stripped[-1]]
    if c.isascii() and c.isalpha():
        run = ""
        for ch in reversed(s):
            if not (ch.isascii() and ch.isalpha()):
                break
            run = ch + run
        if len(run) == 1 or run.isupper():  # a letter or an acronym: read letter by letter
            return _LETTER_FINAL.get(run[-1].lower(), "")
        low = run.lower()
        if low.endswith("ng"):
            return "ㅇ"
        if low.endswith("ck"):
            return "ㄱ"
        if low.endswith(("x", "ght")):  # -x is read 스 (box 박스, Softmax 소프트맥스); -ght 트 (light 라이트)
            return ""
        return _WORD_FINAL.get(low[-1], "")
    return None


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
