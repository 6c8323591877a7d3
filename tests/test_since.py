"""viz.since (issue 27): the tour's "What changed since 2017" table, one row per design choice, from each model's own
config and tokenizer (MiniLM, multilingual-e5-small, paper-base, SmolLM2, a random GPT-2 folder), in English and
Korean; never from the model's name."""

from __future__ import annotations

import re

import pytest
import torch
from hf_support import make_gpt2

from model.hf.load import load_local
from model.registry import load_model
from viz.model_notes import ModelFacts
from viz.since import ROWS, since_formula, since_rows, since_summary, since_table

HANGUL = re.compile("[\uac00-\ud7a3]")


@pytest.fixture(scope="module")
def facts(tmp_path_factory) -> dict[str, ModelFacts]:
    out = {n: ModelFacts.from_model(load_model(n, "cpu"))
           for n in ("minilm-l6", "multilingual-e5-small", "paper-base", "smollm2-135m")}
    folder = make_gpt2(tmp_path_factory.mktemp("since") / "hl-gpt2")[1]
    out["gpt2"] = ModelFacts.from_model(load_local(torch.device("cpu"), folder, "hl-gpt2"))
    return out


def rows(f: ModelFacts, lang: str = "en") -> dict:
    return {r.key: r for r in since_rows(f, lang)}


def differ(f: ModelFacts) -> set[str]:
    return {k for k, r in rows(f).items() if not r.same}


def test_every_row_formats_in_both_languages(facts):
    for f in facts.values():
        for lang in ("en", "ko"):
            out = since_rows(f, lang)
            assert [r.key for r in out] == list(ROWS)
            for r in out:
                for cell in (r.choice, r.paper, r.model, r.why):
                    assert "{" not in cell and "}" not in cell, (f.name, r.key, cell)
                assert bool(r.why) != r.same, (f.name, r.key)  # a reason exactly where the model differs
                assert lang == "en" or HANGUL.search(r.paper), (f.name, r.key, r.paper)
                assert lang == "en" or r.same or HANGUL.search(r.why), (f.name, r.key, r.why)


def test_paper_base_makes_every_choice_of_the_paper(facts):
    f = facts["paper-base"]
    assert differ(f) == set()
    assert since_summary(since_rows(f, "en"), f, "en") == "paper-base makes all 9 of these choices as the paper did."
    assert since_summary(since_rows(f, "ko"), f, "ko") == "paper-base는 이 9가지 선택을 모두 논문과 똑같이 합니다."
    table = since_table(since_rows(f, "en"), f, "en")
    assert list(table) == ["Design choice", "The paper (2017)", "paper-base", "Why it changed"]
    assert set(table["Why it changed"]) == {"= the paper"}
    r = rows(f)
    assert r["heads"].model == "8 heads, each with its own K and V (d_k = 64)"
    assert r["ffn"].model == "ReLU, 2 matrices; d_ff = 2048 = 4 · d_model"
    assert r["stack"].model == "Encoder + decoder, 6 + 6 layers"
    formula = since_formula(f)
    assert r"\operatorname{LN}" in formula and "PE_{pos}" in formula and r"\longrightarrow" not in formula


def test_smollm2_rotary_rmsnorm_gqa_swiglu(facts):
    f = facts["smollm2-135m"]
    assert differ(f) == {"stack", "positions", "norm", "heads", "ffn", "bias", "vocab", "context"}
    r = rows(f)
    assert r["positions"].model.startswith("Rotary (RoPE)") and "θ = 100000" in r["positions"].model
    assert "m − n" in r["positions"].why
    assert r["norm"].model.startswith("RMSNorm before each sublayer (pre-LN)")
    assert "Pre-norm" in r["norm"].why and "RMSNorm drops the mean" in r["norm"].why
    assert r["heads"].model == "Grouped-query: 9 query heads share 3 K/V heads (d_k = 64)"
    assert "3/9 = 1/3 the size" in r["heads"].why  # the K/V cache
    assert r["ffn"].model.startswith("SwiGLU: SiLU/Swish(x W_gate) ⊙ x W_1") and "3 matrices" in r["ffn"].model
    assert "d_ff = 1536 ≈ 2.67 · d_model" in r["ffn"].model and "8/3" in r["ffn"].why
    assert r["bias"].model == "None" and r["stack"].model == "Decoder only, 30 layers"
    assert r["tying"].same and r["tying"].model.startswith("Tied")
    assert r["vocab"].model == "Byte-level BPE (Ġ is a space), 49,152 tokens"
    ko = rows(f, "ko")
    assert "회전 위치 (RoPE)" in ko["positions"].model and "RMSNorm" in ko["norm"].model and "pre-LN" in ko["norm"].model
    assert "쿼리 헤드 9개가 K/V 헤드 3개를" in ko["heads"].model and "3/9 = 1/3" in ko["heads"].why
    assert ko["ffn"].model.startswith("SwiGLU") and "행렬 3개" in ko["ffn"].model
    summary = since_summary(since_rows(f, "ko"), f, "ko")
    assert summary.startswith("smollm2-135m은 9가지 중 8가지가 논문과 다릅니다") and "위치 정보" in summary
    formula = since_formula(f)
    assert r"\operatorname{RMSNorm}" in formula and r"R_{\Theta,m}" in formula and "100000" in formula
    assert formula.count("_{2017}") == 2


def test_minilm_and_e5_bert_family_encoders(facts):
    m = facts["minilm-l6"]
    assert differ(m) == {"stack", "positions", "ffn", "tying", "context"}
    r = rows(m)
    assert r["stack"].model == "Encoder only, 6 layers" and "BERT" in r["stack"].why
    assert r["positions"].model.startswith("Learned: one vector per position (up to 512)")
    assert "token-type" in r["positions"].model and "Table 3" in r["positions"].why
    assert r["norm"].same and r["norm"].model == "LayerNorm after each sublayer (post-LN)"
    assert r["heads"].same and r["heads"].model == "12 heads, each with its own K and V (d_k = 32)"
    assert r["ffn"].model == "GELU, 2 matrices; d_ff = 1536 = 4 · d_model" and r["ffn"].why.startswith("GELU")
    assert r["vocab"].same and "WordPiece" in r["vocab"].model and "30,522" in r["vocab"].model
    assert r["tying"].model.startswith("No output layer") and r["context"].why.endswith("at 512")
    e = facts["multilingual-e5-small"]
    assert differ(e) == differ(m) | {"vocab"}
    assert rows(e)["vocab"].model == "SentencePiece (▁ starts a word), 250,037 tokens"
    assert rows(e)["stack"].model == "Encoder only, 12 layers"
    assert "P[pos]" in since_formula(e) and "RMSNorm" not in since_formula(e)


def test_gpt2_like_folder(facts):
    f = facts["gpt2"]
    assert differ(f) == {"stack", "positions", "norm", "ffn", "vocab", "context"}
    r = rows(f)
    assert r["stack"].model.startswith("Decoder only") and r["norm"].model.startswith("LayerNorm before each sublayer")
    assert r["norm"].why.startswith("Pre-LN keeps a clean residual path") and "RMSNorm" not in r["norm"].why
    assert r["heads"].same and r["ffn"].model.startswith("GELU (tanh), 2 matrices") and r["bias"].same
    assert r["tying"].same and r["vocab"].model.startswith("Byte-level BPE")
    formula = since_formula(f)
    assert r"x + \operatorname{Sub}(\operatorname{LN}(x))" in formula and "P[pos]" in formula


def test_the_facts_come_from_the_config_not_the_name(facts):
    """A model called paper-base with SmolLM2's config gets SmolLM2's rows; MiniLM's config renamed stays MiniLM's."""
    smol = load_model("smollm2-135m", "cpu")
    fake = ModelFacts.from_config("paper-base", smol.config, scheme="bytelevel")
    assert differ(fake) == differ(facts["smollm2-135m"])
    assert rows(fake)["heads"].model == rows(facts["smollm2-135m"])["heads"].model
    cfg = load_model("minilm-l6", "cpu").config
    assert differ(ModelFacts.from_config("smollm2-135m", cfg, scheme="wordpiece")) == differ(facts["minilm-l6"])


def test_multi_query_qwen_biases_and_an_untied_decoder():
    cfg = load_model("smollm2-135m", "cpu").config
    mqa = ModelFacts.from_config("mqa", cfg.replace(n_kv_heads=1, bias=False, qkv_bias=True, tie_embeddings=False))
    r = rows(mqa)
    assert r["heads"].model.startswith("Grouped-query: 9 query heads share 1 K/V heads")
    assert "1/9 = 1/9 the size" in r["heads"].why
    assert r["bias"].model == "Only on W_Q, W_K, W_V" and not r["bias"].same
    assert r["tying"].model.startswith("Untied") and not r["tying"].same
    plain = ModelFacts.from_config("plain", cfg.replace(positional="none"), scheme=None)
    assert rows(plain)["positions"].model.startswith("None") and rows(plain)["vocab"].model.startswith("Whole words")
    assert rows(plain)["context"].same


def test_the_translators_ssru_decoder_is_a_change_since_2017():
    from model.registry import get_spec
    from viz.model_notes import ModelFacts
    from viz.since import since_rows

    config = get_spec("bergamot-en-pt").read_config()
    assert config is not None and config.decoder_mixer == "ssru"
    for lang, word in (("en", "SSRU"), ("ko", "SSRU")):
        stack = since_rows(ModelFacts.from_config("bergamot-en-pt", config), lang)[0]
        assert stack.key == "stack" and not stack.same and word in stack.model and "6 + 2" in stack.model
        assert "Kim et al. 2019" in stack.why
