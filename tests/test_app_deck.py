"""AppTest of the lesson deck (ui/deck.py): "Add to deck" from two pages, reorder, edit, export and import back,
the short link (?deck=<id>, and ?deck=<id>&slide=<i> in present mode), the present mode's Back / Next moving
between the slides' pages and views, and the example decks opening every slide's page without an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import shortlinks
from ui.deckfile import Deck, example, from_json, to_json
from ui.pages import page_file
from ui.present import DECK, PRESENT
from ui.shell import PAGES_KEY

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))


def _app(page: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page_file(page)).run()
    return at


def _title(at) -> str:
    return at.title[0].value


def _presenting(at):
    return at.session_state[PRESENT] if PRESENT in at.session_state else None


def _deck(at) -> Deck:
    return at.session_state[DECK]


def test_add_two_views_reorder_export_and_import_back():
    at = _app()
    assert_ok(at)
    add = at.sidebar.button(key="deck_add")
    assert add.label == t("deck.add", "en", n=0)
    at.selectbox(key="layer").set_value(2).run()
    at.sidebar.button(key="deck_add").click().run()
    assert_ok(at)
    assert any("Added as slide 1" in s.value for s in at.success)
    at.switch_page(page_file("steps")).run()
    at.text_area(key="text").set_value(SCRIPT + " I am good").run()
    at.sidebar.button(key="deck_add").click().run()
    assert_ok(at)
    assert at.sidebar.button(key="deck_add").label == t("deck.add", "en", n=2)

    at.switch_page(page_file("deck")).run()
    assert_ok(at)
    assert _title(at) == "Lesson deck"
    assert at.sidebar.button(key="deck_add").disabled  # the deck page is not a view to add
    heads = [m.value for m in at.markdown if m.value.startswith("**Slide ")]
    assert heads[0].startswith("**Slide 1 of 2** · Attention explorer · minilm\\-l6 · Layer 2 · Head 0")
    assert "Step by step" in heads[1] and "\\<script\\>alert\\(1\\)\\</script\\> I am good" in heads[1]
    assert [s.page for s in _deck(at).slides] == ["explorer", "steps"]
    assert _deck(at).slides[0].query["layer"] == "2" and _deck(at).slides[1].query["text"] == SCRIPT + " I am good"

    at.text_input(key="deck_title").set_value("My deck")
    at.text_input(key="deck_t1").set_value(SCRIPT)  # typed, then a button clicked: the edit is kept
    at.text_area(key="deck_n1").set_value("say\nthis")
    at.button(key="deck_up_1").click().run()
    assert_ok(at)
    deck = _deck(at)
    assert deck.title == "My deck" and [s.page for s in deck.slides] == ["steps", "explorer"]
    assert (deck.slides[0].title, deck.slides[0].note) == (SCRIPT, "say\nthis")
    assert at.text_input(key="deck_t0").value == SCRIPT  # shown as text in a text box, never as HTML
    assert at.button(key="deck_up_0").disabled and at.button(key="deck_down_1").disabled

    export = at.download_button(key="deck_export")
    assert export.proto.label == "Export the deck (JSON)" and export.proto.url.endswith(".json")
    data = to_json(deck).encode("utf-8")  # what the button serves

    at.button(key="deck_del_0").click().run()
    assert [s.page for s in _deck(at).slides] == ["explorer"]
    at.button(key="deck_new").click().run()
    assert len(_deck(at)) == 0 and any("No slides yet" in i.value for i in at.info)

    at.file_uploader(key="deck_upload").set_value(("my-deck.json", data, "application/json")).run()
    assert_ok(at)
    assert _deck(at) == deck
    assert any("Imported 2 slides: My deck" in s.value for s in at.success)
    assert at.text_input(key="deck_t0").value == SCRIPT and at.text_area(key="deck_n0").value == "say\nthis"

    at.file_uploader(key="deck_upload").set_value(("bad.json", b'{"format": "headlight-deck", "version": 1, '
                                                   b'"slides": [{"page": "steps", "query": {"layer": [1]}}]}',
                                                   "application/json")).run()
    assert_ok(at)
    assert any(r"slides\[1\]\.query\.layer should be text" in w.value for w in at.warning), [w.value for w in at.warning]
    assert _deck(at) == deck  # a refused file changes nothing


def test_a_short_link_opens_the_deck_and_a_slide_link_presents_it():
    deck, _ = from_json(Path(__file__).resolve().parents[1].joinpath("assets/decks/pipeline.en.json").read_bytes())
    sid = shortlinks.put("deck", to_json(deck))
    at = _app(deck=sid)
    at.switch_page(page_file("deck")).run()
    assert_ok(at)
    assert _deck(at) == deck and at.text_input(key="deck_t3").value == deck.slides[3].title
    assert _presenting(at) is None

    at = _app(deck=sid, slide="2")  # a slide's link opened on another page: the slide's page and view
    assert_ok(at)
    assert _title(at) == "Step by step: scaled dot-product attention"
    assert any(m.value.startswith("**3 / 11 · Q, K, V**") for m in at.markdown)
    assert _presenting(at) == {"id": sid, "slide": 2, "back": None}  # no view to go back to: a link
    assert at.session_state["steps_tab"] == t("steps.tab.qkv", "en") and deck.slides[2].query["steps_tab"] == "qkv"

    at = _app(deck="zzzzzzzzzz")
    assert_ok(at)
    assert any("No deck on this server has the link id zzzzzzzzzz" in w.value for w in at.warning)
    at = _app(deck=sid, slide="99")
    assert any("asks for slide 99" in w.value for w in at.warning) and _presenting(at) is None


def test_the_deck_page_makes_the_short_link():
    at = _app("deck")
    at.button(key="deck_example").click().run()
    at.button(key="deck_share").click().run()
    assert_ok(at)
    (code,) = [c.value for c in at.code if "?deck=" in c.value]
    sid = code.rsplit("=", 1)[1]
    assert shortlinks.is_id(sid) and from_json(shortlinks.get("deck", sid))[0] == _deck(at)


def test_present_next_and_back_move_between_the_slides_views():
    at = _app("deck", lang="ko")
    at.button(key="deck_example").click().run()
    deck = _deck(at)
    assert deck.lang == "ko" and len(deck) == 11
    at.button(key="deck_from_5").click().run()  # present from slide 6: Softmax on Step by step, layer 3 head 1
    assert_ok(at)
    assert _title(at) == t("steps.title", "ko")
    assert at.text_area(key="text").value == deck.slides[5].query["text"]
    assert at.selectbox(key="model").value == "multilingual-e5-small"
    assert (at.session_state["layer"], at.session_state["head"]) == (3, 1)
    assert at.session_state["steps_tab"] == t("steps.tab.softmax", "ko")
    assert any(m.value.startswith("**6 / 11 · Softmax와 Z = A V**") for m in at.markdown)
    assert at.button(key="deck_next").proto.shortcut.lower() == "right" and at.button(key="deck_back").proto.shortcut.lower() == "left"
    sid = _presenting(at)["id"]
    assert shortlinks.get("deck", sid) == to_json(deck)
    assert (at.query_params["deck"], at.query_params["slide"]) in ((sid, "5"), ([sid], ["5"]))

    at.button(key="deck_next").click().run()  # slide 7: the explorer's "All heads" tab
    assert_ok(at)
    assert _title(at) == t("page.explorer", "ko")
    assert at.session_state["ex_tab"] == t("ex.tab.all", "ko")
    assert any(m.value.startswith("**7 / 11") for m in at.markdown)
    at.button(key="deck_back").click().run()
    at.button(key="deck_back").click().run()  # slide 5: the Mask lab
    assert_ok(at)
    assert _title(at) == t("masks.title", "ko")
    assert _presenting(at)["slide"] == 4
    assert any(m.value.startswith("**5 / 11 · 마스크**") for m in at.markdown)
    at.button(key="deck_exit").click().run()
    assert_ok(at)
    assert _title(at) == t("page.deck", "ko") and _presenting(at) is None
    assert not at.button(key="deck_present").disabled


SIDEBAR = {"en": "sidebar", "ko": "사이드바"}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_tour_slide_shows_one_back_next_pair_and_no_sidebar(lang):
    """Presenting, the deck's bar is the one Back / Next (with the arrow keys): the tour draws neither of its own
    pairs nor its step picker, and says nothing of the hidden sidebar; not presenting, all of it is back."""
    at = _app("deck", lang=lang)
    at.button(key="deck_example").click().run()
    at.button(key="deck_present").click().run()  # slide 1: the tour, step 1
    assert_ok(at)
    assert _title(at) == t("tour.title", lang) and at.session_state["_tour_step"] == 1
    assert [b.key for b in at.button if b.label in (t("deck.back", lang), t("deck.next", lang), t("tour.back", lang),
                                                     t("tour.next", lang))] == ["deck_back", "deck_next"]
    assert at.button(key="deck_next").proto.shortcut.lower() == "right"
    assert not [b for b in at.selectbox if b.key == "tour_jump"]
    shown = [c.value for c in at.main.caption] + [m.value for m in at.main.markdown] + [i.value for i in at.main.info]
    model = _deck(at).slides[0].query["model"]
    assert t("tour.where_present", lang, model=model, layer=0, head=0) in shown
    assert not [x for x in shown if SIDEBAR[lang] in x]
    at.button(key="deck_exit").click().run()
    at.switch_page(page_file("tour")).run()
    assert at.button(key="tour_next_top").proto.shortcut.lower() == "right"  # not presenting: the tour's again
    assert at.button(key="tour_next_bottom") and [b for b in at.selectbox if b.key == "tour_jump"]
    where = t("tour.where", lang, model=at.session_state["model"], layer=0, head=0)  # the view before presenting
    assert where in [c.value for c in at.main.caption] and SIDEBAR[lang] in where


def _sidebar_state(at) -> dict:
    ss = at.session_state
    return {k: ss[k] for k in ("lang", "lecture", "model", "text", "layer", "head", "token")}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_leaving_a_presentation_returns_to_the_view_before_it(lang):
    """Issue 34: Present, Next, Exit came back in English with lecture mode off, MiniLM and layer / head 0. Exit
    returns to the view before presenting: language, lecture mode, model, sentence, layer, head, token, the deck
    page's own title and language; after a reload while presenting too (the link keeps where to go back)."""
    text = "철수는 영희에게 책을 빌려주었다" if lang == "ko" else "The cat sat on the mat because it was warm"
    at = _app("deck", lang=lang, lecture="1", model="multilingual-e5-small", layer="2", head="5", text=text)
    at.selectbox(key="token").set_value(4).run()
    at.button(key="deck_example").click().run()
    at.text_input(key="deck_title").set_value("My lecture").run()
    before = _sidebar_state(at)
    assert before == {"lang": lang, "lecture": True, "model": "multilingual-e5-small", "text": text, "layer": 2,
                      "head": 5, "token": 4}
    url = dict(at.query_params)
    at.button(key="deck_present").click().run()
    at.button(key="deck_next").click().run()
    at.button(key="deck_next").click().run()  # slide 3: Step by step on the deck's model, layer 0, head 0
    assert_ok(at)
    assert _sidebar_state(at) != before and at.session_state["steps_tab"] == t("steps.tab.qkv", lang)
    present = dict(at.query_params)
    assert shortlinks.is_id(present["back"])
    at.button(key="deck_exit").click().run()
    assert_ok(at)
    assert _title(at) == t("page.deck", lang) and _presenting(at) is None
    assert _sidebar_state(at) == before
    assert at.text_input(key="deck_title").value == "My lecture" and at.selectbox(key="deck_lang").value == lang
    assert dict(at.query_params) == url  # the link is the one before presenting
    assert not at.warning

    # a reload while presenting: a new session opened on the slide's link, then Next and Exit
    again = AppTest.from_file(APP, default_timeout=180)
    for k, v in present.items():
        again.query_params[k] = v
    again.switch_page(page_file("steps")).run()
    assert_ok(again)
    assert _presenting(again)["slide"] == 2
    again.button(key="deck_next").click().run()
    again.button(key="deck_exit").click().run()
    assert_ok(again)
    assert _title(again) == t("page.deck", lang) and _sidebar_state(again) == before
    assert dict(again.query_params) == url


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_deck_link_opens_in_the_decks_language(lang):
    """Issue 34: `/deck?deck=<id>` of a Korean deck opened in English. It opens in the deck's language (the menu
    too); a language named in the link wins."""
    deck, _ = example(lang)
    sid = shortlinks.put("deck", to_json(deck))
    other = "en" if lang == "ko" else "ko"
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["deck"] = sid
    at.switch_page(page_file("deck")).run()
    assert_ok(at)
    assert _title(at) == t("page.deck", lang) and at.session_state["lang"] == lang
    assert at.session_state[PAGES_KEY][0] == lang  # the menu is made in it from the first run
    assert _deck(at) == deck and at.text_input(key="deck_title").value == deck.title
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(deck=sid, lang=other)
    at.switch_page(page_file("deck")).run()
    assert _title(at) == t("page.deck", other) and _deck(at) == deck


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_slide_of_the_example_deck_opens_its_page(lang):
    at = _app("deck", lang=lang)
    at.button(key="deck_example").click().run()
    deck = _deck(at)
    at.button(key="deck_present").click().run()
    titles = []
    for i, slide in enumerate(deck.slides):
        assert_ok(at)
        assert not at.warning, (i, [w.value for w in at.warning])
        assert _presenting(at)["slide"] == i
        assert at.text_area(key="text").value == slide.query["text"]
        titles.append(_title(at))
        if i < len(deck) - 1:
            at.button(key="deck_next").click().run()
    assert at.button(key="deck_next").disabled
    assert titles == [t(k, lang) for k in ("tour.title", "pe.title", "steps.title", "steps.title", "masks.title",
                                           "steps.title", "page.explorer", "steps.title", "steps.title", "s2s.title",
                                           "tour.title")]
    from ui.tour import STEPS

    assert STEPS[at.session_state["_tour_step"] - 1] == "output"  # the last slide: the output step, not the one after it


def test_the_deck_page_and_its_bar_in_korean():
    from i18n_support import english_only, page_texts

    from ui.state import PRESETS

    at = _app("deck", lang="ko")
    texts = page_texts(at)
    at.button(key="deck_example").click().run()
    texts += page_texts(at)
    at.button(key="deck_share").click().run()
    texts += page_texts(at)
    at.button(key="deck_from_9").click().run()  # the bar over the Encoder-decoder page
    assert_ok(at)
    bar = [m.value for m in at.markdown if m.value.startswith("**10 / 11")]
    assert bar and "디코더" in bar[0]
    texts += page_texts(at)
    css = ("<style>",)  # the present mode's and lecture mode's constant CSS: not text
    assert english_only([x for x in texts if not str(x).startswith(css)], PRESETS) == []
    assert {t("deck.back", "ko"), t("deck.next", "ko"), t("deck.exit", "ko")} <= {b.label for b in at.button}


def test_an_encoder_decoder_slide_keeps_the_pages_task_layer_step_and_teacher_forcing():
    """Issue 34: a slide of the Encoder-decoder page kept the sidebar's view but not the page's own choices. They are
    in the slide's query (as in the page's link) and the slide reopens them, whatever the page shows meanwhile."""
    at = _app("seq2seq", lang="ko", text="I am good and you are not")
    at.radio(key="task").set_value("swap").run()
    at.toggle(key="teacher_forcing").set_value(True).run()
    at.selectbox(key="s2s_layer").set_value(0).run()
    at.selectbox(key="s2s_head").set_value(3).run()
    at.slider(key="step").set_value(5).run()
    at.sidebar.button(key="deck_add").click().run()
    assert_ok(at)
    (slide,) = _deck(at).slides
    assert {k: v for k, v in slide.query.items() if k.startswith("s2s_")} == {
        "s2s_model": "seq2seq-tiny", "s2s_task": "swap", "s2s_tf": "1", "s2s_layer": "0", "s2s_head": "3",
        "s2s_step": "5"}
    at.radio(key="task").set_value("copy").run()  # the page changes before the lecture
    at.toggle(key="teacher_forcing").set_value(False).run()
    at.selectbox(key="s2s_layer").set_value(1).run()
    at.switch_page(page_file("deck")).run()
    heads = [m.value for m in at.markdown if m.value.startswith("**")]
    assert any(t("s2s.task.swap", "ko") in h and t("s2s.teacher", "ko") in h for h in heads), heads
    at.button(key="deck_present").click().run()
    assert_ok(at)
    ss = at.session_state
    assert _title(at) == t("s2s.title", "ko")
    assert (ss["task"], ss["teacher_forcing"], ss["s2s_layer"], ss["s2s_head"], ss["step"]) == ("swap", True, 0, 3, 5)
    assert not at.warning
