"""The cross-lingual view (analysis.crosslingual) against an independent computation from the model's traces, and
the Head lab tab under AppTest in both languages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from analysis import crosslingual as xl
from model import load_model
from model.errors import InputError
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture(scope="module")
def e5():
    return load_model("multilingual-e5-small", "cpu")


def _positions(tokens, word):
    """Token positions of a whole word, found independently: tokens from one '▁' to the next."""
    starts = [i for i, t in enumerate(tokens) if t.startswith("▁")] + [len(tokens) - 1]
    for s, e in zip(starts, starts[1:]):
        if "".join(tokens[s:e]).lstrip("▁") == word:
            return list(range(s, e))
    raise AssertionError(word)


def test_weights_equal_a_loop_over_the_trace(e5):
    r = xl.compare(e5, k=10)
    for side, (sentence, q, k) in ((r.a, xl.DEFAULT_EN), (r.b, xl.DEFAULT_KO)):
        tr = e5.trace(sentence)
        qi, ki = _positions(tr.source_tokens, q), _positions(tr.source_tokens, k)
        assert list(side.query) == qi and list(side.target) == ki
        att = tr.encoder_attention
        want = np.array([[np.mean([sum(att[la, h, i, j] for j in ki) for i in qi]) for h in range(12)]
                         for la in range(12)])
        np.testing.assert_allclose(side.weight, want, atol=1e-6)
        assert not side.weight.flags.writeable


def test_agreement_statistics(e5):
    r = xl.compare(e5, k=10)
    a, b = r.a.weight.reshape(-1).astype(float), r.b.weight.reshape(-1).astype(float)
    pearson = ((a - a.mean()) * (b - b.mean())).sum() / np.sqrt(((a - a.mean()) ** 2).sum() * ((b - b.mean()) ** 2).sum())
    assert r.pearson == pytest.approx(pearson, abs=1e-6)
    rank = lambda v: np.array([sorted(v, reverse=True).index(x) + 1 for x in v], float)  # noqa: E731 (no ties here)
    ra, rb = rank(list(a)), rank(list(b))
    n = len(a)
    assert r.spearman == pytest.approx(1 - 6 * ((ra - rb) ** 2).sum() / (n * (n * n - 1)), abs=1e-6)
    top = lambda w: {divmod(int(i), 12) for i in np.argsort(-w)[:10]}  # noqa: E731
    assert set(r.top_a) == top(a) and set(r.top_b) == top(b)
    assert set(r.overlap) == top(a) & top(b)
    assert r.chance_overlap == pytest.approx(100 / 144)
    # measured on this model: the languages share more strong heads than chance, and rank heads alike
    assert len(r.overlap) > r.chance_overlap and r.spearman > 0.3


def test_a_word_not_in_the_sentence_is_an_input_error(e5):
    with pytest.raises(InputError):
        xl.compare(e5, b=("그 동물은 피곤했다", "그것은", "동물은"))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_head_lab_tab(lang):
    from i18n import t

    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(model="multilingual-e5-small", lang=lang)
    at.run()
    at.switch_page(page_file("heads")).run()
    at.session_state["hl_tab"] = t("e5.tab.crosslingual", lang)
    at.run()
    assert_ok(at)
    assert len(at.get("plotly_chart")) == 3
    summary = " ".join(m.value for m in at.markdown)
    assert "ρ" in summary and ("Spearman" in summary or "스피어만" in summary)
    at.text_input(key="xl_qb").input("없는단어").run()
    assert_ok(at)
    assert at.info  # a word that is not in the sentence: a message, no traceback
