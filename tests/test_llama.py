"""The llama family on the one Transformer (RMSNorm, RoPE, grouped-query attention, SwiGLU, Qwen2's Q/K/V biases)
against transformers: tiny random checkpoints with odd shapes (6 query heads on 2 key/value heads, head_dim 10,
theta 5000) as Hugging Face folders and as GGUF files (F32 and Q8_0, written with gguf's own writer, read back by
transformers as the reference), and SmolLM2-135M itself on the installed GGUF. Attentions <= 1e-5, hidden states and
logits <= 1e-4, greedy generation equal; the tokenizer built from GGUF metadata gives transformers' ids."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf_support import make_llama, reference_from_gguf, write_gguf

from model.errors import HeadlightError, WeightsError
from model.gguf import GGUFFile, load_gguf
from model.hf.load import load_local

CPU = torch.device("cpu")
TEXT = "The animal didn't cross the street because it was tired."
ATOL_ATT, ATOL_HID = 1e-5, 1e-4
TEXTS = [TEXT, "the cat sat on the mat", "  two  spaces\tand a tab\n", "numbers 12345 and 3.14",
         "철수는 영희에게 책을 빌려주었다.", "emoji 🍕🔥 and ünïcödé", "def f(x):\n    return x ** 2\n"]


def until_eos(steps, ref) -> list[int]:
    """Our greedy ids up to and including the first end-of-sequence id of transformers' generation config: transformers
    stops there, ours goes on (the page shows what follows)."""
    eos = ref.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    out = []
    for s in steps:
        out.append(s.choice.id)
        if s.choice.id in eos:
            break
    return out


def parity(ours, ref, text: str = TEXT, n_new: int = 6) -> None:
    tr = ours.trace(text, intermediates=True)
    ids = torch.tensor([tr.source_ids])
    with torch.no_grad():
        out = ref(input_ids=ids, output_attentions=True, output_hidden_states=True)
        logits = ours.module(ids).logits
    n = len(out.attentions)
    np.testing.assert_allclose(tr.decoder_self_attention, torch.stack([a[0] for a in out.attentions]).numpy(),
                               atol=ATOL_ATT, rtol=0)
    # transformers' last hidden state is after the final norm; ours are the layers' outputs
    np.testing.assert_allclose(tr.decoder_hidden_states[:n], torch.stack([h[0] for h in out.hidden_states[:n]]).numpy(),
                               atol=ATOL_HID, rtol=0)
    np.testing.assert_allclose(logits.numpy(), out.logits.numpy(), atol=ATOL_HID, rtol=0)
    steps = ours.greedy_continue(text, n_new=n_new)
    with torch.no_grad():
        gen = ref.generate(ids, max_new_tokens=n_new, do_sample=False, num_beams=1, pad_token_id=0,
                           attention_mask=torch.ones_like(ids))
    assert until_eos(steps, ref) == gen[0, ids.shape[1]:].tolist()


@pytest.mark.parametrize("arch,overrides", [
    ("llama", {}),
    ("llama", {"tie_word_embeddings": True, "num_key_value_heads": 6}),
    ("mistral", {"sliding_window": 4096}),
    ("qwen2", {"tie_word_embeddings": True}),
])
def test_hf_folder_parity(tmp_path, arch, overrides):
    ref, path, _ = make_llama(tmp_path / arch, arch, **overrides)
    ref.config._attn_implementation = "eager"
    ours = load_local(CPU, path)
    c = ours.config
    assert (ours.kind, c.norm, c.norm_placement, c.positional, c.gated_ffn, c.activation) == \
        ("decoder", "rmsnorm", "pre", "rotary", True, "silu")
    assert (c.n_heads, c.kv_heads, c.d_k, c.rope_theta) == (6, overrides.get("num_key_value_heads", 2), 10, 5000.0)
    assert c.has_qkv_bias == (arch == "qwen2") and not c.bias
    parity(ours, ref)


@pytest.mark.parametrize("arch,qtype,tied", [("llama", "F32", False), ("llama", "Q8_0", True),
                                             ("qwen2", "Q8_0", False)])
def test_gguf_parity_with_transformers_reading_the_same_file(tmp_path, arch, qtype, tied):
    model, _, tok = make_llama(tmp_path / "hf", arch, tie_word_embeddings=tied)
    path = write_gguf(model, tok, tmp_path / f"tiny-{arch}.gguf", arch, qtype)
    ref, ref_tok = reference_from_gguf(path)
    ours = load_gguf(CPU, path)
    assert ours.config.tie_embeddings == tied and ours.name == f"tiny-{arch}"
    for text in TEXTS:
        assert ours.tokenizer.encode(text).ids == ref_tok(text)["input_ids"], text
    parity(ours, ref)


# one unit of work with test_cause's SmolLM2 test (tests/conftest.py SHARED): one reading of the GGUF per worker
def test_smollm2_against_transformers_on_the_installed_gguf(smollm2_reference):
    """SmolLM2-135M-Instruct: the registry's model against transformers reading the same file."""
    from model import load_model
    from model.loaders import SMOLLM2_FILE, smollm2_path

    path = smollm2_path()
    assert path.name == SMOLLM2_FILE
    ours = load_model("smollm2-135m", "cpu")
    c = ours.config
    assert (c.n_decoder_layers, c.d_model, c.n_heads, c.kv_heads, c.d_ff, c.rope_theta) == (30, 576, 9, 3, 1536,
                                                                                              100000.0)
    ref, ref_tok = smollm2_reference  # transformers reading the same file (tests/conftest.py)
    for text in [*TEXTS, "<|im_start|>user\nhi<|im_end|>", "日本語のテキスト"]:
        assert ours.tokenizer.encode(text).ids == ref_tok(text)["input_ids"], text
    nxt = ours.next_token_distribution("The capital of France is", top_k=3)
    assert nxt[0].token == "ĠParis" and nxt[0].prob > 0.5
    tr = ours.trace(TEXT)
    ids = torch.tensor([tr.source_ids])
    with torch.no_grad():
        out = ref(input_ids=ids, output_attentions=True)
        logits = ours.module(ids).logits
    np.testing.assert_allclose(tr.decoder_self_attention, torch.stack([a[0] for a in out.attentions]).numpy(),
                               atol=ATOL_ATT, rtol=0)
    np.testing.assert_allclose(logits.numpy(), out.logits.numpy(), atol=ATOL_HID, rtol=0)
    steps = ours.greedy_continue(TEXT, n_new=20)
    with torch.no_grad():
        gen = ref.generate(ids, max_new_tokens=20, do_sample=False, num_beams=1, attention_mask=torch.ones_like(ids))
    assert until_eos(steps, ref) == gen[0, ids.shape[1]:].tolist()


# ---- bad files ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    model, _, tok = make_llama(d / "hf", "llama")
    return write_gguf(model, tok, d / "tiny.gguf", "llama", "Q8_0")


def expect(path, key: str, *needles: str) -> HeadlightError:
    with pytest.raises(HeadlightError) as err:
        load_gguf(CPU, path)
    assert err.value.key == key, (err.value.key, str(err.value))
    for n in needles:
        assert n in str(err.value), str(err.value)
    assert "\n" not in str(err.value)
    return err.value


def test_truncated_wrong_magic_and_version(tiny_gguf, tmp_path):
    data = tiny_gguf.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 2])
    expect(tmp_path / "cut.gguf", "gguf_malformed", "truncated")
    (tmp_path / "magic.gguf").write_bytes(b"GGML" + data[4:])
    expect(tmp_path / "magic.gguf", "gguf_malformed", "wrong magic")
    (tmp_path / "version.gguf").write_bytes(data[:4] + (9).to_bytes(4, "little") + data[8:])
    expect(tmp_path / "version.gguf", "gguf_malformed", "version 9")
    (tmp_path / "empty.gguf").write_bytes(b"")
    expect(tmp_path / "empty.gguf", "gguf_malformed")


def test_unknown_tensor_type_and_unsupported_type(tiny_gguf, tmp_path):
    f = GGUFFile(tiny_gguf)
    t = f.tensors["blk.0.ffn_up.weight"]
    data = bytearray(tiny_gguf.read_bytes())
    # the tensor directory entry: name, n_dims, dims, then the type (uint32) and offset (uint64)
    name = t.name.encode()
    at = data.index(len(name).to_bytes(8, "little") + name) + 8 + len(name) + 4 + 8 * len(t.shape)
    assert int.from_bytes(data[at:at + 4], "little") == t.qtype
    data[at:at + 4] = (250).to_bytes(4, "little")
    (tmp_path / "type.gguf").write_bytes(bytes(data))
    expect(tmp_path / "type.gguf", "gguf_malformed", "unknown type 250")
    data[at:at + 4] = (2).to_bytes(4, "little")  # Q4_0 is readable; the sizes no longer fit the file's layout
    (tmp_path / "q4.gguf").write_bytes(bytes(data))
    with pytest.raises(HeadlightError):
        load_gguf(CPU, tmp_path / "q4.gguf")


def test_missing_tokenizer_unsupported_architecture_and_options(tiny_gguf, tmp_path):
    from gguf import GGUFWriter
    from gguf.quants import quant_shape_to_byte_shape

    def rewrite(name: str, drop: tuple[str, ...] = (), set_: dict | None = None):
        """The tiny file with metadata keys dropped or changed."""
        src = GGUFFile(tiny_gguf)
        arch = (set_ or {}).get("general.architecture", src.metadata["general.architecture"])
        w = GGUFWriter(str(tmp_path / name), arch)
        for key, value in {**src.metadata, **(set_ or {})}.items():
            if key in drop or key in ("general.architecture", "GGUF.version"):
                continue
            if isinstance(value, str):
                w.add_string(key, value)
            elif isinstance(value, list):
                w.add_array(key, value)
            elif isinstance(value, np.ndarray):
                w.add_array(key, value.tolist())
            elif isinstance(value, bool):
                w.add_bool(key, value)
            elif isinstance(value, float):
                w.add_float32(key, value)
            else:
                w.add_uint32(key, int(value))
        for t in src.tensors.values():
            raw = np.frombuffer(src._map, dtype=np.uint8, count=t.nbytes, offset=t.offset).copy()
            w.add_tensor(t.name, raw.reshape(quant_shape_to_byte_shape(t.shape, t.qtype)), raw_dtype=t.qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return tmp_path / name

    expect(rewrite("notok.gguf", drop=("tokenizer.ggml.tokens",)), "gguf_no_tokenizer", "no tokenizer")
    expect(rewrite("falcon.gguf", set_={"general.architecture": "falcon"}), "gguf_architecture", "'falcon'")
    expect(rewrite("scaled.gguf", set_={"llama.rope.scaling.type": "yarn"}), "gguf_option", "rope.scaling.type")
    expect(rewrite("window.gguf", set_={"llama.attention.sliding_window": 16}), "gguf_option", "sliding_window")
    expect(rewrite("moe.gguf", set_={"llama.expert_count": 8}), "gguf_option", "expert_count")
    err = expect(rewrite("shape.gguf", set_={"llama.feed_forward_length": 96}), "gguf_tensor_shape", "blk.0.ffn_")
    assert err.params["expected"] == "(96, 60)"


def test_over_the_size_limit(tiny_gguf, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_MAX_MODEL_BYTES", "1000")
    expect(tiny_gguf, "hf_too_large", "HEADLIGHT_MAX_MODEL_BYTES")


def test_gguf_file_as_a_local_model(tiny_gguf, tmp_path):
    """A GGUF file named by whoever starts the app (HEADLIGHT_MODELS, --model-dir) registers as a decoder."""
    from model.hf.specs import folder_spec

    spec = folder_spec(tiny_gguf, taken=("tiny",))
    assert (spec.name, spec.kind) == ("tiny-2", "decoder") and "llama GGUF" in spec.label
    model = spec.load(CPU)
    assert model.kind == "decoder" and model.trace("the cat sat").decoder_self_attention.shape[:2] == (2, 6)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    spec = folder_spec(bad)
    assert "cannot be loaded" in spec.label
    with pytest.raises(WeightsError):
        spec.load(CPU)


def test_a_text_of_control_characters_has_no_tokens_and_says_so():
    """SmolLM2's tokenizer drops control characters and adds no specials: "\\x16" is no token at all (hypothesis found
    it); the message is the one for a text with no tokens, not an empty forward."""
    from model import InputError, load_model

    with pytest.raises(InputError) as err:
        load_model("smollm2-135m", "cpu").encode_source("\x16")
    assert err.value.key == "no_tokens"
