"""Registering local folders (HEADLIGHT_MODELS, --model-dir) and the command line on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hf_support import make_bart, make_encoder, make_gpt2

from model import AttentionTrace
from model.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-cli")
    return {"gpt2": make_gpt2(root / "tiny-gpt2")[1], "bart": make_bart(root / "tiny-bart")[1],
            "bert": make_encoder("bert", root / "tiny-bert")[1], "root": root}


@pytest.fixture
def registry():
    """The registry, restored after the test."""
    from model import registry as reg

    saved = dict(reg.REGISTRY)
    yield reg
    reg.REGISTRY.clear()
    reg.REGISTRY.update(saved)


def run_cli(*args, env=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "model", *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=240)


def test_register_folders_names_kinds_and_collisions(folders, registry, tmp_path):
    other = make_encoder("distilbert", tmp_path / "tiny-gpt2")[1]  # same folder name as the GPT-2 one
    specs = registry.register_local_models(f"{folders['gpt2']}, {folders['bart']},{other},{folders['gpt2']}")
    assert [s.name for s in specs] == ["tiny-gpt2", "tiny-bart", "tiny-gpt2-2", "tiny-gpt2"]
    assert [s.kind for s in specs] == ["decoder", "encoder-decoder", "encoder", "decoder"]
    assert {"tiny-gpt2", "tiny-bart", "tiny-gpt2-2", "minilm-l6"} <= set(registry.list_models())
    model = registry.load_model("tiny-gpt2-2", "cpu")
    assert model.name == "tiny-gpt2-2" and model.kind == "encoder"
    tr = registry.load_model("tiny-bart", "cpu").trace("i am good", max_new_tokens=3)
    assert tr.blocks == ["encoder", "decoder_self", "cross"]


def test_a_bad_folder_registers_and_fails_clearly_on_load(registry, tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{oops")
    spec, = registry.register_local_models(str(tmp_path / "broken"))
    assert "not valid JSON" in spec.description
    with pytest.raises(InputError) as err:
        registry.load_model("broken", "cpu")
    assert err.value.key == "hf_config_invalid"
    spec2, = registry.register_local_models(str(tmp_path / "missing"))
    with pytest.raises(InputError, match="does not exist"):
        registry.load_model(spec2.name, "cpu")


def test_env_var_folders_register_without_transformers(folders):
    """The folders HEADLIGHT_MODELS names are registered when an entry point asks (not at import), and load and
    trace without transformers."""
    code = ("import sys, model; assert 'tiny-gpt2' not in model.list_models(); model.register_local_models(); "
            "m = model.load_model('tiny-gpt2', 'cpu'); t = m.trace('The cat sat', "
            "intermediates=True); print(model.list_models()); print(t.decoder_self_attention.shape); "
            "bad = sorted(k for k in sys.modules if k.split('.')[0] == 'transformers'); assert not bad, bad")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HEADLIGHT_MODELS": f"{folders['gpt2']},{folders['root']}/nope"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "'tiny-gpt2', 'nope'" in r.stdout and "(3, 5, " in r.stdout


def test_cli_gpt2_npz(folders, tmp_path):
    out = tmp_path / "g.npz"
    r = run_cli("The cat sat on the mat.", "--model-dir", str(folders["gpt2"]), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "decoder_self_attention (3, 5, " in r.stdout
    with np.load(out, allow_pickle=False) as z:
        n = len(z["tokens"])
        assert z["decoder_self_attention"].shape == (3, 5, n, n) and z["decoder_self_attention"].dtype == np.float32
        assert z["source_ids"].shape == (n,)
        assert "encoder_attention" not in z.files
        assert json.loads(str(z["meta_json"]))["kind"] == "decoder"
    back = AttentionTrace.load_npz(out)
    assert back.is_decoder_only and back.blocks == ["decoder_self"] and (back.n_layers, back.n_heads) == (3, 5)
    assert back.axis_tokens("decoder_self") == (back.source_tokens, back.source_tokens)


def test_cli_from_token_on_gpt2(folders, registry, capsys):
    from model.__main__ import main

    assert main(["The cat sat", "--model-dir", str(folders["gpt2"]), "--from", "c", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("decoder_self attention from 'Ġc'")  # the byte-level space mark is ignored
    assert len([ln for ln in out.splitlines() if ln.startswith("layer ")]) == 15


def test_cli_bart_target(folders, tmp_path):
    out = tmp_path / "b.npz"
    r = run_cli("The cat sat on the mat", "--model-dir", str(folders["bart"]), "--target", "le chat est sur",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    with np.load(out, allow_pickle=False) as z:
        assert z["target_tokens"].tolist() == ["</s>", "le", "chat", "est", "sur"]
        n, t = len(z["source_tokens"]), len(z["target_tokens"])
        assert z["cross_attention"].shape == (2, 3, t, n)
        assert json.loads(str(z["meta_json"]))["teacher_forced"] is True


@pytest.mark.parametrize("args,needle", [
    (["hi", "--model-dir", "/nonexistent/model"], "does not exist"),
    (["hi", "--model-dir", "BERT", "--target", "x"], "--target is for encoder-decoder"),
    (["hi", "--model-dir", "GPT2", "--pair", "x"], "--pair is for encoder models"),
    (["hi", "--model-dir", "GPT2", "--target", ""], "empty"),
])
def test_cli_errors_are_one_line(folders, registry, capsys, args, needle):
    from model.__main__ import main

    args = [str(folders["bert"]) if a == "BERT" else str(folders["gpt2"]) if a == "GPT2" else a for a in args]
    assert main([*args, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err


def test_decoder_only_trace_json(folders, tmp_path):
    from model.hf.load import load_local

    m = load_local(torch.device("cpu"), folders["gpt2"])
    tr = m.trace("The cat sat", intermediates=True)
    assert tr.decoder_hidden_states.shape == (4, len(tr.source_tokens), 30)
    data = json.loads(tr.save(tmp_path / "g.json").read_text())
    assert np.array(data["decoder_self_attention"]).shape == tr.decoder_self_attention.shape
    assert "encoder_attention" not in data and data["source_tokens"] == tr.source_tokens
