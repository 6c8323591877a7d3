"""A Korean class on multilingual-e5-small (issue 15), under AppTest: the notice with its one-click switch when the
chosen model cannot read the text, and every page with a Korean sentence, lang=ko and the multilingual model:
Hangul tokens, no exception or error, the layer-output check, no English-only text."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from apptest_support import assert_ok
from i18n_support import english_only, page_texts
from streamlit.testing.v1 import AppTest

from analysis.readability import readability
from model import load_model
from model.examples import KOREAN_EXAMPLE_SENTENCES
from ui.pages import page_file
from ui.state import PRESETS

APP = str(Path(__file__).resolve().parents[1] / "app.py")
KO = "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다"
E5 = "multilingual-e5-small"


def _app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def _qp(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def _hangul(s: str) -> bool:
    return any("\uac00" <= c <= "\ud7a3" for c in unicodedata.normalize("NFC", s))


# --- the readability rule, on the models' real tokens ------------------------------------------------------------

def test_readability_from_the_tokens_each_model_produces():
    minilm, e5 = load_model("minilm-l6", "cpu"), load_model(E5, "cpu")
    for text in KOREAN_EXAMPLE_SENTENCES:
        r = readability(minilm.trace(text))
        assert r.n_unreadable == r.n_words > 0  # jamo or [UNK]: every Korean word
        assert readability(e5.trace(text)).n_unreadable == 0
    mixed = readability(minilm.trace("The 동물 was tired"))
    assert (mixed.n_words, mixed.n_unreadable, mixed.unreadable) == (4, 1, ("동물",))
    assert readability(minilm.trace("The animal didn't cross the street because it was tired")).n_unreadable == 0
    assert readability(minilm.trace("naïve café Straße")).n_unreadable == 0  # accents stripped, still read


def test_byte_level_models_split_hangul_into_bytes():
    """SmolLM2 (byte-level BPE learned mostly on English) reads a Hangul syllable as pieces of its UTF-8 bytes:
    every Korean word is unreadable; English, accents and emoji (whole characters, or no Hangul) are not."""
    smol = load_model("smollm2-135m", "cpu")
    r = readability(smol.trace(KO))
    assert r.n_unreadable == r.n_words > 0 and r.unreadable[0] == "그"  # no leading space from the byte offsets
    mixed = readability(smol.trace("The 동물 was tired"))
    assert (mixed.n_unreadable, mixed.unreadable) == (1, ("동물",))
    assert readability(smol.trace("The animal didn't cross the street because it was tired")).n_unreadable == 0
    assert readability(smol.trace("naïve café 😀")).n_unreadable == 0
    assert readability(smol.trace("세상 😀 hello")).unreadable == ("세상",)  # the emoji beside Korean is still read


def test_korean_on_smollm2_gets_the_notice():
    at = _app(text=KO, lang="ko", model="smollm2-135m")
    assert_ok(at)
    notice = [w.value for w in at.warning if "multilingual-e5-small" in w.value]
    assert len(notice) == 1 and "smollm2-135m" in notice[0], [w.value for w in at.warning]
    # what its tokenizer does to Hangul, measured on the text (issue 34): byte pieces, not unknown tokens or jamo
    assert "UTF-8 바이트 조각으로 쪼개므로" in notice[0]
    assert "알 수 없는 토큰" not in notice[0] and "낱자" not in notice[0]
    assert at.button(key="_hl_switch_e5").label == "multilingual-e5-small로 바꾸기"


# --- the notice and the switch ------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["ko", "en"])
def test_korean_on_minilm_gets_a_notice_and_a_one_click_switch(lang):
    at = _app(text=KO, lang=lang)
    assert_ok(at)
    assert at.selectbox(key="model").value == "minilm-l6"
    notice = [w.value for w in at.warning if "multilingual-e5-small" in w.value]
    assert len(notice) == 1 and "“동물은”" in notice[0] and "9" in notice[0]
    assert _hangul(notice[0].split("“")[0]) == (lang == "ko")  # the sentence's words are Korean in both
    assert ("`[UNK]` 같은 알 수 없는 토큰이나 낱자(자모)로" if lang == "ko" else "unknown tokens (`[UNK]`) and loose letters") \
        in notice[0]
    at.button(key="_hl_switch_e5").click().run()
    assert_ok(at)
    assert at.selectbox(key="model").value == E5 and _qp(at, "model") == E5
    assert not [w.value for w in at.warning if "multilingual-e5-small" in w.value]
    sidebar_tokens = at.selectbox(key="token").options
    assert any("▁그것은" in o for o in sidebar_tokens) and all("ᄀ" not in o for o in sidebar_tokens)


def test_no_notice_for_english_on_minilm():
    at = _app()
    assert_ok(at)
    assert not at.get("button") or not [b for b in at.button if b.key == "_hl_switch_e5"]


# --- every page, in Korean, on the multilingual model ---------------------------------------------------------------

PAGES = {
    "explorer": (page_file("explorer"), "ex_tab", ["ex.tab.one", "ex.tab.all", "ex.tab.token", "ex.tab.metrics",
                                                    "ex.tab.data"]),
    "positional": (page_file("positional"), "pe_tab", ["pe.tab.table", "pe.tab.sentence", "pe.tab.learned"]),
    "masks": (page_file("masks"), "mask_tab", ["masks.tab.padding", "masks.tab.look_ahead"]),
    "steps": (page_file("steps"), "steps_tab", None),
    "tour": (page_file("tour"), None, None),
    "heads": (page_file("heads"), "hl_tab", ["heads.tab.pairs", "heads.tab.surgery", "heads.tab.beyond",
                                             "heads.tab.atlas", "e5.tab.crosslingual"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_reads_korean_on_the_multilingual_model(page):
    from i18n import catalogue, t

    path, key, tabs = PAGES[page]
    at = _app(text=KO, model=E5, lang="ko", layer="11", head="3")
    at.switch_page(path).run()
    assert_ok(at)
    assert at.selectbox(key="model").value == E5
    if tabs is None and key == "steps_tab":
        from viz.steps import step_tabs

        tabs = [f"steps.tab.{n}" for n in step_tabs("encoder", False)]
    texts = page_texts(at)
    for name in tabs or []:
        if name not in catalogue("ko"):
            continue
        at.session_state[key] = t(name, "ko")
        at.run()
        assert_ok(at)
        texts += page_texts(at)
    tokens = list(at.selectbox(key="token").options)
    assert any(_hangul(o) for o in tokens)
    assert not [w for w in at.warning if "multilingual-e5-small" in w.value and "▁" not in w.value]
    assert english_only(texts, tokens=[KO, *tokens, *PRESETS, "this is my car", "that is not", "I am sam"]) == []
    if page == "steps":  # through Add & Norm and Feed Forward to the layer output, checked against the model's own
        at.session_state[key] = t("steps.tab.output", "ko") if "steps.tab.output" in catalogue("ko") else None
        at.run()
        assert_ok(at)


@pytest.mark.slow
def test_korean_minimal_pair_preset_switches_to_the_multilingual_model():
    at = _app(lang="ko")
    at.switch_page(page_file("heads")).run()
    at.button(key="hl_preset_ko").click().run()
    assert_ok(at)
    assert at.selectbox(key="model").value == E5
    assert at.text_input(key="hl_a").value.endswith("피곤했기 때문이다")
    # the ranked heads are drawn: one table, its headers in Korean (ui.heads.ranked_table, i18n col.*), 12 rows
    from analysis.heads import PRESET_KO_CANDIDATES
    from i18n import t
    from viz.heads import FLIP_MARK

    assert len(at.table) == 1
    table = at.table[0].value
    c1, c2 = PRESET_KO_CANDIDATES  # 동물은, 길을
    assert list(table.columns) == [
        "순위", "헤드", "변화", "뒤집힘", f"A: w({c1})", f"A: w({c2})", f"B: w({c1})", f"B: w({c2})", "A: 선호", "B: 선호"]
    assert list(table.columns[:4]) == [t(f"col.{k}", "ko") for k in ("rank", "head", "change", "flipped")]
    assert table["순위"].tolist() == list(range(1, 13))
    heads = [re.fullmatch(r"레이어 (\d+) · 헤드 (\d+)", h) for h in table["헤드"]]
    assert all(heads) and len({h.groups() for h in heads}) == 12, table["헤드"].tolist()
    assert all(int(h[1]) < 12 and int(h[2]) < 12 for h in heads)  # e5-small: 12 layers x 12 heads
    assert table["헤드"].iloc[0] == "레이어 11 · 헤드 3"  # the largest change of preference
    change = table["변화"].abs().tolist()
    assert change == sorted(change, reverse=True) and change[0] > 0
    assert ((table["B: 선호"] - table["A: 선호"] - table["변화"]).abs() <= 0.0016).all()  # rounded to 3 decimals
    assert ((table[f"A: w({c1})"] - table[f"A: w({c2})"] - table["A: 선호"]).abs() <= 0.0016).all()
    assert set(table["뒤집힘"]) <= {"", f"{FLIP_MARK} 뒤집힘"}
    flipped = table[table["뒤집힘"] != ""]
    assert ((flipped["A: 선호"] > 0) != (flipped["B: 선호"] > 0)).all()
    assert not at.info  # the query and both candidates were found in both sentences
