"""Every GGUF tensor type the app reads (model.gguf.SUPPORTED_TYPES: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
Q4_K, Q5_K, Q6_K), on tiny random llama, qwen2, qwen3 and gemma3 files written at test time with gguf's own writer:
d_model 256 and d_ff 512, so every matrix's rows are whole blocks (256 values for the K-quants) and every matrix is
stored in the type under test. F16 / BF16 / Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 are the model's weights quantised by
`gguf.quants.quantize`; gguf 0.19 cannot quantise to the K-quants, so those files hold random valid blocks
(tests/gguf_support.random_k_blocks). Each file is read by model/gguf.py and by transformers
(`from_pretrained(dir, gguf_file=...)`): attentions <= 1e-5, hidden states and logits <= 1e-4, greedy continuation
equal; and each tensor the loader dequantises equals gguf's own reader (`GGUFReader`, a parse independent of ours)
and dequantiser on the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # noqa: F401
from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter  # noqa: E402
from gguf.quants import dequantize  # noqa: E402
from gguf_support import make_llama, reference_from_gguf, write_gguf  # noqa: E402
from test_llama import TEXT, parity  # noqa: E402

from model.errors import WeightsError  # noqa: E402
from model.gguf import SUPPORTED_TYPES, GGUFFile, load_gguf  # noqa: E402

CPU = torch.device("cpu")
# 4 query heads on 2 key/value heads of 64 dimensions: rows of 256 (W_Q, W_K, W_V, W_O, gate, up, the tables) and 512
# (down), whole blocks of every type
WIDE = dict(hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, std=0.05)
CASES = [("llama", "F16"), ("llama", "BF16"), ("qwen2", "BF16"), ("llama", "Q8_0"), ("llama", "Q4_0"),
         ("qwen2", "Q4_1"), ("llama", "Q4_K"), ("qwen2", "Q4_K"), ("llama", "Q5_K"), ("llama", "Q6_K"),
         ("qwen2", "Q6_K"), ("qwen3", "Q4_0"), ("qwen3", "Q6_K"), ("gemma3", "BF16"), ("gemma3", "Q4_K"),
         ("gemma3", "Q5_K"), ("gemma3", "Q5_0"), ("llama", "Q5_1")]
# Qwen3 and Gemma 3 in shapes transformers' GGUF reader reads as llama.cpp does (tests/test_gemma_qwen3.py): Qwen3's
# head width 128; Gemma's 256 (= query_pre_attn_scalar), its layer pattern 6 and local RoPE base 10,000
ARCH = {"qwen3": dict(head_dim=128), "gemma3": dict(num_attention_heads=2, num_key_value_heads=1, head_dim=256,
                                                    num_hidden_layers=2, sliding_window=4, sliding_window_pattern=6,
                                                    rope_local_base_freq=10000.0, query_pre_attn_scalar=256)}


def test_the_cases_cover_every_supported_type():
    assert {q for _, q in CASES} | {"F32"} == set(SUPPORTED_TYPES)  # F32: tests/test_llama.py


@pytest.mark.parametrize("arch,qtype", CASES, ids=[f"{a}-{q}" for a, q in CASES])
def test_gguf_type_parity_with_transformers(tmp_path, arch, qtype):
    model, _, tok = make_llama(tmp_path / "hf", arch, tie_word_embeddings=arch in ("qwen2", "gemma3"),
                               **{**WIDE, **ARCH.get(arch, {})})
    path = write_gguf(model, tok, tmp_path / f"tiny-{arch}-{qtype}.gguf", arch, qtype)
    ours_file, reader = GGUFFile(path), GGUFReader(path)
    want = GGMLQuantizationType[qtype]
    try:
        matrices = [t for t in reader.tensors if len(t.shape) == 2]
        assert len(matrices) >= 7 * 2 + 1  # 7 per layer and the token table
        for t in reader.tensors:  # every matrix in the type under test, the norms (and qwen2's biases) in F32
            assert t.tensor_type == (want if len(t.shape) == 2 else GGMLQuantizationType.F32), t.name
            ref = dequantize(t.data, t.tensor_type).reshape(ours_file.tensors[t.name].shape)
            got = ours_file.array(t.name)
            assert got.dtype == np.float32 and np.isfinite(got).all(), t.name
            np.testing.assert_array_equal(got, ref, err_msg=t.name)
        emb = ours_file.array("token_embd.weight")
        assert 0.02 < emb.std() < 0.5, emb.std()  # weights of a sensible size, not all zero or huge
    finally:
        ours_file.close()
    ref, _ = reference_from_gguf(path)
    ours = load_gguf(CPU, path)
    c = ours.config
    assert c.has_qkv_bias == (arch == "qwen2") and c.qk_norm == (arch in ("qwen3", "gemma3"))
    assert (c.d_k, c.kv_heads) == {"qwen3": (128, 2), "gemma3": (256, 1)}.get(arch, (64, 2))
    # attention neither uniform nor one-hot on these weights, so that the comparison below says something
    a = ours.trace(TEXT).decoder_self_attention[:, :, 3:]  # rows with 4 keys or more
    uniform = (1 / np.arange(4, a.shape[-1] + 1)).mean()  # each row's largest weight, were the weights uniform
    assert 1.5 * uniform < a.max(-1).mean() < 0.9, (a.max(-1).mean(), uniform)
    parity(ours, ref)


# ---- hostile sizes in the header --------------------------------------------------------------------------------------
def _one_tensor_file(path, alignment: int = 64):
    """A GGUF file of one F32 tensor (4 x 32) with general.alignment set."""
    w = GGUFWriter(str(path), "llama")
    w.add_custom_alignment(alignment)
    w.add_tensor("token_embd.weight", np.arange(128, dtype=np.float32).reshape(4, 32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return bytearray(path.read_bytes())


def _malformed(path, data: bytes, *needles: str) -> None:
    path.write_bytes(bytes(data))
    with pytest.raises(WeightsError) as err:
        load_gguf(CPU, path)
    assert err.value.key == "gguf_malformed", str(err.value)
    for n in needles:
        assert n in str(err.value), str(err.value)


def test_a_size_that_overflows_64_bits_and_an_empty_dimension(tmp_path):
    data = _one_tensor_file(tmp_path / "one.gguf")
    assert GGUFFile(tmp_path / "one.gguf").array("token_embd.weight")[3, 31] == 127  # the file itself is good
    name = b"token_embd.weight"
    dims = data.index(len(name).to_bytes(8, "little") + name) + 8 + len(name) + 4  # after the uint32 count of dims
    assert [int.from_bytes(data[dims + 8 * i:dims + 8 * i + 8], "little") for i in range(2)] == [32, 4]
    # 32 * 2**59 = 2**64 elements: numpy's product wraps to 0 bytes, and the file would have passed as in bounds
    data[dims + 8:dims + 16] = (1 << 59).to_bytes(8, "little")
    _malformed(tmp_path / "huge.gguf", data, "token_embd.weight", "outside the file")
    data[dims + 8:dims + 16] = (0).to_bytes(8, "little")
    _malformed(tmp_path / "empty.gguf", data, "token_embd.weight", "empty dimension")


def test_an_alignment_of_zero(tmp_path):
    data = _one_tensor_file(tmp_path / "one.gguf")
    key = b"general.alignment"
    at = data.index(len(key).to_bytes(8, "little") + key) + 8 + len(key) + 4  # after the value's type (uint32)
    assert int.from_bytes(data[at:at + 4], "little") == 64
    data[at:at + 4] = (0).to_bytes(4, "little")
    _malformed(tmp_path / "align.gguf", data, "general.alignment is 0")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("tiny")
    model, _, tok = make_llama(d / "hf", "llama")
    return write_gguf(model, tok, d / "tiny.gguf", "llama", "F32").read_bytes()


def _set_u32(data: bytes, key: str, value: int) -> bytearray:
    """`data` with the uint32 metadata value of `key` replaced."""
    out, k = bytearray(data), key.encode()
    at = out.index(len(k).to_bytes(8, "little") + k) + 8 + len(k)
    assert int.from_bytes(out[at:at + 4], "little") == 4  # GGUFValueType.UINT32
    out[at + 4:at + 8] = value.to_bytes(4, "little")
    return out


@pytest.mark.parametrize("key,value,needle", [
    ("llama.attention.head_count", 0, "llama.attention.head_count is 0"),  # was a ZeroDivisionError
    ("llama.attention.head_count_kv", 0, "llama.attention.head_count_kv is 0"),
    ("llama.block_count", 0, "llama.block_count is 0"),
])
def test_a_count_of_zero(tiny, tmp_path, key, value, needle):
    _malformed(tmp_path / "zero.gguf", _set_u32(tiny, key, value), needle)


@pytest.mark.parametrize("values,tensor", [
    ({"llama.block_count": 4_000_000_000}, "blk.3999999999.attn_norm.weight"),  # the module would have 4e9 layers
    # 600,000 x 600,000 per layer (in heads of 10, as the file's rope.dimension_count says)
    ({"llama.embedding_length": 600_000, "llama.attention.head_count": 60_000}, "token_embd.weight"),
    ({"llama.feed_forward_length": 3_000_000}, "blk.0.ffn_up.weight"),
], ids=["layers", "width", "ffn"])
def test_sizes_the_file_does_not_hold_are_refused_before_the_module_is_built(tiny, tmp_path, values, tensor,
                                                                              monkeypatch):
    import model.transformer

    monkeypatch.setattr(model.transformer.Transformer, "__init__", lambda *a, **kw: pytest.fail("module built"))
    data = tiny
    for key, value in values.items():
        data = _set_u32(data, key, value)
    path = tmp_path / "big.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(WeightsError) as err:
        load_gguf(CPU, path)
    assert err.value.key in ("gguf_tensor_shape", "hf_tensor_missing") and tensor in str(err.value), str(err.value)


def test_metadata_arrays_nested_too_deep(tmp_path):
    key = b"deep"
    data = b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + (1).to_bytes(8, "little")
    data += len(key).to_bytes(8, "little") + key + (9).to_bytes(4, "little")  # an ARRAY
    data += ((9).to_bytes(4, "little") + (1).to_bytes(8, "little")) * 3000  # of one ARRAY of one ARRAY of ...
    _malformed(tmp_path / "deep.gguf", data, "nested more than")  # was a RecursionError
