"""Gemma 3 and Qwen3 on the one Transformer against transformers (issue 38): tiny random checkpoints with unusual
configurations, as Hugging Face folders and as GGUF files written the way llama.cpp's converter writes them
(tests/gguf_support.py). Sliding windows shorter than the texts, head widths that are not d_model / heads, grouped-query
ratios 1, 2, 3 and 4, tied and untied tables, a layer pattern given as layer_types, linear RoPE scaling of the global
layers, query_pre_attn_scalar; English and Korean text through a byte-level BPE (Qwen3) and a SentencePiece BPE with byte
fallback (Gemma). Attentions <= 1e-5, hidden states and logits <= 1e-4, greedy continuation equal, token ids equal."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf_support import make_llama, reference_from_gguf, write_gguf
from test_llama import TEXT, parity

from model.errors import HeadlightError, InputError
from model.gguf import load_gguf
from model.hf.load import load_local

CPU = torch.device("cpu")
# Korean the tiny tokenizers were not trained on (tests/hf_support.KOREAN): pieces, and bytes where a syllable is missing
TEXTS = [TEXT, "영희는 공원에서 철수에게 책을 빌려주었다.", "동물은 피곤해서 길을 건너지 않았다.",
         "철수는 영희에게 뷁을 주었다: 🍕 and ünïcödé"]  # 뷁: in no tiny vocabulary

HF_CASES = {
    # 6 heads on 2 (GQA 3), head_dim 10 of d_model 60, window 4, pattern 3 (layers 0, 1, 3 local), local RoPE base 300,
    # query_pre_attn_scalar 13, untied
    "gemma3-gqa3-window4": ("gemma3", {}),
    # multi-head (4 on 4), head_dim = d_model / heads, 7 layers in Gemma's pattern 6, window 3, tied, global layers
    # with linear RoPE scaling 4
    "gemma3-mha-tied-linear": ("gemma3", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                                              head_dim=8, num_hidden_layers=7, sliding_window=3,
                                              sliding_window_pattern=6, query_pre_attn_scalar=8,
                                              tie_word_embeddings=True,
                                              rope_scaling={"rope_type": "linear", "factor": 4.0})),
    # 3 heads on 1, head_dim 14 of d_model 36, the pattern as layer_types (global, local, local, global, local)
    "gemma3-gqa3-layer-types": ("gemma3", dict(hidden_size=36, num_attention_heads=3, num_key_value_heads=1,
                                               head_dim=14, num_hidden_layers=5, sliding_window=5,
                                               query_pre_attn_scalar=20, layer_types=[
                                                   "full_attention", "sliding_attention", "sliding_attention",
                                                   "full_attention", "sliding_attention"])),
    "qwen3-gqa3": ("qwen3", {}),  # 6 heads on 2, head_dim 10 of d_model 60, untied
    "qwen3-gqa2-tied": ("qwen3", dict(hidden_size=40, num_attention_heads=8, num_key_value_heads=4, head_dim=6,
                                      tie_word_embeddings=True)),
    # 4 heads on 1, head_dim 18, a sliding window of 5 on the layers from max_window_layers 1 up
    "qwen3-gqa4-window5": ("qwen3", dict(hidden_size=40, num_attention_heads=4, num_key_value_heads=1, head_dim=18,
                                         num_hidden_layers=3, use_sliding_window=True, sliding_window=5,
                                         max_window_layers=1)),
}


def _eager(model):
    model.config._attn_implementation = "eager"
    return model


@pytest.mark.parametrize("case", list(HF_CASES))
def test_hf_folder_parity(tmp_path, case):
    arch, overrides = HF_CASES[case]
    ref, path, tok = make_llama(tmp_path / case, arch, **overrides)
    _eager(ref)
    ours = load_local(CPU, path)
    c, cfg = ours.config, ref.config
    assert (c.d_k, c.n_heads, c.kv_heads, c.tie_embeddings) == (cfg.head_dim, cfg.num_attention_heads,
                                                                 cfg.num_key_value_heads, cfg.tie_word_embeddings)
    assert c.qk_norm and c.post_norms == (arch == "gemma3") and c.norm_offset == (1.0 if arch == "gemma3" else 0.0)
    local = tuple(i for i, kind in enumerate(cfg.layer_types) if kind == "sliding_attention")
    assert c.local_layers == local and c.sliding_window == (cfg.sliding_window if local else None)
    for text in TEXTS:
        enc = ours.tokenizer.encode(text)
        assert enc.ids == tok.encode(text).ids, text
        assert len(enc.ids) > (c.sliding_window or 0) + 2  # the window is shorter than the text: the band blocks
        parity(ours, ref, text, n_new=4)


def test_the_sliding_window_blocks_what_transformers_blocks(tmp_path):
    """A local layer's weights are exactly 0 outside the band (query i sees keys i - 3 .. i), a global layer's are not."""
    ref, path, _ = make_llama(tmp_path / "g", "gemma3")
    ours = load_local(CPU, path)
    a = ours.trace(TEXT).decoder_self_attention  # (L, h, n, n)
    n = a.shape[-1]
    band = np.subtract.outer(np.arange(n), np.arange(n))  # i - j
    outside = band >= 4
    assert outside.any()
    for layer in range(a.shape[0]):
        blocked = np.abs(a[layer][:, outside]).max()
        assert (blocked == 0.0) if layer in (0, 1, 3) else (blocked > 1e-3), (layer, blocked)


# ---- GGUF ------------------------------------------------------------------------------------------------------------
# transformers reads a gemma3 GGUF with query_pre_attn_scalar 256 and its config's layer pattern and local base (6,
# 10,000: llama.cpp's, which the file does not state), a qwen3 GGUF with head_dim 128: these shapes read the same both ways
GGUF_BY_TRANSFORMERS = {
    "gemma3": dict(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=256, num_hidden_layers=7,
                   sliding_window=4, sliding_window_pattern=6, rope_local_base_freq=10000.0,
                   query_pre_attn_scalar=256),
    "qwen3": dict(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=128),
}


@pytest.mark.parametrize("arch,qtype", [("gemma3", "F32"), ("gemma3", "Q8_0"), ("qwen3", "Q8_0")])
def test_gguf_parity_with_transformers_reading_the_same_file(tmp_path, arch, qtype):
    model, _, tok = make_llama(tmp_path / "hf", arch, **GGUF_BY_TRANSFORMERS[arch])
    path = write_gguf(model, tok, tmp_path / f"tiny-{arch}.gguf", arch, qtype)
    ref, ref_tok = reference_from_gguf(path)
    ours = load_gguf(CPU, path)
    assert ours.config.local_layers == ((0, 1, 2, 3, 4, 6) if arch == "gemma3" else ())
    for text in TEXTS:
        assert ours.tokenizer.encode(text).ids == ref_tok(text)["input_ids"], text
        parity(ours, ref, text, n_new=4)


# shapes transformers cannot read from a GGUF (its gguf reader takes no head_dim for qwen3, no query_pre_attn_scalar or
# RoPE scaling for gemma3): the F32 file against transformers on the Hugging Face folder with the same weights
GGUF_BY_FOLDER = {
    "gemma3": dict(hidden_size=36, num_attention_heads=3, num_key_value_heads=1, head_dim=10, num_hidden_layers=7,
                   sliding_window=3, sliding_window_pattern=6, rope_local_base_freq=10000.0, query_pre_attn_scalar=10,
                   tie_word_embeddings=True, rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "qwen3": dict(hidden_size=40, num_attention_heads=4, num_key_value_heads=2, head_dim=14),
}


@pytest.mark.parametrize("arch", list(GGUF_BY_FOLDER))
def test_gguf_parity_with_transformers_on_the_folder(tmp_path, arch):
    model, _, tok = make_llama(tmp_path / "hf", arch, **GGUF_BY_FOLDER[arch])
    path = write_gguf(model, tok, tmp_path / f"odd-{arch}.gguf", arch, "F32")
    ours = load_gguf(CPU, path)
    assert ours.config.d_k == GGUF_BY_FOLDER[arch]["head_dim"]
    assert ours.config.rope_scaling == (2.0 if arch == "gemma3" else 1.0)
    for text in TEXTS:
        assert ours.tokenizer.encode(text).ids == tok.encode(text).ids, text
        parity(ours, _eager(model), text, n_new=4)


# ---- refusals ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch,changes,key,needle", [
    ("gemma3", {"final_logit_softcapping": 30.0}, "hf_unsupported_option", "final_logit_softcapping=30.0"),
    ("gemma3", {"attn_logit_softcapping": 50.0}, "hf_unsupported_option", "attn_logit_softcapping=50.0"),
    ("gemma3", {"use_bidirectional_attention": True}, "hf_unsupported_option", "use_bidirectional_attention"),
    ("gemma3", {"head_dim": 7}, "hf_config_value", "must be even"),
    ("gemma3", {"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e6},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     "hf_unsupported_option", "'yarn'"),
    ("qwen3", {"attention_bias": True}, "hf_unsupported_option", "attention_bias=True"),
    ("qwen3", {"rope_parameters": {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e6}}, "hf_unsupported_option",
     "'yarn'"),
])
def test_unsupported_options_are_refused_by_name(tmp_path, arch, changes, key, needle):
    import json

    _, path, _ = make_llama(tmp_path / arch, arch)
    cfg = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**cfg, **changes}))
    with pytest.raises(InputError) as err:
        load_local(CPU, path)
    assert err.value.key == key and needle in str(err.value), str(err.value)


def test_gguf_options_llama_cpp_does_not_read_are_refused(tmp_path):
    from gguf import GGUFWriter

    model, _, tok = make_llama(tmp_path / "hf", "gemma3")
    good = write_gguf(model, tok, tmp_path / "good.gguf", "gemma3", "F32")
    assert load_gguf(CPU, good).config.local_layers == (0, 1, 2, 3)  # pattern 6: all 4 local, as llama.cpp reads it
    original = GGUFWriter.write_header_to_file
    for key, value, needle in (("gemma3.final_logit_softcapping", 30.0, "final_logit_softcapping"),
                               ("gemma3.rope.scaling.type", "yarn", "rope.scaling.type")):
        def header(self, *a, _k=key, _v=value, **kw):
            (self.add_float32 if isinstance(_v, float) else self.add_string)(_k, _v)
            return original(self, *a, **kw)

        GGUFWriter.write_header_to_file = header
        try:
            bad = write_gguf(model, tok, tmp_path / "bad.gguf", "gemma3", "F32")
        finally:
            GGUFWriter.write_header_to_file = original
        with pytest.raises(HeadlightError) as err:
            load_gguf(CPU, bad)
        assert err.value.key == "gguf_option" and needle in str(err.value), str(err.value)


def test_a_vision_tower_in_a_gemma3_file_is_not_read(tmp_path):
    """A multimodal Gemma 3 file (Ollama keeps the vision tower beside the language model: "v.", "mm." tensors) loads
    its language model; any other tensor the table does not read is still refused."""
    import numpy as np
    from gguf import GGUFWriter

    model, _, tok = make_llama(tmp_path / "hf", "gemma3")
    plain = load_gguf(CPU, write_gguf(model, tok, tmp_path / "text.gguf", "gemma3", "F32"))
    original = GGUFWriter.write_header_to_file

    def extra(names):
        def write(self, *a, **kw):
            for name in names:
                self.add_tensor(name, np.ones((4, 32), dtype=np.float32))
            return original(self, *a, **kw)
        return write

    for names, ok in ((["v.blk.0.attn_q.weight", "mm.input_projection.weight"], True), (["blk.0.extra.weight"], False)):
        GGUFWriter.write_header_to_file = extra(names)
        try:
            path = write_gguf(model, tok, tmp_path / f"mm-{ok}.gguf", "gemma3", "F32")
        finally:
            GGUFWriter.write_header_to_file = original
        if ok:
            ours = load_gguf(CPU, path)
            np.testing.assert_array_equal(ours.trace(TEXT).decoder_self_attention, plain.trace(TEXT).decoder_self_attention)
        else:
            with pytest.raises(HeadlightError) as err:
                load_gguf(CPU, path)
            assert "blk.0.extra.weight" in str(err.value)


def test_a_large_vocabularys_merges_are_kept_between_loads(tmp_path, monkeypatch):
    """Gemma's merges are rebuilt from its vocabulary (transformers' way); a large vocabulary's are kept in the cache
    folder by its digest, read back equal, and a damaged file is rebuilt."""
    from model import gguf_tokenizer as gt

    monkeypatch.setenv("HEADLIGHT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("model.weights._STAMP_DIR", tmp_path / "cache")
    monkeypatch.setattr(gt, "MERGES_CACHE_MIN_TOKENS", 10)
    tokens = ["<pad>", "a", "b", "c", "ab", "bc", "abc", "▁", "▁a", "▁ab", "ca", "cab"]
    vocab = {t: i for i, t in enumerate(tokens)}
    want = gt.merges_from_vocabulary(tokens, vocab)
    assert want[:3] == [("a", "b"), ("b", "c"), ("ab", "c")]  # the earliest-listed merged token first
    assert gt.cached_merges(tokens, vocab) == want
    (saved,) = (tmp_path / "cache").glob("gguf-merges-v1-*.json")
    monkeypatch.setattr(gt, "merges_from_vocabulary", lambda *a: pytest.fail("rebuilt, not read back"))
    assert gt.cached_merges(tokens, vocab) == want
    saved.write_text("[[1, 2", encoding="utf-8")  # damaged: rebuilt
    monkeypatch.undo()
    monkeypatch.setattr("model.weights._STAMP_DIR", tmp_path / "cache")
    monkeypatch.setattr(gt, "MERGES_CACHE_MIN_TOKENS", 10)
    assert gt.cached_merges(tokens, vocab) == want
