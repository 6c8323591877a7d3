"""Bad local folders give one clear project error (class, catalogue key, the problem named), never a traceback
from deep inside torch or json; and never an unpickled file."""

from __future__ import annotations

import json
import os

import pytest
import torch
from hf_support import make_bart, make_encoder, make_gpt2
from safetensors.torch import load_file, save_file

from model.errors import InputError, WeightsError
from model.hf.load import load_local

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return make_encoder("bert", tmp_path_factory.mktemp("hf") / "bert")[1]


def copy_dir(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def edit_config(path, **changes):
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


def expect(cls, key, *needles, path):
    with pytest.raises(cls) as err:
        load_local(CPU, path)
    assert err.value.key == key, (err.value.key, str(err.value))
    for needle in needles:
        assert needle in str(err.value), str(err.value)
    return err.value


def test_missing_path_file_and_symlink_loop(tmp_path):
    expect(InputError, "hf_not_found", "does not exist", str(tmp_path / "nope"), path=tmp_path / "nope")
    (tmp_path / "file.txt").write_text("x")
    expect(InputError, "hf_not_dir", "is not a folder", path=tmp_path / "file.txt")
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    expect(InputError, "hf_symlink_loop", "symbolic link loop", path=loop)
    a, b = tmp_path / "a", tmp_path / "b"
    os.symlink(b, a)
    os.symlink(a, b)
    expect(InputError, "hf_symlink_loop", "loop", path=a)


def test_config_missing_not_utf8_invalid_json(bert_dir, tmp_path):
    d = copy_dir(bert_dir, tmp_path / "c")
    (d / "config.json").unlink()
    expect(InputError, "hf_config_missing", "no config.json", path=d)
    (d / "config.json").write_bytes(b'{"model_type": "bert", "name": "\xff\xfe"}')
    expect(InputError, "hf_config_invalid", "not UTF-8", path=d)
    (d / "config.json").write_text('{"model_type": "bert",')
    expect(InputError, "hf_config_invalid", "not valid JSON", "line 1", path=d)
    (d / "config.json").write_text("[1, 2]")
    expect(InputError, "hf_config_invalid", "not a JSON object", path=d)


@pytest.mark.parametrize("changes,needles", [
    ({"model_type": "falcon"}, ["'falcon'", "bert, roberta, xlm-roberta, distilbert, gpt2, llama, mistral, qwen2, "
                                            "qwen3, gemma3_text, gemma3, bart, marian"]),
    ({"model_type": "gemma3"}, []),  # a multimodal Gemma 3 folder without its text_config: hf_config_value below
    ({"model_type": None}, ["model_type None"]),
])
def test_unknown_model_type_names_the_supported_ones(bert_dir, tmp_path, changes, needles):
    d = copy_dir(bert_dir, tmp_path / "t")
    edit_config(d, **changes)
    if changes["model_type"] == "gemma3":
        expect(InputError, "hf_config_value", "'text_config' is missing", path=d)
        return
    expect(InputError, "hf_unsupported_type", *needles, path=d)


@pytest.mark.parametrize("changes,needles", [
    ({"position_embedding_type": "relative_key"}, ["position_embedding_type='relative_key'", "'absolute'"]),
    ({"is_decoder": True}, ["is_decoder=True"]),
    ({"add_cross_attention": True}, ["add_cross_attention=True"]),
    ({"hidden_act": "laplace"}, ["hidden_act='laplace'", "gelu, gelu_python, relu"]),
])
def test_unsupported_bert_options(bert_dir, tmp_path, changes, needles):
    d = copy_dir(bert_dir, tmp_path / "o")
    edit_config(d, **changes)
    expect(InputError, "hf_unsupported_option", *needles, path=d)


@pytest.mark.parametrize("changes,needles", [
    ({"hidden_size": "big"}, ["'hidden_size'", "integer"]),
    ({"num_attention_heads": 7}, ["'num_attention_heads'", "divide the hidden size 30"]),
    ({"layer_norm_eps": -1}, ["'layer_norm_eps'", "positive"]),
])
def test_bad_config_values(bert_dir, tmp_path, changes, needles):
    d = copy_dir(bert_dir, tmp_path / "v")
    edit_config(d, **changes)
    expect(InputError, "hf_config_value", *needles, path=d)


def test_unsupported_gpt2_and_bart_options(tmp_path):
    g = make_gpt2(tmp_path / "g")[1]
    for option in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"):
        d = copy_dir(g, tmp_path / f"g-{option}")
        edit_config(d, **{option: True})
        expect(InputError, "hf_unsupported_option", f"{option}=True", "gpt2", path=d)
    b = make_bart(tmp_path / "b")[1]
    for option in ("add_final_layer_norm", "normalize_before"):
        d = copy_dir(b, tmp_path / f"b-{option}")
        edit_config(d, **{option: True})
        expect(InputError, "hf_unsupported_option", f"{option}=True", "bart", path=d)
    d = copy_dir(b, tmp_path / "b-heads")  # a decoder may have its own head count, if it divides d_model
    edit_config(d, decoder_attention_heads=4)
    expect(InputError, "hf_config_value", "'decoder_attention_heads'", "divide the hidden size 21", path=d)


def test_pickle_only_folder_is_refused_unopened(bert_dir, tmp_path):
    d = copy_dir(bert_dir, tmp_path / "p")
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(b"not even read")
    err = expect(WeightsError, "hf_pickle_only", "pytorch_model.bin", "pickle", "safetensors", path=d)
    assert err.params["file"] == "pytorch_model.bin"
    (d / "pytorch_model.bin").unlink()
    expect(WeightsError, "hf_weights_missing", "no model.safetensors", path=d)


def test_corrupt_safetensors(bert_dir, tmp_path):
    d = copy_dir(bert_dir, tmp_path / "x")
    (d / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}")
    expect(WeightsError, "hf_weights_invalid", "cannot be read as safetensors", path=d)


def test_shape_mismatch_names_the_tensor_and_both_shapes(bert_dir, tmp_path):
    d = copy_dir(bert_dir, tmp_path / "s")
    state = load_file(str(d / "model.safetensors"))
    state["encoder.layer.1.intermediate.dense.weight"] = torch.zeros(36, 30)
    save_file(state, str(d / "model.safetensors"))
    err = expect(WeightsError, "hf_tensor_shape", "encoder.layer.1.intermediate.dense.weight", "(36, 30)",
                 "(37, 30)", path=d)
    assert err.params["found"] == "(36, 30)" and err.params["expected"] == "(37, 30)"
    del state["encoder.layer.1.intermediate.dense.weight"]
    save_file(state, str(d / "model.safetensors"))
    expect(WeightsError, "hf_tensor_missing", "lack the tensor 'encoder.layer.1.intermediate.dense.weight'", path=d)


def test_a_tensor_the_model_does_not_read_is_refused_by_name(bert_dir, tmp_path):
    """Every load is strict: a tensor no table entry reads is an error naming it (it used to be skipped silently);
    what the family declares unread (a task head, the pooler, an old position-id buffer) is not."""
    d = copy_dir(bert_dir, tmp_path / "u")
    state = load_file(str(d / "model.safetensors"))
    plain = load_local(CPU, d).module.state_dict()
    state["encoder.layer.0.attention.self.extra.weight"] = torch.ones(4, 4)
    save_file(state, str(d / "model.safetensors"))
    err = expect(WeightsError, "hf_tensor_unexpected", "1 tensor(s) this model does not read",
                 "'encoder.layer.0.attention.self.extra.weight'", path=d)
    assert err.params["count"] == 1 and err.params["path"] == str(d)
    del state["encoder.layer.0.attention.self.extra.weight"]
    state |= {"pooler.dense.weight": torch.ones(30, 30), "cls.predictions.bias": torch.ones(5),
              "embeddings.position_ids": torch.arange(8)[None]}
    save_file(state, str(d / "model.safetensors"))
    ours = load_local(CPU, d).module.state_dict()
    assert ours.keys() == plain.keys() and all(torch.equal(ours[k], plain[k]) for k in ours)


def test_tokenizer_missing_invalid_and_too_large(bert_dir, tmp_path):
    d = copy_dir(bert_dir, tmp_path / "k")
    (d / "tokenizer.json").unlink()
    expect(InputError, "hf_tokenizer_missing", "no tokenizer.json", path=d)
    (d / "tokenizer.json").write_text("{}")
    expect(InputError, "hf_tokenizer_invalid", "cannot be read as a tokenizer", path=d)
    small = make_encoder("bert", tmp_path / "small", vocab_size=20)[1]
    err = expect(InputError, "hf_vocab_too_large", "only 20 rows", path=small)
    assert err.params["rows"] == 20 and err.params["tokens"] > 20


def test_memory_budget(bert_dir, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_MAX_MODEL_BYTES", "1000")
    expect(WeightsError, "hf_too_large", "more than the limit", "HEADLIGHT_MAX_MODEL_BYTES", path=bert_dir)
    monkeypatch.setenv("HEADLIGHT_MAX_MODEL_BYTES", "lots")
    expect(InputError, "hf_budget_invalid", "'lots'", path=bert_dir)


def test_sharded_checkpoint_loads_and_a_bad_index_is_named(tmp_path):
    hf, _ = make_gpt2(tmp_path / "one")
    sharded = tmp_path / "sharded"
    hf.save_pretrained(str(sharded), safe_serialization=True, max_shard_size="20KB")
    (sharded / "tokenizer.json").write_bytes((tmp_path / "one" / "tokenizer.json").read_bytes())
    assert (sharded / "model.safetensors.index.json").is_file() and not (sharded / "model.safetensors").exists()
    ours, ref = load_local(CPU, sharded), load_local(CPU, tmp_path / "one")
    a, b = ours.trace("The cat sat"), ref.trace("The cat sat")
    assert (a.decoder_self_attention == b.decoder_self_attention).all()
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = "../one/model.safetensors"
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    expect(WeightsError, "hf_shard_missing", "../one/model.safetensors", path=sharded)
    (sharded / "model.safetensors.index.json").write_text("{}")
    expect(WeightsError, "hf_weights_invalid", "not a valid safetensors index", path=sharded)
