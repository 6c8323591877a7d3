"""The one message catalogue of Headlight: English and Korean, keyed.

Why a keyed JSON catalogue and not gettext: the Python ecosystem's standard is gettext (stdlib `gettext`, .po/.mo
files via Babel). It keys messages by their English text and needs a compile step (.po -> .mo) and a tool chain
(xgettext / pybabel) to stay in sync; Streamlit reruns the whole script per interaction and only needs a
dictionary lookup per label, with the language chosen per session (not per process, as `gettext.install` would
set it). A small keyed catalogue — JSON files per language, one per key prefix (i18n/en.tour.json holds every
`tour.*` key, i18n/ko.heads.json every Korean `heads.*` key), plain `str.format`
placeholders, and a test (tests/test_i18n.py) that every key exists in both languages with identical placeholders
and that the Korean text uses the glossary's terms — is what Streamlit's own multilingual examples do and needs
no build step. Translators edit JSON; a missing key fails the test, never the app (English, then the key itself,
is the fallback at run time).

    from i18n import t, LANGS
    t("tour.next", "ko")                          # "다음"
    t("tour.step_of", "en", i=3, n=14)            # "Step 3 of 14"
    term("attention", "ko")                       # "어텐션" (i18n/glossary.json)

Korean particles after a value are chosen by the value (i18n/particles.py): "{head:|는}" -> "헤드 1은" / "헤드 2는".
A token before a particle is quoted, with the particle after the quote: "{token:“”|가}" -> "“▁그녀”가" (a token can
itself be a particle or a syllable: "▁그녀는", "않을" would read as a sentence); "{token:``|를}" makes a markdown
code span of the raw text ("`<eos>`를": a code span shows backslash escapes literally). A value escaped for markdown
or HTML (ui.view.md_escape, viz.theme.esc) is a `Shown` that keeps its raw text, and the particle is chosen from that
("<bos>가", never "&lt;bos&gt;이"). A head is named by i18n.names.head_name ("레이어 2 · 헤드 6") and an activation by
activation_name ("ReLU", "GELU", "SiLU/Swish", "SwiGLU").

Terms follow the Korean lecture notes (../shared/seeds/): 어텐션, 셀프 어텐션, 멀티 헤드, 쿼리 / 키 / 밸류, 인코더,
디코더, 임베딩, 토큰 in Korean; Positional Encoding, Softmax, Masked, Add & Norm, Feed Forward kept in English.
No Streamlit here: the UI picks the language (sidebar key "lang", URL `lang=ko|en`) and passes it in.
"""

from __future__ import annotations

import functools
import json
import re
import string
from pathlib import Path

from .particles import Shown, particle, raw_text

LANGS = ("en", "ko")
DEFAULT_LANG = "en"
LANG_NAMES = {"en": "English", "ko": "한국어"}
_DIR = Path(__file__).resolve().parent


def catalogue_files(lang: str) -> list[Path]:
    """One language's files, i18n/<lang>.<prefix>.json: each holds the keys that start with `<prefix>.`
    (tests/test_i18n.py checks it)."""
    return sorted(_DIR.glob(f"{lang}.*.json"))


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """All messages of one language (read once per process); a key defined in two files is an error."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; languages: {', '.join(LANGS)}")
    merged: dict[str, str] = {}
    for path in catalogue_files(lang):
        part = json.loads(path.read_text(encoding="utf-8"))
        twice = sorted(set(part) & set(merged))
        if twice:
            raise ValueError(f"{path.name}: keys already defined in another catalogue file: {', '.join(twice)}")
        merged.update(part)
    return merged


@functools.cache
def glossary() -> dict[str, dict[str, str]]:
    """Shared terms: {term key: {"en": ..., "ko": ...}}."""
    data = json.loads((_DIR / "glossary.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def normalise(lang: object) -> str:
    """A valid language code, or the default."""
    s = str(lang).strip().lower() if lang is not None else ""
    return s if s in LANGS else DEFAULT_LANG


def pick_lang(*candidates: object) -> str:
    """The first candidate that is a known language (e.g. the sidebar's choice, then the URL's), else English."""
    for c in candidates:
        if isinstance(c, list):  # a repeated query parameter
            c = c[0] if c else None
        if c is not None and str(c).strip().lower() in LANGS:
            return str(c).strip().lower()
    return DEFAULT_LANG


QUOTES = {"“”": ("“", "”"), "‘’": ("‘", "’"), '""': ('"', '"'), "「」": ("「", "」")}


def code_span(text: object) -> str:
    """`text` as a markdown code span, shown literally: the raw text (a code span ignores backslash escapes, so an
    escaped value would show its backslashes), fenced by more backticks than any run inside it."""
    s = raw_text(text)
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


class _Formatter(string.Formatter):
    """str.format, plus a Korean particle after a value and the value's quotes or code marks:
    - "{head:|는}" -> "헤드 1은" / "헤드 2는", "{x:.3f|은}" (i18n/particles.py);
    - "{token:“”|가}" -> "“▁그녀”가": the value in quotes, the particle after the closing quote (also ‘’, "", 「」);
    - "{token:``|를}" -> "`<eos>`를": the value as a markdown code span (its raw text), the particle after it.
    The particle is chosen from the raw text of a Shown value (escaped for markdown or HTML), never the escapes."""

    def format_field(self, value, format_spec: str) -> str:
        spec, form = format_spec.rsplit("|", 1) if "|" in format_spec else (format_spec, None)
        if spec in QUOTES:
            text = QUOTES[spec][0] + str(value) + QUOTES[spec][1]
        elif spec == "``":
            text = code_span(value)
        else:
            text = format(value, spec)
        if form is None:
            return text
        said = raw_text(value) if isinstance(value, Shown) or spec in QUOTES or spec == "``" else text
        return text + particle(said, form)


FORMATTER = _Formatter()


def render(msg: str, /, **fmt) -> str:
    """Format a catalogue message (placeholders and particles)."""
    return FORMATTER.format(msg, **fmt) if fmt else msg


def t(key: str, lang: str = DEFAULT_LANG, /, **fmt) -> str:
    """The message `key` in `lang` (falling back to English, then to the key), formatted with `fmt`."""
    msg = catalogue(normalise(lang)).get(key)
    if msg is None:
        msg = catalogue(DEFAULT_LANG).get(key, key)
    return render(msg, **fmt)


def error_message(exc: BaseException, lang: str = DEFAULT_LANG) -> str:
    """An error for the user in `lang`. English: the error's own message. Other languages: the catalogue's
    "error.<key>" for an error that names its message (model.errors.HeadlightError's `key` and `params`; a
    parameter value that is itself a catalogue word, "error.value.<value>", is translated too), else the English
    message after a lead-in in `lang` ("error.untranslated")."""
    lang = normalise(lang)
    text = str(exc)
    if lang == DEFAULT_LANG:
        return text
    cat = catalogue(lang)
    key = getattr(exc, "key", None)
    params = getattr(exc, "params", None) or {}
    msg = cat.get(f"error.{key}") if key else None
    if msg is not None:
        words = {k: cat.get(f"error.value.{v}", v) if isinstance(v, str) else v for k, v in params.items()}
        try:
            return render(msg, **words)
        except (KeyError, IndexError, ValueError):  # a parameter the catalogue does not know: the lead-in below
            pass
    return render(cat["error.untranslated"], msg=text)


def term(key: str, lang: str = DEFAULT_LANG) -> str:
    """A glossary term in `lang`."""
    entry = glossary()[key]
    return entry.get(normalise(lang), entry["en"])


def placeholders(msg: str) -> set[str]:
    """The named `str.format` fields of a message ("{i} of {n}" -> {"i", "n"})."""
    return {name for _, name, _, _ in string.Formatter().parse(msg) if name}
