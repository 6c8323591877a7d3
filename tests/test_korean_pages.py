"""Issue 26 (a Korean lecturer, in front of a class): every page of ui/pages.py, every tab, rendered in Korean
(`?lang=ko`), holds none of the English words a Korean interface must not show, in ANY rendered text: markdown,
captions, notices, labels, options, help, placeholders, and in the plotly figures' JSON (titles, axis and colour-bar
titles, legend titles, trace names, hover templates, annotations, tick labels).

Stricter than tests/i18n_support.py's `english_only` (which skips any line holding Hangul): a Korean sentence with
"may attend" or "context vector" inside it is caught here. Allowed: what the lecture notes keep in English
(i18n/glossary.json: Positional Encoding, Softmax, Masked, Add & Norm, Feed Forward), model names, the sentence's
own tokens, and formulas' symbols (a formula's \\text{...} words are checked: "may attend" is a word).

Also the multiselects: a Streamlit multiselect with no placeholder shows "Choose options", and its bulk action
"Select all" is English (Streamlit 1.67 cannot translate it; the app turns it off); "No results" (shown when a typed
filter matches nothing) cannot be set at all in Streamlit 1.67."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import explorer as ex
from ui import heads as uh
from ui import mask_lab, pe_lab, tour
from ui.pages import PAGES, page_file
from viz.steps import step_tabs

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[1] / "app.py")

# English a Korean page must not show (whole words; case-sensitive where the glossary keeps a capitalised term)
FORBIDDEN = [
    r"weights?", r"mask(?:s|ed)?:?", r"blocked", r"may attend", r"context vector", r"Choose (?:an )?options?",
    r"Select all", r"No results", r"[Ll]ayers?", r"[Hh]eads?", r"[Qq]uer(?:y|ies)", r"[Kk]eys?", r"[Vv]alues?",
    r"[Tt]okens?", r"dimensions?", r"positions?", r"scores?", r"RELU", r"[Ss]ource", r"[Tt]arget", r"[Hh]over",
    r"probabilit(?:y|ies)", r"attention", r"[Ss]tep", r"[Oo]utput", r"[Ii]nput", r"[Ss]entence",
]
FORBIDDEN_RE = re.compile(r"(?<![A-Za-z_\\])(?:" + "|".join(FORBIDDEN) + r")(?![A-Za-z_])")
TEXT_IN_LATEX = re.compile(r"\\(?:text|mathrm|textrm)\{([^{}]*)\}")  # words a formula shows: \text{may attend}
LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
HTML_TAG = re.compile(r"<[^<>]*>")
FIGURE_KEYS = {"text", "hovertemplate", "name", "ticktext", "texttemplate"}  # a figure's words (not x / y / z data)
TEXT = "The animal didn't cross the street because it was tired"


def _figure_strings(node, key: str = "", in_title: bool = False) -> list[str]:
    """The words of a plotly figure: titles (of the figure, axes, colour bars, legends), annotations, trace names,
    hover and text templates, tick labels; not the data (x, y, z, customdata, a trace's per-cell text)."""
    out: list[str] = []
    if isinstance(node, dict):
        hidden = node.get("showlegend") is False and "<extra></extra>" in str(node.get("hovertemplate", ""))
        for k, v in node.items():
            if k == "name" and hidden:
                continue  # a trace name nobody sees: no legend entry, no hover box label
            if k in ("x", "y", "z", "customdata", "colorscale", "font", "line", "meta", "template"):
                continue
            if k == "text" and not (in_title or key == "annotation"):
                continue  # a trace's per-cell text: token text and numbers
            out += _figure_strings(v, k, in_title or k == "title")
    elif isinstance(node, list):
        for v in node:
            out += _figure_strings(v, "annotation" if key == "annotations" else key, in_title)
    elif isinstance(node, str) and (in_title or key in FIGURE_KEYS):
        out.append(node)
    return out


def rendered_texts(at) -> list[str]:
    """Every string a user sees in an AppTest run, including the figures' JSON words and the multiselects'
    placeholders and bulk action."""
    out: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error",
                 "exception", "latex"):
        out += [str(e.value) for e in getattr(at, kind)]
    for kind in ("button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider",
                 "text_input", "text_area", "number_input", "button_group"):
        for e in at.get(kind):
            proto = getattr(e, "proto", None)
            out += [str(getattr(e, "label", "") or ""), str(getattr(proto, "help", "") or "")]
            if kind in ("radio", "selectbox", "multiselect", "select_slider"):
                out += [str(o) for o in (getattr(e, "options", None) or [])]
            if kind == "multiselect" and proto is not None:  # shown whenever nothing is chosen
                out.append(proto.placeholder or "Choose options")
            if kind == "selectbox" and proto is not None and e.value is None:
                out.append(proto.placeholder or "Choose an option")
                if kind == "multiselect" and getattr(proto, "select_all", 0):
                    out.append("Select all")
    for kind in ("tab", "expander", "popover", "metric"):
        out += [str(getattr(e, "label", "") or "") for e in at.get(kind)]
    for c in at.get("plotly_chart"):
        out += _figure_strings(json.loads(c.proto.spec))
    for e in at.get("table") + at.get("dataframe"):
        proto = getattr(e, "proto", None)
        data = getattr(proto, "data", b"") if proto is not None else b""
        if data:  # arrow bytes: the column names are plain UTF-8 inside
            out += re.findall(r'"field_name": "([^"]+)"', data.decode("utf-8", "ignore"))
    return [s for s in out if s]


def english_words(texts, tokens=()) -> list[tuple[str, str]]:
    """(word, text) for each forbidden English word left in `texts`, once LaTeX, code spans, HTML tags and the
    allowed token text are taken out."""
    found = []
    for text in texts:
        s = HTML_TAG.sub(" ", LATEX_COMMAND.sub(" ", TEXT_IN_LATEX.sub(r" \1 ", str(text))))
        for tok in sorted({str(x).strip() for x in tokens if str(x).strip()}, key=len, reverse=True):
            s = re.sub(r"(?<![A-Za-z])" + re.escape(tok) + r"(?![A-Za-z])", " ", s)  # token text, as whole words
        s = s.replace("%{", "{")  # plotly's %{x} / %{y} / %{z} placeholders are not words
        s = re.sub(r"\{[^{}]*\}", " ", s)
        for m in FORBIDDEN_RE.finditer(s):
            found.append((m.group(0), str(text)))
    return found


def test_scanner_finds_the_english_the_lecturer_saw():
    seen = ["마스크 (1 = may attend)", "mask: 12 × 12", "이것이 context vector로", "Choose options", "레이어 2 · Head 6",
            "{x}<br>weight %{z:.3f}", "\\text{mask}_{ij} = \\begin{cases} 0 & \\text{blocked}"]
    assert [w for w, _ in english_words(seen)] == ["may attend", "mask:", "context vector", "Choose options",
                                                   "Head", "weight", "mask", "blocked"]
    ok = ["Masked 셀프 어텐션", "Softmax 가중치", "$M_{ij} + \\sqrt{d_k}$", "`<eos>`", "Add & Norm", "Positional Encoding",
          "minilm-l6 · 레이어 3 · 헤드 1", "키 %{x}<br>쿼리 %{y}"]
    assert english_words(ok) == []


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["lang"] = "ko"
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page != page_file("explorer"):
        at.switch_page(page).run()
    assert_ok(at)
    return at


def _tokens(at) -> list[str]:
    from model.examples import EXAMPLE_SENTENCES
    from ui.state import PRESETS

    opts = [str(o).split(": ", 1)[-1] for o in at.selectbox(key="token").options] if _has(at, "token") else []
    return [*opts, *EXAMPLE_SENTENCES, *PRESETS, "this is my car", "that is not", "I am sam", TEXT]


def _has(at, key: str) -> bool:
    try:
        at.selectbox(key=key)
        return True
    except KeyError:
        return False


def _tab_walk(at, key: str, keys: list[str], **fmt) -> list[str]:
    texts = rendered_texts(at)
    for name in keys:
        at.session_state[key] = t(name, "ko", **fmt)
        at.run()
        assert_ok(at)
        texts += rendered_texts(at)
    return texts


def _check(at, texts) -> None:
    assert texts and any("\uac00" <= ch <= "\ud7a3" for ch in " ".join(texts))
    left = english_words(texts, _tokens(at))
    assert left == [], "\n".join(f"{w!r} in {txt!r}" for w, txt in dict.fromkeys(left))


# every page of ui/pages.py, with its tabs (and the states that draw other things)
def _explorer(at):
    texts = _tab_walk(at, ex.K_TAB, ex.TAB_KEYS)
    at.session_state[ex.K_QUIZ] = True
    return texts + _tab_walk(at, ex.K_TAB, ex.TAB_KEYS[:1])


def _explorer_seq2seq(at):
    texts = _tab_walk(at, ex.K_TAB, ex.TAB_KEYS[:3])
    for block in ("decoder_self", "cross"):
        at.radio(key="block").set_value(block).run()
        texts += _tab_walk(at, ex.K_TAB, ex.TAB_KEYS[:3])
    return texts


def _heads(at):
    return _tab_walk(at, uh.K_TAB, uh.TAB_KEYS)


def _seq2seq(at):
    texts = rendered_texts(at)
    at.toggle(key="teacher_forcing").set_value(True).run()
    assert_ok(at)
    return texts + rendered_texts(at)


def _tour(at):
    at.session_state["quiz_on"] = True
    at.run()
    texts = []
    for i in range(1, tour.N_STEPS + 1):
        assert_ok(at)
        texts += rendered_texts(at)
        if i < tour.N_STEPS:
            at.button(key="tour_next_top").click().run()
    return texts


def _deck(at):
    """The deck page empty, then with the example deck loaded, then presenting its first two slides."""
    texts = rendered_texts(at)
    at.button(key="deck_example").click().run()
    assert_ok(at)
    texts += rendered_texts(at)
    at.button(key="deck_present").click().run()
    for _ in range(2):
        assert_ok(at)
        texts += rendered_texts(at)
        at.button(key="deck_next").click().run()
    return texts


CASES = {
    "explorer": (page_file("explorer"), {}, _explorer),
    "deck": (page_file("deck"), {}, _deck),
    "explorer-seq2seq": (page_file("explorer"), {"model": "seq2seq-tiny"}, _explorer_seq2seq),
    "positional": (page_file("positional"), {}, lambda at: _tab_walk(at, "pe_tab", pe_lab.PE_TAB_KEYS)),
    "positional-rope": (page_file("positional"), {"model": "smollm2-135m"},
                        lambda at: _tab_walk(at, "pe_tab", ["pe.tab.rope"])),
    "masks": (page_file("masks"), {}, lambda at: _tab_walk(at, "mask_tab", mask_lab.MASK_TAB_KEYS)),
    "steps": (page_file("steps"), {}, lambda at: _tab_walk(at, "steps_tab", [f"steps.tab.{n}" for n in
                                                                              step_tabs("encoder", False)])),
    "steps-decoder": (page_file("steps"), {"model": "seq2seq-tiny", "block": "cross", "layer": "1"},
                      lambda at: _tab_walk(at, "steps_tab", [f"steps.tab.{n}" for n in step_tabs("cross", True)])),
    "seq2seq": (page_file("seq2seq"), {}, _seq2seq),
    "heads": (page_file("heads"), {}, _heads),
    # a decoder-only model with grouped-query attention: head surgery's heads (with their KV head), the sinks and
    # induction heads
    "heads-smollm2": (page_file("heads"), {"model": "smollm2-135m"},
                      lambda at: _tab_walk(at, uh.K_TAB, ["heads.tab.surgery", "heads.tab.circuits"])),
    "tour": (page_file("tour"), {}, _tour),
    # the Training page: its six tabs (the live run closed: no lecturer key in the tests)
    "training": (page_file("training"), {}, lambda at: _tab_walk(at, "train_tab", [f"train.tab.{k}" for k in (
        "schedule", "smoothing", "teacher", "dropout", "run", "live")])),
    # a rotary model's Q, K, V step: q and k before and after the RoPE turn
    "tour-smollm2-qkv": (page_file("tour"), {"model": "smollm2-135m", "step": str(tour.STEPS.index("qkv") + 1)},
                         rendered_texts),
    # a real translator on the Encoder-decoder page (greedy, then teacher forcing)
    "seq2seq-translator": (page_file("seq2seq"), {"model": "bergamot-en-pt"}, _seq2seq),
    # class mode: the Class page before the key (or the notice that none is set), a student's link to a room that
    # does not exist (the in-room pages: tests/test_app_class.py)
    "class": (page_file("class"), {}, rendered_texts),
    "class-student": (page_file("explorer"), {"room": "ABCD-EFGH"}, rendered_texts),
}


def test_every_page_has_a_case():
    assert {p.file for p in PAGES} == {page for page, _, _ in CASES.values()}


@pytest.mark.parametrize("case", list(CASES))
def test_korean_page_shows_no_forbidden_english(case):
    page, params, walk = CASES[case]
    at = _open(page, **params)
    _check(at, walk(at))
