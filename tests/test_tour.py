"""AppTest of the guided tour (app_pages/tour.py, ui/tour.py, ui/quiz.py): every step with Next on the brief's
sentence, a hostile one and Korean text; the step in the URL (read, validated, written back); Korean interface;
the three "predict, then reveal" questions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apptest_support import HOSTILE, assert_ok, charts
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import quiz, tour
from ui.pages import page_file

ROOT = Path(__file__).resolve().parents[1]
TOUR = page_file("tour")
BRIEF = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="module")
def entry() -> tuple[str, str]:
    """(entrypoint, path to pass to switch_page)."""
    return str(ROOT / "app.py"), TOUR


def _open(entry, **params) -> AppTest:
    app, page = entry
    at = AppTest.from_file(app, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    at.switch_page(page).run()
    assert_ok(at)
    return at


def _qp(at, key):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def _walk(at, lang="en") -> list[str]:
    """Click Next through every step; returns the step headings. Checks each screen has a formula and no error."""
    heads = []
    for i in range(1, tour.N_STEPS + 1):
        assert_ok(at)
        assert _qp(at, "step") == str(i)
        heads.append(at.subheader[0].value)
        assert at.latex, f"step {i} has no formula"
        if i < tour.N_STEPS:
            at.button(key="tour_next_top").click().run()
    assert at.button(key="tour_next_top").disabled
    return heads


@pytest.mark.slow
@pytest.mark.parametrize("text", [BRIEF, HOSTILE["script"], HOSTILE["korean"]], ids=["brief", "script", "korean"])
def test_walk_every_step(entry, text):
    at = _open(entry, text=text)
    heads = _walk(at)
    assert heads[0].startswith("Step 1 of 16") and heads[-1] == "Step 16 of 16: What changed since 2017"
    assert [h.split(": ", 1)[1] for h in heads][:3] == ["Tokens and special tokens", "Embedding", "Positional Encoding"]
    assert at.table, "the last step puts the model beside the paper in a table"
    at.button(key="tour_back_top").click().run()
    assert _qp(at, "step") == "15"  # generation: an encoder is offered a language model
    assert t("cause.need_lm", "en", model="minilm-l6") in [i.value for i in at.info]
    at.button(key="tour_back_top").click().run()
    # the decoder steps (12-14) say they use seq2seq-tiny
    assert any("seq2seq-tiny" in i.value for i in at.info)
    # user text is never rendered as HTML by plotly
    assert all("<script>" not in c for c in charts(at))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["seq2seq-tiny", "paper-base"])
def test_walk_with_an_encoder_decoder_in_the_sidebar(entry, model):
    at = _open(entry, model=model, text="I am good", block="cross")
    _walk(at)
    at = _open(entry, model=model, text="I am good", step="11")
    assert any("equals the model's output of layer" in s.value for s in at.success)


@pytest.mark.slow
def test_layer_output_check_and_neuron_view(entry):
    at = _open(entry, step="11")
    assert any("equals the model's output of layer 0" in s.value for s in at.success)
    assert any("d_ff = 1536" in m.value and "2048" in m.value for m in at.markdown)
    at = _open(entry, step="5")
    cap = [c.value for c in at.caption if "is the model's score" in c.value]
    assert cap, "neuron view check missing"


@pytest.mark.parametrize("raw,expect", [("6", 6), ("99", 1), ("zero", 1), ("-2", 1)])
def test_step_in_the_url(entry, raw, expect):
    at = _open(entry, step=raw)
    assert at.subheader[0].value.startswith(f"Step {expect} of 16")
    assert _qp(at, "step") == str(expect)
    warned = any("from the link does not exist" in w.value for w in at.warning)
    assert warned == (str(expect) != raw)


def test_korean_interface(entry):
    at = _open(entry, step="10", lang="ko")
    assert at.subheader[0].value == "16단계 중 10단계: Add & Norm"
    assert at.button(key="tour_next_top").label == "다음"
    at.button(key="tour_next_top").click().run()
    assert_ok(at)
    assert at.subheader[0].value == "16단계 중 11단계: Feed Forward"
    assert any("어텐션" in m.value or "토큰" in m.value for m in at.markdown)


@pytest.mark.slow
def test_korean_every_step(entry):
    """With lang=ko every step's heading, explanation, buttons and figure titles are Korean."""
    hangul = re.compile("[\uac00-\ud7a3]")
    at = _open(entry, lang="ko")
    for i in range(1, tour.N_STEPS + 1):
        assert_ok(at)
        assert at.subheader[0].value.startswith(f"16단계 중 {i}단계")
        assert any(hangul.search(m.value) for m in at.markdown), f"step {i}: no Korean explanation"
        for spec in charts(at):
            title = json.loads(spec).get("layout", {}).get("title", {})
            text = title.get("text", "") if isinstance(title, dict) else ""
            assert not text or hangul.search(text) or text.startswith(("X", "x", "Q", "K", "V", "Z", "W", "Σ"))  # formulas, (i, text)
        if i < tour.N_STEPS:
            at.button(key="tour_next_top").click().run()


def _reveal(at, qid: str, guess: int) -> AppTest:
    at.session_state[f"{qid}_guess"] = guess
    at.run()
    assert_ok(at)
    at.button(key=f"{qid}_reveal").click().run()
    assert_ok(at)
    return at


@pytest.mark.slow
def test_quiz_three_kinds(entry):
    at = _open(entry, step="7", text=BRIEF, layer="0", head="0", token="10")
    at.toggle(key="quiz_on").set_value(True).run()
    assert not [c for c in at.get("plotly_chart")], "the answer must be hidden before the reveal"
    qid = quiz._qid("attend", "minilm-l6", BRIEF, 0, 0, 10)
    at = _reveal(at, qid, 2)
    verdicts = [v.value for v in (*at.success, *at.warning)]
    assert any("the answer is" in v for v in verdicts), verdicts
    assert any("rank" in m.value for m in at.markdown)
    assert at.session_state[quiz.SCORE]["asked"] == 1
    assert at.get("plotly_chart"), "the reveal shows the weights"

    at.button(key="tour_next_top").click().run()  # 8
    at.button(key="tour_next_top").click().run()  # 9: multi-head -> previous-token head
    qid = quiz._qid("prev", "minilm-l6", BRIEF, 0)
    at = _reveal(at, qid, 0)
    assert at.session_state[quiz.SCORE]["asked"] == 2
    assert any("previous token" in m.value for m in at.markdown)

    for _ in range(5):
        at.button(key="tour_next_top").click().run()  # 14: output probabilities
    assert at.subheader[0].value.startswith("Step 14")
    run_step = at.slider(key="tour_dec_step").value
    qid = quiz._qid("next", BRIEF, "copy", "greedy", run_step)
    at = _reveal(at, qid, 0)
    assert at.session_state[quiz.SCORE]["asked"] == 3
    assert any("Quiz score this session" in c.value for c in at.caption)


# ---- what each step says about the sidebar's model: from its config and tokenizer (viz.model_notes) ----------------
def _notes(at) -> str:
    return " ".join(i.value for i in at.info)


def _formula(at) -> str:
    return " ".join(x.value for x in at.latex)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_e5_tour_says_learned_positions_and_word_starts(entry, lang):
    at = _open(entry, model="multilingual-e5-small", text="그 동물은 길을 건너지 않았다", lang=lang, step="3")
    notes = _notes(at)
    if lang == "en":
        assert "learns one position vector per position" in notes and "token-type" in notes
        assert "sinusoidal" not in notes and "multiplies each token's embedding" not in notes
    else:
        assert "위치마다 벡터를 하나씩 학습" in notes and "토큰 타입" in notes and "√d_model을 곱하지 않습니다" in notes
        assert "논문의 sin/cos Positional Encoding을 씁니다" not in notes
    assert "P[pos]" in _formula(at) and r"\sin" not in _formula(at)
    at.button(key="tour_back_top").click().run()
    at.button(key="tour_back_top").click().run()  # step 1
    assert_ok(at)
    notes = _notes(at)
    assert "`▁`" in notes and "`<s>`" in notes and "`</s>`" in notes and "[CLS]" not in notes and "`##`" not in notes
    assert ("SentencePiece" in notes) and (("word" in notes) if lang == "en" else ("단어의 시작" in notes))
    assert "`▁동물` `은`" in notes  # a word of this sentence, as its pieces
    tokens = at.dataframe[0].value.iloc[:, 1].tolist()
    assert tokens[0] == "<s>" and tokens[-1] == "</s>" and any(tok.startswith("▁") for tok in tokens)


def test_paper_base_tour_says_sin_cos_and_sqrt_d_model(entry):
    at = _open(entry, model="paper-base", text="I am good", step="3")
    notes = _notes(at)
    assert "paper's sinusoidal Positional Encoding" in notes and "√d_model = √512" in notes
    assert r"\sin" in _formula(at)
    at.button(key="tour_back_top").click().run()  # step 2: the scaled embedding
    assert "multiplies each token's embedding by √d_model" in _notes(at) and r"\sqrt{d_{model}}" in _formula(at)


@pytest.mark.slow
def test_smollm2_tour_says_rotary_rmsnorm_pre_norm_swiglu(entry):
    text = "The animal didn't cross the street"
    at = _open(entry, model="smollm2-135m", text=text, step="1")
    assert "byte-level BPE" in _notes(at) and "`Ġ`" in _notes(at) and "[CLS]" not in _notes(at)
    at = _open(entry, model="smollm2-135m", text=text, step="3")
    assert "rotary positions (RoPE)" in _notes(at) and "sinusoidal" not in _notes(at)
    at = _open(entry, model="smollm2-135m", text=text, step="10", lang="ko")
    assert "RMSNorm" in _notes(at) and "pre-LN" in _notes(at) and "post-LN" not in _notes(at)
    assert r"\operatorname{RMSNorm}" in _formula(at)
    at.button(key="tour_next_top").click().run()  # step 11
    assert_ok(at)
    assert "SwiGLU" in _notes(at) and "SiLU" in _notes(at) and "W_{gate}" in _formula(at)


def test_decoder_steps_open_at_the_first_decoding_step(entry):
    at = _open(entry, text="I am good", step=str(tour.STEPS.index("decoder_self") + 1), lang="ko")
    slider = at.slider(key="tour_dec_step")
    assert slider.value == 1 and slider.max > 1
    # the colour bar of the decoder's figures speaks the interface language
    bars = [json.loads(c).get("data", [{}])[0].get("colorbar", {}).get("title", {}).get("text") for c in charts(at)]
    assert bars and all(b == t("s2s.axis.weight", "ko") != "weight" for b in bars), bars
    at.button(key="tour_next_top").click().run()  # cross-attention: still the first step
    assert at.slider(key="tour_dec_step").value == 1


# ---- step 16: what changed since 2017 (viz.since), the sidebar's model beside the paper -----------------------------
SINCE = str(tour.STEPS.index("since") + 1)


def _since_table(at):
    """The step's table as {row name: [the paper, this model, why it changed]} and its column names."""
    assert len(at.table) == 1
    df = at.table[0].value
    return {str(i): [str(v) for v in row] for i, row in zip(df.index, df.itertuples(index=False))}, list(df.columns)


def test_since_is_the_last_step_and_the_output_step_keeps_its_number():
    assert tour.STEPS[-1] == "since" and tour.N_STEPS == 16 and tour.STEPS[13] == "output"
    assert tour.STEPS[14] == "generate"  # the language model writes, after the output step


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_since_on_smollm2_shows_rotary_rmsnorm_gqa_swiglu_as_changes(entry, lang):
    at = _open(entry, model="smollm2-135m", text="The animal didn't cross the street", lang=lang, step=SINCE)
    table, cols = _since_table(at)
    same = t("since.same_cell", lang)
    assert cols == [t("since.col.paper", lang), "smollm2-135m", t("since.col.why", lang)]
    row = {k: table[t(f"since.row.{k}", lang)] for k in ("positions", "norm", "heads", "ffn", "tying")}
    for k in ("positions", "norm", "heads", "ffn"):
        assert row[k][2] != same and row[k][2], (k, row[k])  # a difference, with its reason
    assert row["tying"][2] == same
    assert "RoPE" in row["positions"][1] and "θ = 100000" in row["positions"][1]
    assert "RMSNorm" in row["norm"][1] and "pre-LN" in row["norm"][1] and "LayerNorm" in row["norm"][0]
    assert "SwiGLU" in row["ffn"][1] and "ReLU" in row["ffn"][0]
    summary = " ".join(i.value for i in at.info)
    formula = _formula(at)
    assert r"\operatorname{RMSNorm}" in formula and r"R_{\Theta,m}" in formula
    if lang == "en":
        assert row["heads"][1] == "Grouped-query: 9 query heads share 3 K/V heads (d_k = 64)"
        assert "3/9 = 1/3 the size" in row["heads"][2]
        assert "smollm2-135m differs from the paper in 8 of 9 choices" in summary
        assert at.subheader[0].value == "Step 16 of 16: What changed since 2017"
    else:
        assert "쿼리 헤드 9개가 K/V 헤드 3개를" in row["heads"][1] and "캐시" in row["heads"][2]
        from test_korean_pages import english_words  # the Korean page scan's rule, on every cell of the table

        assert english_words([*cols, *(cell for cells in table.values() for cell in cells), summary]) == []
        assert "smollm2-135m은 9가지 중 8가지가 논문과 다릅니다" in summary
        assert at.subheader[0].value == "16단계 중 16단계: 2017년 이후 달라진 것"
    assert at.button(key="tour_next_top").disabled


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_since_on_paper_base_says_the_choices_are_the_papers(entry, lang):
    at = _open(entry, model="paper-base", text="I am good", lang=lang, step=SINCE)
    assert [s.value for s in at.success] == [t("since.summary.same", lang, model="paper-base", n=9)]
    table, _ = _since_table(at)
    assert {row[2] for row in table.values()} == {t("since.same_cell", lang)}
    assert r"\longrightarrow" not in _formula(at)


def test_since_needs_no_sentence(entry):
    at = _open(entry, text="", step=SINCE)
    assert len(at.table) == 1 and "minilm-l6 differs from the paper" in " ".join(i.value for i in at.info)
