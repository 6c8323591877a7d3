"""viz.model_notes: the tour's model-specific captions and formulas come from each model's own config and tokenizer
(MiniLM, multilingual-e5-small, paper-base, SmolLM2, a random GPT-2 folder), in English and Korean; the special-token
labels name the model's own tokens; the tokenizer's piece scheme is read from the tokenizer, not the model's name."""

from __future__ import annotations

import re

import pytest
import torch
from hf_support import byte_bpe, make_gpt2, word_level

from i18n import t
from model.hf.load import load_local
from model.registry import load_model
from model.tokenizer import TextTokenizer, tokenizer_scheme
from ui.tour import STEPS
from viz.model_notes import (
    ModelFacts,
    pad_label,
    piece_example,
    scheme_from_tokens,
    specials_label,
    step_formula,
    step_notes,
)

HANGUL = re.compile("[\uac00-\ud7a3]")


@pytest.fixture(scope="module")
def facts(tmp_path_factory) -> dict[str, ModelFacts]:
    out = {n: ModelFacts.from_model(load_model(n, "cpu"))
           for n in ("minilm-l6", "multilingual-e5-small", "paper-base", "smollm2-135m", "seq2seq-tiny")}
    folder = make_gpt2(tmp_path_factory.mktemp("notes") / "hl-gpt2")[1]
    out["gpt2"] = ModelFacts.from_model(load_local(torch.device("cpu"), folder, "hl-gpt2"))
    return out


def notes(f: ModelFacts, step: str, lang: str = "en") -> str:
    return " ".join(step_notes(step, f, lang))


def test_every_step_and_language_formats(facts):
    for f in facts.values():
        for step in STEPS:
            for lang in ("en", "ko"):
                for line in step_notes(step, f, lang):
                    assert "{" not in line and "}" not in line, (f.name, step, line)
                    assert lang == "en" or HANGUL.search(line), (f.name, step, line)


def test_e5_learned_positions_and_token_types_never_sin_cos(facts):
    f = facts["multilingual-e5-small"]
    assert (f.positional, f.scheme, f.specials, f.pad) == ("learned", "sentencepiece", ("<s>", "</s>"), "<pad>")
    en, ko = notes(f, "positional"), notes(f, "positional", "ko")
    assert "learns one position vector per position" in en and "token-type" in en
    assert "uses no sin/cos table" in en and "paper's sinusoidal" not in en and "multiplies" not in en
    assert "not multiplied by √d_model" in en and "LayerNorm" in en and en.count("multilingual-e5-small") == 1
    assert "학습" in ko and "토큰 타입" in ko and "곱하지 않습니다" in ko and "논문의 sin/cos Positional" not in ko
    formula = step_formula("positional", f)
    assert "P[pos]" in formula and r"T[\text{type}]" in formula and r"\sin" not in formula
    assert "sqrt" not in step_formula("embedding", f)


def test_e5_tokens_explain_word_starts_and_its_own_specials(facts):
    f = facts["multilingual-e5-small"]
    en, ko = notes(f, "tokens"), notes(f, "tokens", "ko")
    assert "SentencePiece" in en and "`▁` marks the start of a word" in en and "##" not in en
    assert "`<s>` first and `</s>` last" in en and "[CLS]" not in en
    assert "`▁`" in ko and "맨 앞에 `<s>`, 맨 뒤에 `</s>`를" in ko
    assert specials_label(f, "en") == "<s>/</s>" and pad_label(f, "ko") == "<pad>"


def test_minilm_wordpiece_cls_sep_learned(facts):
    f = facts["minilm-l6"]
    assert "`##` marks a piece" in notes(f, "tokens") and "`[CLS]` first and `[SEP]` last" in notes(f, "tokens")
    assert specials_label(f, "en") == "[CLS]/[SEP]" and pad_label(f, "en") == "[PAD]"
    assert "learns one position vector" in notes(f, "positional")
    assert "post-LN" in notes(f, "add_norm") and "then GELU, then W_2" in notes(f, "ffn")


def test_paper_base_sin_cos_and_sqrt_d_model(facts):
    f = facts["paper-base"]
    en, ko = notes(f, "positional"), notes(f, "positional", "ko")
    assert "paper's sinusoidal Positional Encoding" in en and "√d_model = √512 ≈ 22.6" in en
    assert "sin/cos Positional Encoding" in ko and "√512 ≈ 22.6을 곱합니다" in ko and "위치 벡터를 더하기 전에" in ko
    assert r"\sin" in step_formula("positional", f) and r"\sqrt{d_{model}}" in step_formula("embedding", f)
    assert "ReLU" in notes(f, "ffn") and r"\operatorname{ReLU}(x W_1 + b_1)" in step_formula("ffn", f)


def test_smollm2_rotary_rmsnorm_pre_norm_swiglu_bytelevel(facts):
    f = facts["smollm2-135m"]
    assert (f.positional, f.norm, f.norm_placement, f.gated_ffn, f.scheme) == \
        ("rotary", "rmsnorm", "pre", True, "bytelevel")
    pos = notes(f, "positional")
    assert "rotary positions (RoPE)" in pos and "θ = 100000" in pos and "sin" not in pos and "√d_model" not in pos
    assert "RoPE" in notes(f, "positional", "ko") and "회전" in notes(f, "positional", "ko")
    assert "grouped-query" in notes(f, "qkv") and "9 query heads share 3" in notes(f, "qkv")
    assert "RoPE" in notes(f, "scores")
    assert "decoder-only" in notes(f, "mask")
    norm = notes(f, "add_norm")
    assert "pre-LN" in norm and "RMSNorm(x)" in norm and "no β" in norm and "post-LN" not in norm
    assert "RMSNorm" in notes(f, "add_norm", "ko") and "pre-LN" in notes(f, "add_norm", "ko")
    assert "SwiGLU" in notes(f, "ffn") and "SiLU" in notes(f, "ffn") and "SwiGLU" in notes(f, "ffn", "ko")
    assert r"W_{gate}" in step_formula("ffn", f) and "b_1" not in step_formula("ffn", f)
    assert r"\operatorname{RMSNorm}(x)" in step_formula("add_norm", f)
    assert "R_{\\Theta, m}" in step_formula("positional", f)
    tokens = notes(f, "tokens")
    assert "byte-level BPE" in tokens and "`Ġ`" in tokens and "adds no special tokens" in tokens
    assert "`<|im_start|>`" in tokens  # named from its vocabulary, not guessed
    assert specials_label(f, "en") == "special tokens" and specials_label(f, "ko") == "특수 토큰"


def test_gpt2_folder_pre_ln_layernorm_learned_bytelevel(facts):
    f = facts["gpt2"]
    assert (f.kind, f.positional, f.norm, f.norm_placement, f.gated_ffn) == \
        ("decoder", "learned", "layernorm", "pre", False)
    assert "byte-level BPE" in notes(f, "tokens") and "`<|endoftext|>`" in notes(f, "tokens")
    assert "pre-LN" in notes(f, "add_norm") and "LayerNorm(x)" in notes(f, "add_norm")
    assert "then GELU (tanh), then W_2" in notes(f, "ffn")
    assert "token-type" not in notes(f, "positional") and "decoder-only" in notes(f, "mask")
    assert step_formula("add_norm", f).startswith(r"x + \operatorname{Sublayer}(\operatorname{LayerNorm}(x))")


def test_scheme_from_the_tokenizer_not_the_name():
    assert TextTokenizer(byte_bpe(300), 64).scheme == "bytelevel"
    assert tokenizer_scheme(word_level(["<s>", "<pad>", "</s>", "<unk>"], "<unk>", None)) is None  # whole words
    # a tokenizer that does not say: the marks in its tokens decide
    assert scheme_from_tokens(["<s>", "▁The", "▁animal", "</s>"]) == "sentencepiece"
    assert scheme_from_tokens(["the", "Ġcat"]) == "bytelevel" and scheme_from_tokens(["didn", "##t"]) == "wordpiece"
    assert scheme_from_tokens(["the", "cat"]) is None


def test_a_whole_word_tokenizer_with_roberta_specials(facts):
    """A config and tokens only (no model): the captions follow what the tokens show."""
    cfg = load_model("minilm-l6", "cpu").config.replace(positional="none", type_vocab_size=0)
    f = ModelFacts.from_config("toy", cfg, tokens=["<s>", "the", "cat", "</s>"], special=[True, False, False, True],
                               pad="<pad>")
    assert f.scheme is None and "whole words" in notes(f, "tokens") and "`<s>` first and `</s>` last" in notes(
        f, "tokens")
    assert "adds no position information" in notes(f, "positional") and step_formula("positional", f) \
        == r"X' = \operatorname{LayerNorm}(X)"
    assert t("ex.hide", "ko", specials=specials_label(f, "ko")) == "<s>/</s> 숨기고 다시 정규화"


def test_step_one_shows_a_piece_of_the_sentence(facts):
    enc = load_model("multilingual-e5-small", "cpu").tokenizer.encode("그 동물은 길을 건너지 않았다")
    en = " ".join(step_notes("tokens", facts["multilingual-e5-small"], "en", tokens=enc.tokens,
                                         special=enc.special))
    assert "for example: `▁동물` `은`" in en
    ko = " ".join(step_notes("tokens", facts["multilingual-e5-small"], "ko", tokens=enc.tokens, special=enc.special))
    assert "이 문장의 예: `▁동물` `은`" in ko
    assert "`didn` `##t`" not in notes(facts["minilm-l6"], "tokens")  # no sentence: no example
    assert piece_example("wordpiece", ["[CLS]", "un", "##believ", "[SEP]"], [True, False, False, True]) \
        == ("un", "##believ")
    assert piece_example("bytelevel", ["The", "Ġanimal"]) == ("Ġanimal",) and piece_example(None, ["a"]) == ()
