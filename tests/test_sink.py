"""Issue 27, the Head lab on the model's own numbers: attention sinks and induction / previous-token heads
(analysis/heads/circuits.py) on hand-made attention and on real models, the query heads named with the key/value
head they share (grouped-query attention), the Sinks & induction tab on SmolLM2 in both languages, a qwen2 GGUF
reading Korean, and the command line's trace of SmolLM2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from apptest_support import assert_ok, charts
from gguf_support import make_llama, write_gguf
from streamlit.testing.v1 import AppTest

from analysis import heads as H
from i18n import head_name, kv_head, t
from ui import heads as uh
from ui.pages import page_file

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
CPU = torch.device("cpu")
SMOL = "smollm2-135m"


def causal_uniform(L: int, Hn: int, n: int) -> np.ndarray:
    """(L, H, n, n): every query spreads its weight evenly over the keys it may see."""
    a = np.tril(np.ones((n, n)))
    return np.broadcast_to(a / a.sum(-1, keepdims=True), (L, Hn, n, n)).copy()


# ---- pure functions on hand-made attention ----------------------------------------------------------------------
def test_a_head_on_the_first_token_only_has_sink_one():
    att = causal_uniform(2, 3, 6)
    att[1, 2] = 0.0
    att[1, 2, :, 0] = 1.0  # layer 1, head 2: every query on token 0
    s = H.sink_scores(att)
    assert s.shape == (2, 3) and s[1, 2] == pytest.approx(1.0)
    # a uniform causal head: query i gives 1 / (i + 1) to token 0; query 0 (always 1 on itself) is left out
    assert s[0, 0] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, 6)]))
    att[0, 1] = np.eye(6)  # a head that attends to itself only: nothing on token 0 after the first query
    assert H.sink_scores(att)[0, 1] == 0.0
    assert H.top_heads(H.sink_scores(att), 1) == [(1, 2, pytest.approx(1.0))]
    assert np.isnan(H.sink_scores(np.ones((1, 1, 1, 1)))).all()  # one token: no query looks back


def induction_pattern(R: int, offset: int, to: str) -> np.ndarray:
    """(1, 1, n, n) attention on [offset] + r + r: the first half uniform, the second half on `to` ("induction":
    i - R + 1, "previous": i - 1)."""
    n = offset + 2 * R
    att = causal_uniform(1, 1, n)
    for i in range(offset + R, n):
        att[0, 0, i] = 0.0
        att[0, 0, i, i - R + 1 if to == "induction" else i - 1] = 1.0
    return att


@pytest.mark.parametrize("offset", [0, 1])
def test_a_perfect_induction_pattern_scores_one_and_a_previous_token_head_zero(offset):
    ind, prev = H.induction_scores(induction_pattern(5, offset, "induction"), 5, offset)
    assert ind[0, 0] == pytest.approx(1.0) and prev[0, 0] == 0.0
    ind, prev = H.induction_scores(induction_pattern(5, offset, "previous"), 5, offset)
    assert prev[0, 0] == pytest.approx(1.0) and ind[0, 0] == 0.0
    uniform = H.induction_scores(causal_uniform(1, 1, offset + 10), 5, offset)[0][0, 0]
    assert uniform == pytest.approx(np.mean([1 / (i + 1) for i in range(offset + 5, offset + 10)]))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        H.sink_scores(np.ones((3, 4, 4)))
    with pytest.raises(ValueError):
        H.induction_scores(causal_uniform(1, 1, 9), 5)  # 2 x 5 positions do not fit in 9


# ---- real models --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    from model.hf.specs import folder_spec

    _, path, _ = make_llama(tmp_path_factory.mktemp("llama") / "hf", "llama")
    return folder_spec(path).load(CPU)


def test_induction_on_a_tiny_random_llama_is_finite_and_in_range(tiny_llama):
    ind = H.induction(tiny_llama, repeat=50)  # 64 positions: R is cut to 32
    assert ind.repeat == 32 and len(ind.ids) == 2 * 32 + ind.offset and ind.ids[-32:] == ind.ids[-64:-32]
    specials = {tiny_llama.tokenizer.token_to_id(s) for s in tiny_llama.tokenizer.special_tokens}
    assert not specials & set(ind.ids[ind.offset:])
    for grid in (ind.induction, ind.previous):
        assert grid.shape == (2, 6) and np.isfinite(grid).all() and (grid >= 0).all() and (grid <= 1).all()
        assert not grid.flags.writeable
    assert np.isfinite([ind.loss_first, ind.loss_second]).all()
    again = H.induction(tiny_llama, repeat=50)
    np.testing.assert_array_equal(again.induction, ind.induction)  # seeded: the same sequence, the same scores
    sink = H.attention_sink(tiny_llama.trace("the cat sat on the mat"))
    np.testing.assert_allclose(sink.scores, tiny_llama.trace("the cat sat on the mat")
                               .decoder_self_attention[:, :, 1:, 0].mean(-1), rtol=1e-6)


@pytest.fixture(scope="module")
def smol():
    from model import load_model

    return load_model(SMOL, "cpu")


def test_smollm2_has_induction_heads_in_its_middle_layers(smol):
    ind = H.induction(smol)
    assert ind.repeat == 40 and ind.offset == 0  # SmolLM2's tokenizer adds no BOS
    (la, h, score), *_ = ind.top("induction")
    assert 12 <= la <= 24 and score > 0.5, ind.top("induction")
    assert (ind.induction > 0.3).sum() >= 4
    assert ind.induction[:8].max() < 0.2  # the first layers have none
    assert ind.previous.max() > 0.8  # previous-token heads to feed them
    assert ind.loss_second < ind.loss_first / 3  # and the model copies: the repeated half is far easier


def test_smollm2_parks_attention_on_the_first_token(smol):
    sink = H.attention_sink(smol.trace("The quick brown fox jumps over the lazy dog because it was bored"))
    assert sink.scores.shape == (30, 9) and sink.tokens[0] == "The"
    assert sink.scores[1:].mean() > 0.5 and sink.top(1)[0][2] > 0.95


# ---- key/value heads ------------------------------------------------------------------------------------------------
def test_query_heads_are_named_with_the_key_value_head_they_share():
    assert [kv_head(h, 9, 3) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert kv_head(4, 12, None) is None and kv_head(4, 12, 12) is None
    assert head_name(2, 4, "en", kv=1) == "Layer 2 · Head 4 (KV 1)"
    assert head_name(2, 4, "ko", kv=1) == "레이어 2 · 헤드 4 (KV 1)"
    assert head_name(2, 4, "en") == "Layer 2 · Head 4"


# ---- the tab ----------------------------------------------------------------------------------------------------------
def _circuits(lang: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({"model": SMOL, "lang": lang, **params})
    at.run()
    at.switch_page(page_file("heads")).run()
    at.session_state[uh.K_TAB] = t("heads.tab.circuits", lang)
    at.run()
    return at


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_sinks_and_induction_tab_on_smollm2(lang):
    at = _circuits(lang)
    assert_ok(at)
    subs = [s.value for s in at.subheader]
    assert t("heads.sink.title", lang) in subs and t("heads.induction.title", lang) in subs
    figs = charts(at)
    assert len(figs) == 3 and t("heads.viz.induction", lang, r=40) in figs[1]
    sink, ind, prev = (at.table[i].value for i in range(3))
    assert len(sink) == len(ind) == len(prev) == 5
    name = head_name(18, 6, lang, kv=2)  # Layer 18 · Head 6 shares key/value head 2 (of 3, 3 query heads each)
    assert ind[t("col.head", lang)].iloc[0] == name and ind[t("col.score", lang)].iloc[0] > 0.5
    assert float(at.metric[1].value) < float(at.metric[0].value) / 3  # the loss drops on the repeated half
    caption = [c.value for c in at.caption if head_name(0, 0, lang) in c.value]  # the lab's caption names its head
    assert caption and t("names.kv", lang, kv=0) in caption[0]
    at.slider(key=uh.K_REPEAT).set_value(20).run()
    assert_ok(at)
    assert t("heads.viz.induction", lang, r=20) in charts(at)[1]


def test_an_encoder_shows_its_sink_and_says_induction_needs_a_decoder():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({"lang": "ko"})
    at.run()
    at.switch_page(page_file("heads")).run()
    at.session_state[uh.K_TAB] = t("heads.tab.circuits", "ko")
    at.run()
    assert_ok(at)
    assert len(charts(at)) == 1 and [i.value for i in at.info] == [t("heads.induction.decoder_only", "ko")]


# ---- a qwen2 GGUF reading Korean --------------------------------------------------------------------------------------
KOREAN = "철수는 책을 빌렸다. 재미있다!"  # byte-level: ~45 tokens, within the tiny model's 64 positions


@pytest.fixture(scope="module")
def qwen2_gguf(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen2")
    model, _, tok = make_llama(d / "hf", "qwen2")
    return write_gguf(model, tok, d / "qwen-ko.gguf", "qwen2", "Q8_0")


def test_a_qwen2_gguf_round_trips_korean_and_the_explorer_runs_in_korean(qwen2_gguf):
    from model.hf.specs import folder_spec
    from model.registry import REGISTRY, register_local_models

    model = folder_spec(qwen2_gguf).load(CPU)
    enc = model.tokenizer.encode(KOREAN)
    assert len(enc.ids) > 10 and not enc.truncated and model.tokenizer.decode(enc.ids) == KOREAN
    spec, = register_local_models(str(qwen2_gguf))
    try:
        at = AppTest.from_file(APP, default_timeout=300)
        at.query_params.update({"model": spec.name, "lang": "ko", "text": KOREAN})
        at.run()
        assert_ok(at)
        assert charts(at) and any(t("ex.next.title", "ko") == s.value for s in at.subheader)
        at.switch_page(page_file("heads")).run()
        at.session_state[uh.K_TAB] = t("heads.tab.circuits", "ko")
        at.run()
        assert_ok(at)
        assert len(charts(at)) == 3
    finally:
        REGISTRY.pop(spec.name, None)


# ---- the command line -------------------------------------------------------------------------------------------------
def test_cli_writes_smollm2_tokens_ids_and_its_causal_attention(tmp_path):
    out = tmp_path / "x.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "model", "The cat sat on the mat", "--model", SMOL, "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=240)
    assert r.returncode == 0, r.stderr
    d = np.load(out)
    assert list(d["tokens"]) == ["The", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat"]
    assert d["source_ids"].tolist() == [504, 2644, 2643, 335, 260, 1171]
    att = d["decoder_self_attention"]
    assert att.shape == (30, 9, 6, 6)  # layers x query heads (not the 3 key/value heads) x N x N
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    assert (np.triu(att, 1) == 0).all()  # causal


def test_the_explorer_names_smollm2s_heads_with_their_key_value_head():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({"model": SMOL, "lang": "ko", "head": "4"})
    at.run()
    assert_ok(at)
    assert any("레이어 0 · 헤드 4 (KV 1)" in c for c in charts(at))  # the one head's map
    from apptest_support import open_tab

    from ui import explorer as ex

    open_tab(at, t("ex.tab.token", "ko"), ex.K_TAB)
    assert_ok(at)
    box = at.multiselect(key=f"{ex.K_HEADS}-9")
    assert box.format_func(4) == "헤드 4 (KV 1)" and box.format_func(8) == "헤드 8 (KV 2)"
