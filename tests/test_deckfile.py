"""ui/deckfile.py, the lesson deck without Streamlit: JSON round trip, the checks of an imported file (bad JSON,
huge files, unknown pages and keys, wrong types: a DeckError or a DeckNote, never a traceback), reorder and delete,
capturing a view (a tab by its id, the Encoder-decoder page's own keys), a version 1 file's tab labels read as ids,
and the example decks of the lecture's pipeline."""

from __future__ import annotations

import json
import re

import pytest

from i18n import LANGS, catalogue, t
from ui import deckfile as df
from ui.deckfile import Deck, DeckError, Slide, capture, from_json, to_json
from ui.pages import BY_NAME

SCRIPT = "<script>alert(1)</script>"


def _deck() -> Deck:
    return Deck(title=f"어텐션 {SCRIPT}", lang="ko", slides=(
        Slide("explorer", {"text": "그 동물은 너무 피곤해서 길을 건너지 않았다", "model": "multilingual-e5-small",
                           "layer": "3", "head": "1", "lang": "ko", "ex_tab": "all"}, {"ex_hide_special": True},
              title=SCRIPT, note="줄 하나\n줄 둘"),
        Slide("tour", {"text": "I am good", "step": "6"}, title="Mask"),
        Slide("steps", {"layer": "0", "steps_tab": "qkv"}),
        Slide("seq2seq", {"s2s_model": "seq2seq-tiny", "s2s_task": "reverse", "s2s_tf": "1", "s2s_layer": "0",
                          "s2s_head": "mean", "s2s_step": "3"}),
    ))


def _file(**changes) -> dict:
    obj = json.loads(to_json(_deck()))
    obj.update(changes)
    return obj


def _error(obj) -> DeckError:
    data = obj if isinstance(obj, (str, bytes)) else json.dumps(obj)
    with pytest.raises(DeckError) as info:
        from_json(data)
    return info.value


def test_round_trip_keeps_everything_as_text():
    deck = _deck()
    text = to_json(deck)
    assert "그 동물은" in text and SCRIPT in text  # Hangul and markup kept as they are (the UI escapes them)
    back, notes = from_json(text)
    assert back == deck and notes == []
    assert from_json(text.encode("utf-8"))[0] == deck
    obj = json.loads(text)
    assert obj["format"] == "headlight-deck" and obj["version"] == df.VERSION == 2
    assert obj["slides"][2]["query"]["steps_tab"] == "qkv" and obj["slides"][2]["options"] == {}  # a tab's id


@pytest.mark.parametrize("data,key", [
    (b"{not json", "deck.err.json"),
    (b"\xff\xfe\x00garbage", "deck.err.encoding"),
    (b"[1, 2, 3]", "deck.err.not_deck"),
    (b'{"title": "no format"}', "deck.err.not_deck"),
    (b"[" * 100_000 + b"]" * 100_000, "deck.err.json"),  # nested too deep for the parser
    (b" " * (df.MAX_BYTES + 1), "deck.err.too_big"),
])
def test_files_that_are_not_decks(data, key):
    err = _error(data)
    assert err.key == key
    assert t(key, "en", **err.params) and t(key, "ko", **err.params)  # a message in both languages


def test_a_huge_file_is_refused_before_parsing():
    huge = json.dumps(_file(title="x" * (df.MAX_BYTES + 10)))
    err = _error(huge)
    assert err.key == "deck.err.too_big" and err.params["limit"] == df.MAX_BYTES


@pytest.mark.parametrize("change,where,want", [
    ({"version": "1"}, "version", "number"),
    ({"slides": {"0": {}}}, "slides", "list"),
    ({"title": 5}, "title", "text"),
])
def test_wrong_types_at_the_top(change, where, want):
    err = _error(_file(**change))
    assert (err.key, err.params["where"], err.params["want"]) == ("deck.err.type", where, want)


@pytest.mark.parametrize("slide,where,want", [
    ("not a slide", "slides[1]", "object"),
    ({"page": 3}, "slides[1].page", "text"),
    ({"page": "steps", "query": ["layer", 1]}, "slides[1].query", "object"),
    ({"page": "steps", "query": {"layer": [1]}}, "slides[1].query.layer", "text"),
    ({"page": "steps", "query": {"lecture": True}}, "slides[1].query.lecture", "text"),
    ({"page": "steps", "options": {"ex_hide_special": "yes"}}, "slides[1].options.ex_hide_special", "bool"),
    ({"page": "steps", "query": {"steps_tab": 2.5}}, "slides[1].query.steps_tab", "text"),
    ({"page": "steps", "note": {"x": 1}}, "slides[1].note", "text"),
])
def test_wrong_types_in_a_slide(slide, where, want):
    err = _error(_file(slides=[slide]))
    assert (err.key, err.params["where"], err.params["want"]) == ("deck.err.type", where, want)
    assert where in t(err.key, "en", **err.params)


def test_newer_versions_and_too_many_slides():
    assert _error(_file(version=3)).key == "deck.err.version"
    err = _error(_file(slides=[{"page": "steps"}] * (df.MAX_SLIDES + 1)))
    assert err.key == "deck.err.too_many"


def test_unknown_pages_and_keys_are_dropped_with_a_note():
    obj = _file(lang="fr", slides=[
        {"page": "explorer", "query": {"layer": 2, "head": "1", "evil": "x", "deck": "abcdefghij"},
         "options": {"ex_mode": "mean", "password": "x"}},
        {"page": "../../etc/passwd", "title": "gone"},
        {"page": "tour", "title": "y" * (df.MAX_TITLE + 5), "query": {"step": "3"}},
    ])
    deck, notes = from_json(json.dumps(obj))
    assert [s.page for s in deck.slides] == ["explorer", "tour"]
    assert deck.slides[0].query == {"layer": "2", "head": "1"}  # a number becomes the URL's text
    assert deck.slides[0].options == {"ex_mode": "mean"}
    assert len(deck.slides[1].title) == df.MAX_TITLE and deck.lang == "en"
    keys = [(n.key, n.params.get("key") or n.params.get("page") or n.params.get("value") or n.params.get("where"))
            for n in notes]
    assert keys == [("deck.note.lang", "fr"), ("deck.note.key", "evil"), ("deck.note.key", "deck"),
                    ("deck.note.key", "password"), ("deck.note.page", "../../etc/passwd"),
                    ("deck.note.cut", "slides[3].title")]
    for note in notes:
        for lang in LANGS:
            assert "{" not in t(note.key, lang, **note.params)


def test_every_message_key_is_in_both_catalogues():
    src = open(df.__file__, encoding="utf-8").read()
    keys = set(re.findall(r'"(deck\.(?:err|note)\.[a-z_]+)"', src))
    assert len(keys) >= 12
    for lang in LANGS:
        cat = catalogue(lang)
        assert keys <= set(cat), sorted(keys - set(cat))
        assert {f"deck.want.{w}" for w in ("number", "list", "text", "object", "bool")} <= set(cat)


def test_reorder_delete_edit():
    deck = _deck().delete(3)
    pages = lambda d: [s.page for s in d.slides]  # noqa: E731
    assert pages(deck.move(2, -1)) == ["explorer", "steps", "tour"]
    assert pages(deck.move(0, 1)) == ["tour", "explorer", "steps"]
    assert pages(deck.move(0, -1)) == pages(deck) == pages(deck.move(2, 1))  # at the ends: unchanged
    assert pages(deck.move(9, 1)) == pages(deck)
    assert pages(deck.delete(1)) == ["explorer", "steps"] and deck.delete(7) == deck
    edited = deck.edit(1, title="T" * 500, note="note", page="heads")
    assert len(edited.slides[1].title) == df.MAX_TITLE and edited.slides[1].note == "note"
    assert edited.slides[1].page == "tour"  # only title and note can be edited
    assert deck.slides[1].title == "Mask"  # decks are immutable
    with pytest.raises(DeckError):
        Deck(slides=(Slide("steps"),) * df.MAX_SLIDES).add(Slide("steps"))


def test_capture_keeps_the_view_and_the_page_options_only():
    query = {"text": "I am good", "model": "minilm-l6", "layer": "1", "head": "2", "token": "1", "lang": "ko",
             "step": "6", "hl_tab": "atlas", "ex_tab": "all", "steps_tab": "x", "deck": "abcdefghij", "slide": "3",
             "back": "abcdefghij", "utm": "x", "s2s_task": "swap", "s2s_tf": "1", "s2s_layer": "1",
             "s2s_step": "4", "s2s_target": "t" * 500}
    options = {"ex_mode": "mean", "ex_hide_special": 1, "mask_tab": None, "teacher_forcing": True}
    view = {"text": "I am good", "model": "minilm-l6", "layer": "1", "head": "2", "token": "1", "lang": "ko"}
    tour = capture("tour", query, options)
    assert tour.query == {**view, "step": "6"} and tour.options == {}
    ex = capture("", query, options, title="t")  # "" is the default page, the explorer
    assert ex.page == "explorer" and ex.query == {**view, "ex_tab": "all"}  # no deck, slide, back or other page's
    assert ex.options == {"ex_mode": "mean", "ex_hide_special": True}
    assert capture("/steps", query, options).query == {**view, "steps_tab": "x"}
    assert capture("heads", query, options).query == {**view, "hl_tab": "atlas"}
    s2s = capture("seq2seq", query, options)
    assert s2s.query == {**view, "s2s_task": "swap", "s2s_tf": "1", "s2s_layer": "1", "s2s_step": "4",
                         "s2s_target": "t" * 500} and s2s.options == {}  # a typed target is not cut at 200
    with pytest.raises(DeckError):
        capture("nowhere", query, options)


@pytest.mark.parametrize("label,lang,tab", [("7 · Feed Forward", "en", "ffn"), ("2 · W_Q, W_K, W_V and Q, K, V", "en", "qkv"),
                                            ("4 · Softmax와 Z = A V", "ko", "softmax"), ("qkv", "en", "qkv")])
def test_a_version_1_file_keeps_its_tabs_as_ids(label, lang, tab):
    """Version 1 kept a lab's open tab among the options, by its label (of any language), and the Head lab's in the
    query: read as the tab's id; teacher forcing as `s2s_tf`; a label no tab has is kept for the page to refuse."""
    assert t(f"steps.tab.{tab}", lang) == label or label == tab
    old = {"format": "headlight-deck", "version": 1, "title": "old", "lang": lang, "slides": [
        {"page": "steps", "query": {"layer": "1"}, "options": {"steps_tab": label}},
        {"page": "heads", "query": {"hl_tab": t("heads.tab.surgery", lang)}},
        {"page": "explorer", "options": {"ex_tab": t("ex.tab.metrics", lang), "ex_mode": "mean"}},
        {"page": "positional", "options": {"pe_tab": t("pe.tab.rope", lang)}},
        {"page": "masks", "options": {"mask_tab": t("masks.tab.look_ahead", lang)}},
        {"page": "seq2seq", "options": {"teacher_forcing": True}},
        {"page": "steps", "options": {"steps_tab": "9 · A renamed tab"}},
    ]}
    deck, notes = from_json(json.dumps(old))
    assert notes == []
    assert [(s.query, s.options) for s in deck.slides] == [
        ({"layer": "1", "steps_tab": tab}, {}), ({"hl_tab": "surgery"}, {}), ({"ex_tab": "metrics"}, {"ex_mode": "mean"}),
        ({"pe_tab": "rope"}, {}), ({"mask_tab": "look_ahead"}, {}), ({"s2s_tf": "1"}, {}),
        ({"steps_tab": "9 · A renamed tab"}, {})]
    assert df.tab_label("steps_tab", tab, "ko") == t(f"steps.tab.{tab}", "ko")
    assert df.tab_label("hl_tab", "crosslingual", "en") == t("e5.tab.crosslingual", "en")
    assert df.tab_label("steps_tab", "add_norm_dec_ssru", "en") == t("trpages.steps.tab.add_norm_dec_ssru", "en")
    assert df.tab_label("steps_tab", "9 · A renamed tab", "en") == "9 · A renamed tab"


def test_text_limit_matches_the_text_box():
    from ui.state import MAX_TEXT_CHARS

    assert df.MAX_TEXT == MAX_TEXT_CHARS


@pytest.mark.parametrize("lang", LANGS)
def test_the_example_decks(lang):
    from model import list_models
    from model.examples import EXAMPLE_SENTENCES, KOREAN_EXAMPLE_SENTENCES
    from ui.explorer import TAB_KEYS
    from ui.mask_lab import MASK_TAB_KEYS
    from ui.pe_lab import PE_TAB_KEYS
    from ui.tour import N_STEPS, STEPS

    deck, notes = from_json((df.EXAMPLES / f"pipeline.{lang}.json").read_bytes())
    assert notes == [] and deck.lang == lang and deck.title
    assert len(deck) == 11
    assert [s.page for s in deck.slides] == ["tour", "positional", "steps", "steps", "masks", "steps", "explorer",
                                            "steps", "steps", "seq2seq", "tour"]
    ids = lambda keys: {k[k.rindex(".") + 1:] for k in keys}  # noqa: E731
    tabs = {"steps_tab": {k[len("steps.tab."):] for k in catalogue(lang) if k.startswith("steps.tab.")},
            "pe_tab": ids(PE_TAB_KEYS), "mask_tab": ids(MASK_TAB_KEYS), "ex_tab": ids(TAB_KEYS)}
    sentences = EXAMPLE_SENTENCES if lang == "en" else KOREAN_EXAMPLE_SENTENCES
    for i, slide in enumerate(deck.slides, start=1):
        assert slide.page in BY_NAME
        assert slide.title and slide.note and not slide.title[0].isdigit(), i  # the bar numbers the slides
        assert slide.query["lang"] == lang and slide.query["model"] in list_models()
        assert slide.query["text"] in sentences
        if slide.page == "tour":
            assert 1 <= int(slide.query["step"]) <= N_STEPS
        assert not set(slide.options) & set(tabs), i  # a tab is in the query, by its id
        for key, value in slide.query.items():
            if key in tabs:
                assert value in tabs[key], (i, key, value)
    # the deck opens the tour at its first step and closes it at the output probabilities (step 14), not at a
    # step added after it (15: what changed since 2017)
    assert [STEPS[int(s.query["step"]) - 1] for s in deck.slides if s.page == "tour"] == ["tokens", "output"]
    if lang == "ko":  # a model that reads Korean, and Korean words in every note
        assert {s.query["model"] for s in deck.slides} == {"multilingual-e5-small"}
        assert all(re.search("[가-힣]", s.note) for s in deck.slides)
