"""The message catalogue (i18n/): every key in both languages, identical format placeholders, every message
formats, every key the tour / quiz / share code asks for exists, and the Korean text uses the glossary's terms (the
lecture notes' way: 어텐션, 쿼리, 인코더 ... and Positional Encoding, Softmax, Add & Norm ... in English)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ci_support import skip_or_fail

from i18n import LANGS, catalogue, glossary, pick_lang, t, term
from i18n.catalog import catalogue_files, placeholders, render

ROOT = Path(__file__).resolve().parents[1]
USERS = ["ui/tour.py", "ui/tour_decoder.py", "ui/quiz.py", "ui/share.py"]


def test_same_keys_in_every_language():
    """Every key in both languages, except where the English lives once in the code: raised errors (the raise site's
    message; tests/test_i18n_errors.py checks their Korean) and model names (the registry's labels)."""
    en, ko = catalogue("en"), catalogue("ko")
    raised = {k for k in ko if k.startswith(("error.", "shell.model."))} - {k for k in en if k.startswith("error.")}
    assert set(en) == set(ko) - raised, {"only en": sorted(set(en) - set(ko)), "only ko": sorted(set(ko) - set(en) - raised)}
    assert raised and len(en) > 100


@pytest.mark.parametrize("lang", LANGS)
def test_each_catalogue_file_is_named_by_the_prefix_of_its_keys(lang):
    """i18n/<lang>.<prefix>.json holds exactly the keys `<prefix>.*` of that language: one file per prefix, every
    file of the folder read, none named by the change that added it."""
    files = catalogue_files(lang)
    assert [p.name for p in files] == sorted(p.name for p in (ROOT / "i18n").glob(f"{lang}*.json"))
    prefixes = {p.name.split(".")[1]: {k.split(".")[0] for k in json.loads(p.read_text(encoding="utf-8"))}
                for p in files}
    assert {name: keys for name, keys in prefixes.items() if keys != {name}} == {}
    assert set(prefixes) == {k.split(".")[0] for k in catalogue(lang)}
    assert {"tour", "heads", "steps", "shell"} <= set(prefixes) and len(files) >= 30


@pytest.mark.parametrize("lang", LANGS)
def test_messages_are_non_empty_and_format(lang):
    for key, msg in catalogue(lang).items():
        assert msg.strip(), key
        render(msg, **{p: 1 for p in placeholders(msg)})  # every placeholder takes a number (ints take .3f, ',')


def test_placeholders_identical():
    en, ko = catalogue("en"), catalogue("ko")
    diff = {k: (placeholders(en[k]), placeholders(ko[k])) for k in en if placeholders(en[k]) != placeholders(ko[k])}
    assert len(en) > 100
    assert not diff


def test_keys_used_in_code_exist():
    from model.data import TASKS
    from ui.tour import STEPS

    used = set()
    for path in USERS:
        src = (ROOT / path).read_text(encoding="utf-8")
        used |= set(re.findall(r"\bt\(\s*[\"']([a-z_]+\.[a-z_.]+)[\"']", src))
    used |= {f"tour.{s}.{part}" for s in STEPS for part in ("title", "body")}
    used |= {f"tour.task.{x}" for x in TASKS}
    used |= {f"tour.positional.part.{k}" for k in ("token", "position", "token_type", "sum")}
    from ui.tour import AXES
    used |= set(AXES.values())
    used |= {f"stage.{k}" for k in ("X", "memory", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "mask",
                                    "masked", "weights", "Z", "Z_all", "W_O", "output")}
    missing = sorted(k for k in used if k not in catalogue("en"))
    assert not missing
    assert len(used) > 80


def test_lookup_fallbacks():
    assert t("tour.next", "ko") == "다음"
    assert t("tour.step_of", "en", i=3, n=14) == "Step 3 of 14"
    assert t("tour.next", "xx") == t("tour.next", "en")  # unknown language: English
    assert t("no.such.key", "ko") == "no.such.key"
    assert pick_lang(None, ["ko"]) == "ko" and pick_lang("fr", "EN") == "en" and pick_lang() == "en"


def test_glossary_shared_and_used():
    g = glossary()
    assert {"attention", "self_attention", "multi_head", "query", "key", "value", "encoder", "decoder", "embedding",
            "token", "positional_encoding", "softmax", "masked", "add_norm", "feed_forward"} <= set(g)
    ko_text = "\n".join(catalogue("ko").values())
    en_text = "\n".join(catalogue("en").values())
    for key, entry in g.items():
        assert entry["en"] and entry["ko"], key
        assert entry["ko"] in ko_text, f"glossary term {entry['ko']!r} ({key}) is never used in Korean"
        assert entry["en"].lower() in en_text.lower(), f"glossary term {entry['en']!r} is never used in English"
        for bad in entry.get("avoid", []):
            assert bad not in ko_text, f"{bad!r}: the glossary says {entry['ko']!r}"
    # the terms the lecture notes keep in English stay English in Korean
    for key in ("positional_encoding", "softmax", "masked", "add_norm", "feed_forward"):
        assert term(key, "ko") == term(key, "en")
    assert term("query", "ko") == "쿼리" and term("attention", "ko") == "어텐션"


def test_korean_step_titles_follow_the_notes():
    assert t("tour.positional.title", "ko") == "Positional Encoding"
    assert t("tour.add_norm.title", "ko") == "Add & Norm" and t("tour.ffn.title", "ko") == "Feed Forward"
    assert "쿼리" in t("tour.qkv.title", "ko") and "밸류" in t("tour.qkv.title", "ko")
    assert "멀티 헤드" in t("tour.concat.title", "ko") and "인코더-디코더 어텐션" == t("tour.cross.title", "ko")


def test_matplotlib_export_renders_hangul():
    """A Korean title in a slide export uses a CJK font (Noto CJK, installed by CI): no missing-glyph warning."""
    import warnings

    import numpy as np

    from viz.export import _CJK_FONTS, figure_bytes, font_family, heatmap_figure

    if not any(f in font_family() for f in _CJK_FONTS):
        skip_or_fail("no CJK font installed (apt-get install fonts-noto-cjk)")
    title = t("tour.add_norm.stats_fig", "ko") + " · " + t("tour.step_title", "ko", i=10, n=14, title="Add & Norm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = heatmap_figure(np.eye(3, dtype=np.float32), ["쿼리", "키", "밸류"], ["토큰", "어텐션", "인코더"], title=title,
                             subtitle="그 동물은 너무 피곤해서 길을 건너지 않았다")
        png = figure_bytes(fig, "png")
    missing = [str(w.message) for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]
    assert not missing, missing[:3]
    assert png[:4] == b"\x89PNG"
