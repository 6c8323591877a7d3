"""Korean wording a lecturer met (issue 34): tour step 1's formula names the text in the interface language, step 6
says the self-attention is masked in Korean ("마스킹되므로"), not "Masked이므로"."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import tour
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _tour(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page_file("tour")).run()
    assert_ok(at)
    return at


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_tour_step_1_formula_names_the_text_in_the_interface_language(lang):
    at = _tour(lang=lang, step="1", text="The animal was tired")
    formulas = [x.value.strip("$\n") for x in at.latex]
    tokens = [f for f in formulas if r"\longrightarrow" in f and "t_0" in f]
    assert len(tokens) == 1
    word = tokens[0].split("}")[0].removeprefix(r"\text{")
    assert word == "text" if lang == "en" else all("\uac00" <= c <= "\ud7a3" for c in word)  # Hangul, not "text"


def test_tour_step_6_on_a_decoder_says_masked_in_korean():
    at = _tour(lang="ko", step=str(tour.STEPS.index("mask") + 1), model="smollm2-135m", text="The animal was tired")
    notes = " ".join(i.value for i in at.info)
    assert "셀프 어텐션이 마스킹되므로 각 토큰은 자신과 앞의 토큰만 봅니다" in notes and "Masked이므로" not in notes
    assert "마스킹되므로" in t("notes.mask.causal", "ko", model="smollm2-135m")
