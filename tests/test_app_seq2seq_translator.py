"""AppTest of the Encoder-decoder page with a real translator (Firefox Translations en->pt and pt->en), through
app.py: the translation, the SSRU's forget gate where a self-attention triangle would be, the shortlist's marks, the
alignment view (lines and matrix), teacher forcing of a typed translation, the whole-vocabulary switch, the notice
for Korean text, and hostile text."""

import json
from pathlib import Path

import pytest
from apptest_support import HOSTILE
from apptest_support import assert_ok as _ok
from apptest_support import charts as _charts
from streamlit.testing.v1 import AppTest

from model.examples import ALIGNMENT_TEXT
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _page(model: str = "bergamot-en-pt", text: str = ALIGNMENT_TEXT, lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    if lang != "en":
        at.selectbox(key="lang").set_value(lang).run()
    at.switch_page(page_file("seq2seq")).run()
    at.selectbox(key="s2s_model").set_value(model).run()
    at.text_area(key="text").set_value(text).run()
    return at


def _figure(spec: str) -> dict:
    return json.loads(spec)


def test_translation_forget_gate_and_alignment_lines():
    at = _page()
    _ok(at)
    md = [m.value for m in at.markdown]
    assert "#### O acordo sobre o Espaço Económico Europeu foi assinado em Agosto de 1992\\." in md
    assert any("no self-attention" in i.value for i in at.info)
    charts = _charts(at)
    assert len(charts) == 5  # forget gate, cross-attention, cross row, top-5, alignment
    assert "forget gate" in charts[0] and "Decoder self-attention" not in "".join(charts)
    # the alignment lines: "Europeu" (target) joins "European" (source), "Espaço" joins "Area": they cross
    lines = _figure(charts[4])
    src_axis, tgt_axis = lines["layout"]["xaxis2"], lines["layout"]["xaxis"]
    src = dict(zip(src_axis["ticktext"], src_axis["tickvals"]))
    tgt = dict(zip(tgt_axis["ticktext"], tgt_axis["tickvals"]))
    pairs = {(round(tr["x"][i], 6), round(tr["x"][i + 1], 6)) for tr in lines["data"] if tr.get("mode") == "lines"
             for i in range(0, len(tr["x"]) - 1, 3)}
    joined = {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}
    def linked(t, s):
        return (round(tgt[t], 6), round(src[s], 6)) in joined
    assert linked("Europeu", "European") and linked("Espaço", "Area")
    assert tgt["Espaço"] < tgt["Europeu"] and src["European"] < src["Area"]  # crossing lines


def test_alignment_matrix_and_step_slider():
    at = _page()
    at.radio(key="s2s_align_kind").set_value("matrix").run()
    _ok(at)
    matrix = _figure(_charts(at)[4])
    heat = next(tr for tr in matrix["data"] if tr["type"] == "heatmap")
    assert "Europeu" in heat["y"] and "European" in heat["x"]
    before = _charts(at)[:4]
    at.slider(key="step").set_value(6).run()
    _ok(at)
    after = _charts(at)[:4]
    assert all(a != b for a, b in zip(before, after)) and "step 6" in after[0]


def test_teacher_forcing_a_typed_translation_and_the_whole_vocabulary():
    at = _page(text="The cat sleeps on the sofa.")
    at.toggle(key="teacher_forcing").set_value(True).run()
    at.text_input(key="s2s_target").set_value("O cão dorme no chão.").run()
    _ok(at)
    md = [m.value for m in at.markdown]
    assert "#### O cão dorme no chão\\." in md and any("you typed" in m for m in md)
    at.toggle(key="teacher_forcing").set_value(False).run()
    at.toggle(key="s2s_full_vocab").set_value(True).run()
    _ok(at)
    assert any(m.startswith("#### O gato") for m in [m.value for m in at.markdown])
    assert "not in the shortlist" not in "".join(_charts(at))  # nothing is struck out over the whole vocabulary


def test_portuguese_to_english_in_korean():
    at = _page("bergamot-pt-en", "O animal não atravessou a rua porque estava cansado.", lang="ko")
    _ok(at)
    md = [m.value for m in at.markdown]
    assert "**번역**" in md and any(m.startswith("#### The animal") for m in md)
    assert any("셀프 어텐션이 없습니다" in i.value for i in at.info)
    assert "망각 게이트" in _charts(at)[0]


@pytest.mark.parametrize("lang,needle,switch", [("en", "reads English only", "Switch to seq2seq-tiny"),
                                                ("ko", "영어만 읽습니다", "seq2seq-tiny로 바꾸기")])
def test_korean_text_shows_no_translation_and_offers_the_switch(lang, needle, switch):
    """Issue 34: a Korean sentence on the en->pt translator gets the notice, no translation, no decoding steps, and
    a one-click switch of this page's model to one the registry says reads Hangul (seq2seq-tiny here)."""
    at = _page(text=HOSTILE["korean"], lang=lang)
    _ok(at)
    warning = " ".join(w.value for w in at.warning)
    assert needle in warning and "multilingual-e5-small, seq2seq-tiny" in warning and "“동물은”" in warning
    assert "`<unk>`" in warning  # what its tokenizer made of the words, measured: unknown pieces
    assert not [m.value for m in at.markdown if m.value.startswith("####")]  # no bold "번역: - , , , …"
    assert not at.get("code") and not _charts(at) and not at.get("slider")
    button = at.button(key="s2s_switch")
    assert button.label == switch
    button.click().run()
    _ok(at)
    assert at.selectbox(key="s2s_model").value == "seq2seq-tiny" and not at.warning
    assert len(_charts(at)) == 4 and any("그 동물 ##은" in c.proto.code_text for c in at.get("code"))


def test_a_mostly_english_text_with_a_korean_word_is_still_translated():
    at = _page(text="The cat 고양이 sat on the mat.")
    _ok(at)
    warning = " ".join(w.value for w in at.warning)
    assert "cannot read 1 of the 7 words" in warning and "No translation" not in warning
    assert any(m.value.startswith("#### ") for m in at.markdown) and len(_charts(at)) == 5


@pytest.mark.parametrize("name", ["script", "emoji", "zero_width_control", "arabic"])
def test_hostile_text(name):
    at = _page(text=HOSTILE[name])
    _ok(at)
    assert "<script>" not in "".join(_charts(at))


def test_where_the_shortlist_changes_the_choice():
    """One sentence of the 60 English evaluation sentences translates differently over the whole vocabulary:
    'cansativa' (tiring) is not among the shortlist's candidates, so Firefox's decoding says 'cansada'."""
    text = ("The journey was long and tiring, but the landscapes along the coast were absolutely worth it, and we took "
            "hundreds of photographs of the cliffs, the small fishing villages and the sunset over the ocean.")
    at = _page(text=text)
    _ok(at)
    removed = " ".join(i.value for i in at.info if "not in the shortlist" in i.value)
    assert "`ativa`" in removed and "Whole vocabulary" in removed  # cans|ativa: its second piece
    step = int(removed.split("At step ")[1].split(" ")[0].rstrip(","))
    at.slider(key="step").set_value(step).run()
    topk = _charts(at)[3]
    assert "not in the shortlist" in topk
    at.toggle(key="s2s_full_vocab").set_value(True).run()
    _ok(at)
    md = " ".join(m.value for m in at.markdown)
    assert "cansativa" in md
    assert any("cansada" in i.value and "Within its shortlist" in i.value for i in at.info)
