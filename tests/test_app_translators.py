"""AppTest of every page other than the Encoder-decoder page with a translator (bergamot-en-pt / bergamot-pt-en) as
the sidebar's model, in English and Korean: the explorer and Step by step read its encoder (the source pieces and
</s>) and its cross-attention, never a decoder self-attention it does not have; head surgery shows the greedy
translation with and without the chosen heads and offers no SSRU "self-attention" heads; the guided tour's decoder
steps run the translator and draw its SSRU's forget gate where masked self-attention would be; the Mask lab and the
Positional-encoding lab work (the PE lab in the translator's own Marian order)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok, charts
from streamlit.testing.v1 import AppTest

from i18n import t
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
EN_PT, PT_EN = "bergamot-en-pt", "bergamot-pt-en"
PT = "O animal não atravessou a rua porque estava cansado."
LANGS = ["en", "ko"]


def _open(page: str, lang: str, model: str = EN_PT, text: str | None = None) -> AppTest:
    """The app on `page` with the sidebar's model set to a translator (the "Model" selectbox), in `lang`."""
    at = AppTest.from_file(APP, default_timeout=300).run()
    if lang != "en":
        at.selectbox(key="lang").set_value(lang).run()
    at.switch_page(page_file(page)).run()
    at.selectbox(key="model").set_value(model).run()
    if text is not None:
        at.text_area(key="text").set_value(text).run()
    assert_ok(at)
    assert at.session_state["model"] == model
    return at


def _titles(at) -> list[str]:
    return [str(json.loads(c)["layout"].get("title", {}).get("text", "")) for c in charts(at)]


# ---- Attention explorer -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_explorer_shows_the_translators_encoder_then_its_cross_attention(lang):
    at = _open("explorer", lang)
    assert at.title[0].value == t("page.explorer", lang)
    # the source pieces then </s>: 12 pieces of the default sentence and the end token
    assert at.caption[0].value.startswith(t("ex.caption", lang, n=13, model=EN_PT, where="X").split("X")[0])
    assert at.radio(key="block").options == [t("block.encoder", lang), t("block.cross", lang)]  # no decoder self
    one = charts(at)[0]
    assert "▁animal" in one and ("&lt;/s&gt;" in one or "</s>" in one)
    at.session_state["ex_tab"] = "All heads"
    at.run()
    assert_ok(at)
    assert charts(at)
    at.radio(key="block").set_value("cross").run()
    at.session_state["ex_tab"] = "One head"
    at.run()
    assert_ok(at)
    cross = charts(at)[0]
    assert "▁não" in cross and "▁animal" in cross  # target rows (the translation) x source columns


# ---- Step by step -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_step_by_step_on_the_encoder_and_on_the_ssru_decoder(lang):
    at = _open("steps", lang)
    assert at.title[0].value == t("steps.title", lang)
    assert t("block.encoder", lang) in at.caption[0].value
    assert at.success[0].value.startswith(t("steps.check", lang, diff=0.0)[:12])  # the model's own weights
    assert any("</s>" in c or "&lt;/s&gt;" in c for c in charts(at))
    at.radio(key="block").set_value("cross").run()
    at.selectbox(key="layer").set_value(1).run()
    at.session_state["steps_tab"] = t("trpages.steps.tab.add_norm_dec_ssru", lang)
    at.run()
    assert_ok(at)
    assert any(t("trpages.steps.add_norm_dec_ssru.note", lang, layer=1) == c.value for c in at.caption)
    assert any(r"\operatorname{SSRU}" in x.value for x in at.latex)
    at.session_state["steps_tab"] = t("steps.tab.vocab", lang)
    at.run()
    assert_ok(at)
    assert any("W_{vocab}" in x.value for x in at.latex)


# ---- Head lab ----------------------------------------------------------------------------------------------------
SURGERY = {  # (model, text, heads, translation before, after): two heads of the last cross-attention layer
    "en": (EN_PT, None, ["cross:1.0", "cross:1.1"], "O animal não cruzou a rua porque estava cansado",
           "O animal não atravessou a rua porque estava cansada."),
    "ko": (PT_EN, PT, ["cross:1.0", "cross:1.1"], "The animal didn't cross the street because it was tired.",
           "The animal did not cross the street because it was tired."),
}


@pytest.mark.parametrize("lang", LANGS)
def test_head_surgery_changes_the_translation(lang):
    model, text, heads, before, after = SURGERY[lang]
    at = _open("heads", lang, model, text)
    at.session_state["hl_tab"] = t("heads.tab.surgery", "en")
    at.run()
    assert_ok(at)
    box = at.multiselect(key="hl_heads")
    assert len(box.options) == 6 * 8 + 2 * 8  # encoder and cross-attention heads only
    assert not any(t("block.decoder_self", lang) in o for o in box.options), box.options[-1]
    assert any(t("trpages.surgery.no_self", lang) == c.value for c in at.caption)
    assert at.code[0].value == t("heads.surgery.outputs", lang, before=before, after=before)
    assert at.info and t("trpages.surgery.pick", lang) in [i.value for i in at.info]
    box.set_value(heads).run()
    assert_ok(at)
    src, tgt = ("en", "pt") if model == EN_PT else ("pt", "en")
    assert any(m.value == t("trpages.surgery.translation", lang, source=t(f"s2s.lang.{src}", lang),
                            target=t(f"s2s.lang.{tgt}", lang)) for m in at.markdown)
    assert at.code[0].value == t("heads.surgery.outputs", lang, before=before, after=after)
    assert [w.value for w in at.warning] == [t("trpages.surgery.changed", lang, n=2)]
    assert _titles(at)  # the top-5 before and after


def test_a_link_with_decoder_self_heads_keeps_only_the_translators_heads():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(model=EN_PT, hl_tab="Head surgery", hl_heads=["decoder_self:0.0", "cross:1.0"])
    at.run()
    at.switch_page(page_file("heads")).run()
    assert_ok(at)
    assert at.session_state["model"] == EN_PT
    assert at.multiselect(key="hl_heads").value == ["cross:1.0"]


def test_surgery_refuses_self_attention_heads_of_an_ssru_decoder():
    from analysis import heads as ah
    from model import load_model
    from model.errors import InputError

    model = load_model(EN_PT, "cpu")
    assert ah.ablatable_blocks(model) == ("encoder", "cross")
    with pytest.raises(InputError, match="no 'decoder_self' attention"):
        ah.decoder_effect(model, "Hello", [("decoder_self", 0, 0)])
    effect = ah.decoder_effect(model, "The animal didn't cross the street because it was tired",
                               [("cross", 1, 0), ("cross", 1, 1)])
    assert effect.text_before != effect.text_after  # the model's own greedy translation, ablated


# ---- Guided tour -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_tour_decoder_steps_use_the_translator_and_its_ssru(lang):
    at = _open("tour", lang)
    at.session_state["_tour_step"] = 12
    at.run()
    assert_ok(at)
    infos = [i.value for i in at.info]
    assert t("trpages.tour.translator_note", lang, model=EN_PT, source=t("s2s.lang.en", lang),
             target=t("s2s.lang.pt", lang)) in infos
    assert t("trpages.tour.ssru", lang, model=EN_PT) in infos  # it says this model has an SSRU instead
    assert not any("seq2seq-tiny" in i for i in infos)
    titles = _titles(at)
    assert len(titles) == 1 and titles[0].startswith(t("trpages.tour.fig.forget", lang, layer=1, step=1))
    assert "c<sub>t</sub>" in titles[0]
    assert not any(t("tour.fig.dec_self", lang, where="", step=1)[:10] in x for x in titles)  # no empty triangle
    assert any(r"f_t = \sigma" in x.value for x in at.latex)
    assert at.code[0].value.endswith("</s>") and "▁animal" in at.code[0].value  # the translator's source
    assert at.selectbox(key="tour_dec_layer").options == [t("tour.layer_n", lang, i=i) for i in range(2)]
    at.slider(key="tour_dec_step").set_value(3).run()
    assert_ok(at)
    assert at.code[1].value == "</s> ▁O ▁animal"
    at.session_state["_tour_step"] = 13
    at.run()
    assert_ok(at)
    assert len(charts(at)) == 2 and "▁animal" in charts(at)[0]  # cross-attention over the translator's source
    at.session_state["_tour_step"] = 14
    at.run()
    assert_ok(at)
    assert any(m.value.endswith("> O animal não cruzou a rua porque estava cansado") for m in at.markdown)


@pytest.mark.parametrize("lang", LANGS)
def test_tour_positional_step_says_marian_order(lang):
    at = _open("tour", lang)
    at.session_state["_tour_step"] = 3
    at.run()
    assert_ok(at)
    assert t("trpages.notes.positional.marian", lang, model=EN_PT, half=128) in " ".join(i.value for i in at.info)


def test_tour_next_token_quiz_on_a_translator():
    from ui import quiz

    at = _open("tour", "en")
    at.session_state["_tour_step"] = 14
    at.run()
    at.toggle(key="quiz_on").set_value(True).run()
    assert_ok(at)
    assert not charts(at), "the top-5 stays hidden until the reveal"
    text = at.session_state["text"]
    qid = quiz._qid("next", text, None, "greedy", 1, EN_PT)
    pills = at.get("button_group")[0].proto.options  # the step's top tokens, alphabetically, not the source's pieces
    assert [p.content for p in pills] == sorted(p.content for p in pills) and any(p.content == "▁O" for p in pills)
    at.session_state[f"{qid}_guess"] = [p.content for p in pills].index("▁O")
    at.run()
    at.button(key=f"{qid}_reveal").click().run()
    assert_ok(at)
    assert at.session_state[quiz.SCORE] == {"asked": 1, "right": 1}
    assert charts(at)  # revealed: the top-5


def test_tour_back_to_seq2seq_tiny_after_a_translator():
    at = _open("tour", "en")
    at.session_state["_tour_step"] = 13
    at.run()
    at.selectbox(key="tour_dec_head").set_value(6).run()  # a head seq2seq-tiny (4 heads) does not have
    at.selectbox(key="model").set_value("seq2seq-tiny").run()
    assert_ok(at)
    assert any("seq2seq-tiny" in i.value for i in at.info)
    assert at.selectbox(key="tour_dec_head").value == "mean"


# ---- Mask lab and Positional-encoding lab -----------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_mask_lab_with_a_translator(lang):
    at = _open("masks", lang)
    assert at.title[0].value == t("masks.title", lang)
    assert len(charts(at)) == 4 and at.success  # the padded batch through the translator's encoder
    at.session_state["mask_tab"] = t("masks.tab.look_ahead", lang)
    at.run()
    assert_ok(at)
    assert t("trpages.masks.ssru", lang, model=EN_PT, lab="seq2seq-tiny") in [i.value for i in at.info]
    assert len(charts(at)) >= 4


@pytest.mark.parametrize("lang", LANGS)
def test_pe_lab_shows_the_translators_marian_sinusoids(lang):
    at = _open("positional", lang)
    assert at.title[0].value == t("pe.title", lang)
    assert _titles(at)[0] == t("trpages.pe.fig.table", lang, model=EN_PT, n=50, d=128)
    assert t("trpages.pe.table_caption", lang, half=64) in [c.value for c in at.caption]
    at.toggle(key="pe_own_layout").set_value(False).run()
    assert_ok(at)
    assert _titles(at)[0] == t("pe.fig.table", lang, n=50, d=128)  # the paper's order
    at.session_state["pe_tab"] = t("pe.tab.sentence", lang)
    at.run()
    assert_ok(at)
    assert EN_PT in _titles(at)[0] and "256" in _titles(at)[0]  # its own X, PE and X + PE first


def test_marian_table_is_sines_then_cosines():
    from analysis.positional import sinusoidal

    pe = sinusoidal(50, 128, "marian")
    angle = np.arange(50)[:, None] * 10000.0 ** (-np.arange(64) / 63)  # the slowest frequency exactly 1/10000
    assert np.allclose(pe[:, :64], np.sin(angle), atol=1e-4) and np.allclose(pe[:, 64:], np.cos(angle), atol=1e-4)
    assert not np.allclose(pe, sinusoidal(50, 128))  # not the paper's interleaved order


# ---- Korean: no English-only text on the translator's screens ------------------------------------------------------
KO_SCREENS = {  # page, then the session state that opens the screen this file adds text to
    "heads": ("heads", {"hl_tab": "Head surgery"}),
    "tour-ssru": ("tour", {"_tour_step": 12}),
    "tour-output": ("tour", {"_tour_step": 14}),
    "masks": ("masks", {"mask_tab": t("masks.tab.look_ahead", "ko")}),
    "positional": ("positional", {}),
    "steps": ("steps", {"steps_tab": t("trpages.steps.tab.add_norm_dec_ssru", "ko"), "block": "cross", "layer": 1}),
}


@pytest.mark.parametrize("screen", list(KO_SCREENS))
def test_korean_translator_screens_have_no_english_only_text(screen):
    from i18n_support import english_only, page_texts

    from model import get_spec, list_models
    from ui.state import PRESETS

    page, state = KO_SCREENS[screen]
    at = _open(page, "ko")
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert_ok(at)
    if screen == "heads":
        at.multiselect(key="hl_heads").set_value(["cross:1.0", "cross:1.1"]).run()
    labels = {get_spec(n).label for n in list_models()}  # the model picker's names (the registry's, not this page's)
    found = [x for x in english_only(page_texts(at), [*PRESETS]) if x not in labels
             and not x.split(": ", 1)[-1].startswith("▁")]  # the token picker lists the translation's pieces
    assert found == []
