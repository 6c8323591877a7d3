"""Finding English-only text in a Korean page (issue 11: with lang=ko, no English-only string outside model
names, token text and formulas). Shared by the AppTest suites and the browser test.

A string counts as English-only when it has no Hangul and still holds a word of three or more Latin letters
after removing what may stay Latin in Korean: model names, the sentence's own tokens, LaTeX, the glossary's
terms that the lecture notes keep in English (Positional Encoding, Softmax, Masked, Add & Norm, Feed Forward),
file formats and symbols (Q, K, V, W_O, d_k, PNG, ...)."""

from __future__ import annotations

import json
import re

HANGUL = re.compile("[\uac00-\ud7a3]")
WORD = re.compile(r"[A-Za-z]{3,}")
LATEX = re.compile(r"\$[^$]*\$|\\[A-Za-z]+")  # $...$ and \\commands
CODE = re.compile(r"`[^`]*`")  # inline code: token text, identifiers, file names

# Latin words that may stay in a Korean interface (lower case)
ALLOWED = {
    # model names and parts of them
    "minilm", "seq2seq", "seq", "tiny", "paper", "base", "bert", "bertviz", "gelu", "relu", "multilingual", "small",
    # terms the lecture notes keep in English (i18n/glossary.json)
    "positional", "encoding", "softmax", "masked", "add", "norm", "feed", "forward", "layernorm", "concat",
    # formats, units and symbols
    "png", "svg", "pdf", "csv", "html", "json", "npz", "url", "cpu", "cuda", "gpu", "qkv", "ffn", "max", "min",
    "argmax", "sin", "cos", "log", "exp", "sqrt", "mean", "std", "var", "headlight", "lang", "unk", "pad", "bos",
    "eos", "cls", "sep", "mask", "copy", "reverse", "swap", "plotly", "top",
    # the language picker names each language in that language ("English", "한국어"), as language menus do
    "english",
}


def english_only(texts, tokens=()) -> list[str]:
    """The strings of `texts` that are English-only (see the module doc). `tokens`: the sentence's token texts,
    which may be Latin in any language."""
    allowed = ALLOWED | {w.lower() for tok in tokens for w in WORD.findall(str(tok))}
    out = []
    for text in texts:
        s = str(text or "")
        if not s.strip() or HANGUL.search(s):
            continue
        s = CODE.sub(" ", LATEX.sub(" ", s))
        if any(w.lower() not in allowed for w in WORD.findall(s)):
            out.append(str(text))
    return out


def _figure_texts(spec: str) -> list[str]:
    """A plotly figure's title and axis titles."""
    fig = json.loads(spec)
    layout = fig.get("layout", {})
    out = []
    for key, value in layout.items():
        if key == "title" or key.startswith(("xaxis", "yaxis")):
            title = value.get("title", value) if isinstance(value, dict) and key != "title" else value
            if isinstance(title, dict):
                title = title.get("text", "")
            if isinstance(title, str):
                out.append(title)
    for ann in layout.get("annotations", []) or []:
        if isinstance(ann, dict) and ann.get("text"):
            out.append(ann["text"])
    return out


def page_texts(at) -> list[str]:
    """Every user-visible string of an AppTest run: headings, text, notices, labels of widgets, tabs and
    expanders, help texts, and plotly figure titles."""
    out: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error",
                 "exception", "latex"):
        if kind == "latex":
            continue  # formulas
        out.extend(e.value for e in getattr(at, kind))
    for kind in ("button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider",
                 "text_input", "text_area", "number_input"):
        for e in at.get(kind):
            out.append(getattr(e, "label", ""))
            out.append(getattr(e.proto, "help", "") if hasattr(e, "proto") else "")
            if kind in ("radio", "selectbox", "multiselect", "select_slider"):
                out.extend(str(o) for o in (getattr(e, "options", None) or []))
    for kind in ("tab", "expander", "popover", "metric"):
        for e in at.get(kind):
            out.append(getattr(e, "label", "") or "")
    for c in at.get("plotly_chart"):
        out.extend(_figure_texts(c.proto.spec))
    return [s for s in out if s]
