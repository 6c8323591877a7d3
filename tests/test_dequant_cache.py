"""The dequantised tensors of a GGUF file kept on disk (model/dequant_cache.py, issue 34: the first SmolLM2 load of a
fresh server was mostly dequantising): a later load reads them instead of dequantising, the model's every parameter
the same to the bit; a cache file that changed, lacks a tensor or holds another shape is not used; no cache when it
is turned off."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from gguf_support import make_llama, write_gguf

from model import dequant_cache
from model.gguf import GGUFFile, load_gguf


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setattr(dequant_cache, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.delenv("HEADLIGHT_DEQUANT_CACHE", raising=False)
    model, _, tok = make_llama(tmp_path / "hf")
    return write_gguf(model, tok, tmp_path / "tiny.gguf", "llama", "Q8_0")


def _params(path) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_gguf(torch.device("cpu"), path, "tiny").module.state_dict().items()}


def _written(path) -> None:
    """Wait for the background writer of `path`'s cache."""
    dequant_cache.join()
    assert dequant_cache.cache_path(path).is_file()


def test_a_second_load_reads_the_cache_with_every_parameter_equal(tiny, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_DEQUANT_CACHE", "0")
    plain = _params(tiny)
    assert not dequant_cache.cache_path(tiny).exists()  # turned off: nothing written
    monkeypatch.delenv("HEADLIGHT_DEQUANT_CACHE")
    first = _params(tiny)  # dequantises, then keeps the tensors
    _written(tiny)

    def no_dequantising(self, name):
        raise AssertionError(f"dequantised {name} although the cache holds it")

    monkeypatch.setattr(GGUFFile, "_dequantize", no_dequantising)
    cached = _params(tiny)
    assert plain.keys() == first.keys() == cached.keys()
    for k in plain:
        assert torch.equal(plain[k], first[k]) and torch.equal(plain[k], cached[k]), k


def test_a_changed_or_incomplete_cache_is_not_used(tiny, monkeypatch):
    _params(tiny)
    _written(tiny)
    file = dequant_cache.cache_path(tiny)
    shapes = {n: t.shape for n, t in GGUFFile(tiny).tensors.items()}
    assert dequant_cache.load(tiny, shapes) is not None
    with open(file, "ab") as f:  # another size than the stamp's
        f.write(b"\0")
    assert dequant_cache.load(tiny, shapes) is None
    _params(tiny)  # dequantises again and rewrites it
    _written(tiny)
    assert dequant_cache.load(tiny, shapes) is not None
    assert dequant_cache.load(tiny, {**shapes, "extra.weight": (2, 2)}) is None  # a tensor it lacks
    name = next(iter(shapes))
    assert dequant_cache.load(tiny, {**shapes, name: (1, *shapes[name])}) is None  # another shape
    os.utime(tiny, ns=(1, 1))  # a changed GGUF file: another key, no cache yet
    assert dequant_cache.load(tiny, shapes) is None


def test_an_unwritable_cache_folder_only_means_no_cache(tiny, monkeypatch, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setattr(dequant_cache, "CACHE_ROOT", blocked)
    dequant_cache.save(tiny, {"x": torch.zeros(2).numpy()}, wait=True)  # no error
    assert not dequant_cache.cache_path(tiny).exists()
    assert _params(tiny)  # the model still loads


def test_a_new_key_removes_the_older_files_of_that_name(tiny):
    _params(tiny)
    _written(tiny)
    old = dequant_cache.cache_path(tiny)
    os.utime(tiny, ns=(10**18, 10**18))  # the GGUF file changed: a new key
    _params(tiny)
    _written(tiny)
    new = dequant_cache.cache_path(tiny)
    assert new != old and not old.exists() and not old.with_suffix(".ok").exists()
    assert sorted(p.name for p in new.parent.iterdir()) == sorted([new.name, new.with_suffix(".ok").name])


def test_the_preload_warms_the_declared_caches(monkeypatch):
    """A fresh server's preload, after its models, asks every model that declares disk caches (ModelSpec.warm:
    SmolLM2's dequantised tensors) to prepare them; HEADLIGHT_PRELOAD_MODELS names the models it loads."""
    from model import REGISTRY
    from serve import preload
    from ui import store

    assert [n for n, s in REGISTRY.items() if s.warm is not None] == ["smollm2-135m"]
    calls = []
    monkeypatch.setitem(REGISTRY, "smollm2-135m", dataclasses.replace(REGISTRY["smollm2-135m"],
                                                                      warm=lambda: calls.append(1) or True))
    assert store.warm_model_caches() == ["smollm2-135m"] and calls == [1]
    monkeypatch.setenv("HEADLIGHT_PRELOAD_MODELS", "minilm-l6, smollm2-135m")
    assert preload.models() == ("minilm-l6", "smollm2-135m")
    monkeypatch.delenv("HEADLIGHT_PRELOAD_MODELS")
    assert preload.models() == preload.default_models() == ("minilm-l6", "seq2seq-tiny")


@pytest.mark.slow
def test_warming_smollm2_writes_its_cache_once(tmp_path, monkeypatch):
    from model.loaders import smollm2_path, warm_smollm2_cache

    monkeypatch.setattr(dequant_cache, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.delenv("HEADLIGHT_DEQUANT_CACHE", raising=False)
    assert warm_smollm2_cache() is True
    shapes = {n: t.shape for n, t in GGUFFile(smollm2_path()).tensors.items()}
    kept = dequant_cache.load(smollm2_path(), shapes)
    assert kept is not None and len(kept) == 272 and kept["token_embd.weight"].shape == (49152, 576)
    assert warm_smollm2_cache() is False  # there already
