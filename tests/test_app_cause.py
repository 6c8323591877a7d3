"""AppTest of the Head lab's cause tabs (ui/generation.py, ui/cause.py) on SmolLM2 through app.py: the generation
replay's tokens, probabilities and step rows as model/cause computes them, sampling from the URL's seed; the
attribution's sum; patching on a click, its grids, the picked head side by side, the grids saved with a deck slide
and read back by another session without computing; the message for prompts of different lengths; an encoder model
gets the switch to a language model; Korean."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok, charts
from streamlit.testing.v1 import AppTest

from analysis import cause
from i18n import error_message, t
from model import load_model
from model.cause.attribution import attribute
from model.cause.generation import Sampling, generate
from model.errors import InputError
from model.tokenizer import shown_piece
from ui import saved
from ui.deck import DECK
from ui.pages import page_file
from ui.view import md_escape

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PROMPT = "The capital of France is"
EIFFEL = cause.PRESETS["eiffel"]
GEN, CAUSE = t("heads.tab.generation", "en"), t("heads.tab.cause", "en")


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def smol():
    return load_model("smollm2-135m", "cpu")


def _lab(tab: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=900)
    for k, v in {"model": "smollm2-135m", "text": PROMPT, **params}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page_file("heads")).run()
    at.session_state["hl_tab"] = tab
    return at.run()


def _texts(at) -> list[str]:
    return [m.value for m in at.markdown]


@pytest.mark.slow
def test_generation_replay_tab(smol):
    at = _lab(GEN)
    assert_ok(at)
    g = generate(smol, PROMPT, 12)
    said = smol.tokenizer.decode([s.choice.id for s in g.steps]).strip()
    assert said.startswith("Paris.")
    assert md_escape(PROMPT) + " **" + md_escape(" ⏎ ".join(said.splitlines())) + "**" in _texts(at)
    df = at.table[0].value if at.table else at.dataframe[0].value
    spelled = [shown_piece(s.choice.token, "bytelevel") for s in g.steps]  # byte-level pieces as their text
    assert spelled[0] == "␣Paris" and list(df.iloc[:, 2]) == spelled  # the token column, step by step
    np.testing.assert_allclose(df.iloc[:, 3].to_numpy(dtype=float), [round(s.choice.prob, 4) for s in g.steps])
    assert t("cause.gen.step_line", "en", k=0, q=4, query="␣is", token="␣Paris", p=g.steps[0].choice.prob, m=5) \
        in _texts(at)
    assert len(charts(at)) == 9  # 2 step rows, K and V, the KV groups, 3 costs, the sink
    at.slider(key="gen_step").set_value(3).run()
    assert_ok(at)
    s3 = g.steps[3]
    assert t("cause.gen.step_line", "en", k=3, q=7, query=shown_piece(g.tokens[7], "bytelevel"), token=spelled[3], p=s3.choice.prob,
             m=8) in _texts(at)
    assert any(t("cause.gen.groups_text", "en", h=9, g=3, per=3, saved=3.0) == m for m in _texts(at))


@pytest.mark.slow
def test_sampled_replay_from_the_link(smol):
    at = _lab(GEN, gen_sample="true", gen_temp="1.2", gen_topk="40", gen_topp="0.95", gen_seed="7", gen_new="6")
    assert_ok(at)
    g = generate(smol, PROMPT, 6, Sampling(1.2, 40, 0.95, 7))
    df = at.table[0].value if at.table else at.dataframe[0].value
    assert list(df.iloc[:, 2]) == [shown_piece(s.choice.token, "bytelevel") for s in g.steps]
    np.testing.assert_allclose(df.iloc[:, 4].to_numpy(dtype=float), [round(s.drawn_prob, 4) for s in g.steps])


@pytest.mark.slow
def test_attribution_patching_picked_head_and_the_deck(smol, tmp_path):
    at = _lab(CAUSE, layer="23", head="4")
    assert_ok(at)
    a = attribute(smol, EIFFEL.clean, EIFFEL.target, EIFFEL.foil)
    what = t("cause.dla.what", "en", target="Paris", foil="Rome")
    assert t("cause.dla.sum", "en", what=what, total=a.total, heads=float(a.head.sum()), mlps=float(a.mlp.sum()),
             embed=a.embed, bias=0.0, error=abs(a.error)) in _texts(at)
    assert at.button(key="cause_patch_run")  # nothing computed before the click
    at.button(key="cause_patch_run").click().run()
    assert_ok(at)
    p = cause.patching(smol, EIFFEL.clean, EIFFEL.corrupt, EIFFEL.target, EIFFEL.foil)
    assert t("cause.patch.diffs", "en", target="Paris", foil="Rome", clean=p.clean_diff, corrupt=p.corrupt_diff,
             span=p.clean_diff - p.corrupt_diff) in _texts(at)
    specs = charts(at)
    assert any(t("cause.patch.heads_title", "en") in c for c in specs)
    assert any(t("cause.patch.residual_title", "en") in c for c in specs)
    assert at.subheader[-1].value == t("cause.picked.head", "en", where="Layer 23 · Head 4 (KV 1)")
    bars = next(c for c in specs if t("cause.picked.patch_norm", "en") in c)
    norm = float(p.normalised(p.head)[23, 4])
    assert f"{norm:.3f}" in bars and f"{a.head[23, 4]:.3f}" in bars
    # save in the deck: a slide with the prompts, and the grids on the server
    at.button(key="cause_save").click().run()
    assert_ok(at)
    deck = at.session_state[DECK]
    slide = deck.slides[-1]
    assert slide.page == "heads" and slide.query["hl_clean"] == EIFFEL.clean
    assert (slide.query["hl_corrupt"], slide.query["hl_target"], slide.query["hl_foil"]) == \
        (EIFFEL.corrupt, EIFFEL.target, EIFFEL.foil)
    stored = cause.patching_from_json(saved.get("patching", ("smollm2-135m", EIFFEL.clean, EIFFEL.corrupt,
                                                              EIFFEL.target, EIFFEL.foil)))
    np.testing.assert_array_equal(stored.head, p.head)
    np.testing.assert_array_equal(stored.residual, p.residual)
    # a student's fresh session on the slide's view reads the saved grids: no button, no computing
    student = _lab(CAUSE, **{k: v for k, v in slide.query.items() if k != "hl_tab"})
    assert_ok(student)
    assert t("cause.patch.from_deck", "en") in [c.value for c in student.caption]
    assert not [b for b in student.button if b.key == "cause_patch_run"]


@pytest.mark.slow
def test_prompts_of_different_lengths_say_so_in_both_languages(smol):
    short = "The Colosseum is in the city of"
    with pytest.raises(InputError) as e:
        cause.check_pair(smol, EIFFEL.clean, short)
    assert e.value.params == {"clean": 10, "corrupt": 9}
    for lang in ("en", "ko"):
        at = _lab(t("heads.tab.cause", lang), lang=lang, hl_corrupt=short)
        assert_ok(at)
        assert md_escape(error_message(e.value, lang)) in [i.value for i in at.info]
        assert not [b for b in at.button if b.key == "cause_patch_run"]
    assert t("cause.dla.sum", "ko", what="x", total=1.0, heads=1.0, mlps=0.0, embed=0.0, bias=0.0, error=0.0) \
        .startswith("깨끗한 프롬프트의 마지막 위치에서")


def test_an_encoder_model_is_offered_the_language_model():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["text"] = PROMPT
    at.run()
    at.switch_page(page_file("heads")).run()
    at.session_state["hl_tab"] = CAUSE
    at.run()
    assert_ok(at)
    assert t("cause.need_lm", "en", model="minilm-l6") in [i.value for i in at.info]
    at.button(key="gen_use_lm").click().run()
    assert_ok(at)
    assert at.session_state["model"] == "smollm2-135m"


@pytest.mark.slow
def test_a_deck_slide_reopens_the_generation_settings(smol):
    from ui.deckfile import Deck, Slide

    at = AppTest.from_file(APP, default_timeout=900)
    at.run()
    at.switch_page(page_file("deck")).run()
    query = {"model": "smollm2-135m", "text": PROMPT, "hl_tab": GEN, "gen_sample": "true", "gen_temp": "1.2",
             "gen_topk": "40", "gen_topp": "0.95", "gen_seed": "7", "gen_new": "6"}
    at.session_state[DECK] = Deck(title="t", lang="en", slides=(Slide("heads", query, title="generation"),))
    at.run()
    at.button(key="deck_from_0").click().run()
    assert_ok(at)
    df = at.table[0].value if at.table else at.dataframe[0].value
    assert list(df.iloc[:, 2]) == [shown_piece(s.choice.token, "bytelevel") for s in generate(smol, PROMPT, 6, Sampling(1.2, 40, 0.95, 7)).steps]


@pytest.mark.slow
@pytest.mark.parametrize("name,charts_n", [("bergamot-en-pt", 5), ("seq2seq-tiny", 10)])
def test_a_translators_decoder_replays_over_its_cache(name, charts_n):
    """An encoder-decoder writes too: its decoder's steps over the source (cross-attention rows); the translator's
    SSRU decoder keeps a memory of constant size instead of keys and values; its tokens are those of its own greedy
    decoding (within the shortlist)."""
    from model.cause.translation import generate_seq2seq

    text = "The cat sat on the mat."
    at = _lab(GEN, model=name, text=text)
    assert_ok(at)
    m = load_model(name, "cpu")
    g = generate_seq2seq(m, text, 12)
    assert g.ids == m.decode_ids(m.encode_source(text).ids)[: len(g.ids)]
    df = at.table[0].value if at.table else at.dataframe[0].value
    assert list(df.iloc[:, 2]) == [shown_piece(s.choice.token, "bytelevel") for s in g.steps]
    assert len(charts(at)) == charts_n
    captions = [c.value for c in at.caption]
    assert (t("cause.gen.ssru", "en", d=256, bytes=g.steps[0].cache_bytes) in captions) == (name == "bergamot-en-pt")
    assert (t("cause.gen.shortlist", "en") in captions) == (name == "bergamot-en-pt")
    if name == "bergamot-en-pt":
        assert len({s.cache_bytes for s in g.steps}) == 1  # the SSRU's memory does not grow
