"""The tour's tables and formulas without Streamlit (viz.tour, viz.model_notes, viz.steps): which stages a step
draws (step 3 on a rotary model: q and k before and after RoPE), whose decoder steps 12-14 show for each kind of
model, every "+ b" only where the model has that bias, the formulas' words in the interface language, the pair
figure of RoPE's turn and the next-token labels."""

from __future__ import annotations

import numpy as np
import pytest

from i18n import t
from viz import tour as vt
from viz.model_notes import ModelFacts, ffn_formula, latex_sentence, step_formula, step_notes, tour_formula
from viz.steps import build_stages

SMOLLM2 = ModelFacts(name="smollm2-135m", kind="decoder", positional="rotary", rope_theta=100000.0, norm="rmsnorm",
                     norm_placement="pre", activation="silu", gated_ffn=True, bias=False, qkv_bias=False,
                     output_bias=False)
QWEN2 = ModelFacts(name="qwen2", kind="decoder", positional="rotary", norm="rmsnorm", norm_placement="pre",
                   activation="silu", gated_ffn=True, bias=False, qkv_bias=True, output_bias=False)
MINILM = ModelFacts(name="minilm-l6", positional="learned", activation="gelu", scale_embeddings=False)


def test_step_stages_table():
    assert vt.step_stages("qkv") == ("Q", "K", "V") == vt.step_stages("qkv", positional="rotary", kind="decoder")
    assert vt.step_stages("positional", positional="rotary", kind="decoder") == ("Q_proj", "K_proj", "Q", "K")
    assert vt.step_stages("positional", positional="learned") == () == vt.step_stages("positional")
    assert vt.step_stages("decoder_self", kind="decoder") == ("masked", "weights")
    assert vt.step_stages("decoder_self", kind="encoder") == () == vt.step_stages("decoder_self", kind="encoder-decoder")
    assert vt.step_stages("cross", kind="decoder") == () == vt.step_stages("output", kind="decoder")
    for key, names in vt.STEP_STAGES.items():  # the one table, unchanged for every other step
        assert vt.step_stages(key, positional="sinusoidal", kind="encoder-decoder") == names


def test_decoder_source_by_kind_never_by_name():
    assert [vt.decoder_source(k, "encoder") for k in vt.DECODER_STEPS] == ["fallback"] * 3
    assert [vt.decoder_source(k, "decoder") for k in vt.DECODER_STEPS] == ["own", "fallback", "own"]
    assert [vt.decoder_source(k, "encoder-decoder") for k in vt.DECODER_STEPS] == ["own"] * 3
    with pytest.raises(KeyError):
        vt.decoder_source("cross", "bergamot-en-pt")


@pytest.mark.parametrize("facts,qkv,o,ffn", [(SMOLLM2, False, False, False), (QWEN2, True, False, False),
                                             (MINILM, True, True, True)], ids=["smollm2", "qwen2", "minilm"])
def test_every_plus_b_follows_the_config(facts, qkv, o, ffn):
    f = step_formula("qkv", facts)
    assert ("+ b^{Q}" in f) == ("+ b^{K}" in f) == ("+ b^{V}" in f) == qkv, f
    assert ("b^{O}" in step_formula("concat", facts)) == o
    f = step_formula("ffn", facts)
    assert ("b_1" in f) == ("b_2" in f) == ffn, f
    assert ("+ b)" in step_formula("output", facts)) == facts.output_bias
    notes = " ".join(step_notes("ffn", facts, "en"))
    assert ("b_1" in notes) == ffn, notes


def test_ffn_formula_exact():
    assert ffn_formula("relu", gated=False, b1=True, b2=True) == \
        r"\operatorname{FFN}(x) = \operatorname{ReLU}(x W_1 + b_1)\, W_2 + b_2"
    assert ffn_formula("silu", gated=True, b1=False, b2=False) == \
        r"\operatorname{FFN}(x) = \left(\operatorname{SiLU/Swish}(x W_{gate}) \odot x W_1\right) W_2"
    assert ffn_formula("silu", gated=True, b1=True, b2=True, generic=True) == \
        r"\operatorname{FFN}(x) = \left(\operatorname{act}(x W_{gate}) \odot (x W_1 + b_1)\right) W_2 + b_2"


def test_output_formula_of_a_language_model_and_of_a_translator():
    assert step_formula("output", SMOLLM2) == \
        r"P(t_n \mid t_0, \dots, t_{n-1}) = \operatorname{softmax}(h_{n-1} W_{vocab})"
    assert step_formula("output", ModelFacts(name="seq2seq-tiny", kind="encoder-decoder")) == \
        r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab} + b)"


def test_formula_words_follow_the_language():
    en, ko = (step_formula("positional", SMOLLM2, lg) for lg in ("en", "ko"))
    assert en.endswith(r"q'_m \cdot k'_n\text{ depends only on }m - n")
    assert ko.endswith(r"q'_m \cdot k'_n\text{의 값은 }m - n\text{에만 달려 있음}")
    assert "depends" not in ko
    assert tour_formula("tokens", MINILM, "en") == r"\text{text}\;\longrightarrow\;(t_0, t_1, \dots, t_{n-1})"
    assert tour_formula("tokens", MINILM, "ko") == r"\text{텍스트}\;\longrightarrow\;(t_0, t_1, \dots, t_{n-1})"
    # a catalogue sentence's braces and backslashes never reach LaTeX as commands
    assert latex_sentence("notes.formula.relative", "en", qk="a", mn="b") == r"a\text{ depends only on }b"
    for key in ("scores", "mask", "softmax", "attend", "decoder_self", "cross"):  # the paper's, as written
        assert tour_formula(key, SMOLLM2, "ko") == tour_formula(key, MINILM, "en")


def _steps(n: int = 3, qkv: bool = True, o: bool = True) -> dict:
    steps = {k: np.ones((n, 2)) for k in "QKV"}
    steps.update(X=np.ones((n, 4)), W_Q=np.ones((4, 2)), W_K=np.ones((4, 2)), W_V=np.ones((4, 2)),
                 scores=np.ones((n, n)), scaled=np.ones((n, n)), mask=np.tril(np.ones((n, n))),
                 weights=np.ones((n, n)) / n, Z=np.ones((n, 2)), Z_all=np.ones((n, 4)), W_O=np.ones((4, 4)),
                 output=np.ones((n, 4)), bias_QKV=np.array(qkv), bias_O=np.array(o))
    return steps


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("qkv,o", [(True, True), (False, False), (True, False)])
def test_build_stages_says_bias_only_where_the_model_has_it(lang, qkv, o):
    s = {st.key: st for st in build_stages(_steps(qkv=qkv, o=o), list("abc"), list("abc"), head=0, n_heads=2,
                                           lang=lang)}
    for name in "QKV":
        assert (rf"+ b^{{{name}}}_{{0}}" in s[name].latex) == qkv, s[name].latex
        assert s[name].caption == t("steps.cap.QKV" if qkv else "steps.cap.QKV_no_bias", lang, n=3, k=2)
    assert (r"+ b^{O}" in s["output"].latex) == o
    assert s["output"].caption == t("steps.cap.output" if o else "steps.cap.output_no_bias", lang)
    with pytest.raises(KeyError):  # a dict that does not say which biases the model has is refused, never guessed
        build_stages({k: v for k, v in _steps().items() if k != "bias_QKV"}, list("abc"), list("abc"), head=0,
                     n_heads=2)


def test_rope_pair_figure_draws_before_and_after():
    before = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [3.0, 0.0, 0.0, 0.0]])
    after = np.array([[1.0, 0.0, 0.0, 0.0], [-1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0]])
    fig = vt.rope_pair_figure(before, after, ["a", "<b>", "c"], pair=0, title="pair")
    assert [(tr.x, tr.y) for tr in fig.data] == [((1.0, 1.0), (0.0, 0.0)), ((0.0, -1.0), (1.0, 0.0)),
                                                 ((3.0, 0.0), (0.0, 3.0))]
    assert fig.data[1].text == ("", "1: &lt;b&gt;")  # token text escaped
    assert fig.layout.yaxis.scaleanchor == "x"  # a turn looks like a turn: one unit on both axes


def test_shown_token():
    assert vt.shown_token(" Paris") == "␣Paris" and vt.shown_token("\n    ") == "↵␣␣␣␣"
    assert vt.shown_token("") == "∅" and vt.shown_token("\tx") == "⇥x" and vt.shown_token(".") == "."
