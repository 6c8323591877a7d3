"""`python -m model generate | attribute | patch` (model/cli_cause.py), run in a subprocess as a user would, on a tiny
random llama folder (--model-dir): the arrays and shapes the issue names, equal to the same computations in process;
the trace command is unchanged beside them; bad input is one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf_support import make_llama

from model.cause.attribution import attribute
from model.cause.generation import Sampling, generate
from model.cause.patching import patch
from model.hf.load import load_local

ROOT = Path(__file__).resolve().parents[1]
CLEAN, CORRUPT = "The cat sat on the", "The dog sat on the"


def cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "model", *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    _, path, _ = make_llama(tmp_path_factory.mktemp("cli") / "tiny-llama", "llama")
    return path, load_local(torch.device("cpu"), path)


def test_generate(folder, tmp_path):
    path, model = folder
    out = tmp_path / "gen.npz"
    r = cli("generate", CLEAN, "--model-dir", str(path), "--max-new", "6", "--temperature", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr
    g = generate(model, CLEAN, 6)
    with np.load(out, allow_pickle=False) as z:
        P = int(z["prompt_len"])
        assert P == len(g.prompt_ids) == 5 and z["sequence_ids"].tolist() == g.ids
        assert z["step_rows"].shape == (6, 2, 6, P + 6) and z["step_rows"].dtype == np.float32
        np.testing.assert_allclose(z["step_rows"], g.step_rows(), rtol=0, atol=1e-6)
        assert z["tokens"].tolist() == g.tokens and z["cache_bytes"].tolist() == [s.cache_bytes for s in g.steps]
    sampled = tmp_path / "s.npz"
    r = cli("generate", CLEAN, "--model-dir", str(path), "--max-new", "6", "--temperature", "1.3", "--top-k", "20",
            "--top-p", "0.9", "--seed", "5", "--out", str(sampled))
    assert r.returncode == 0, r.stderr
    with np.load(sampled, allow_pickle=False) as z:
        assert z["sequence_ids"].tolist() == generate(model, CLEAN, 6, Sampling(1.3, 20, 0.9, 5)).ids


def test_attribute(folder, tmp_path):
    path, model = folder
    out = tmp_path / "attr.npz"
    r = cli("attribute", CLEAN, "--model-dir", str(path), "--target", " mat", "--foil", " park", "--out", str(out))
    assert r.returncode == 0, r.stderr
    a = attribute(model, CLEAN, " mat", " park")
    with np.load(out, allow_pickle=False) as z:
        assert z["source_ids"].tolist() == list(a.ids) and z["head_dla"].shape == (2, 6) and z["mlp_dla"].shape == (2,)
        np.testing.assert_allclose(z["head_dla"], a.head, rtol=0, atol=1e-6)
        parts = z["head_dla"].sum() + z["mlp_dla"].sum() + z["embed_dla"] + z["attn_bias_dla"].sum() + z["bias_dla"]
        assert abs(parts - z["total"]) < 1e-5 and float(z["total"]) == pytest.approx(a.total, abs=1e-6)
        assert int(z["target_id"]) == a.target.id and int(z["foil_id"]) == a.foil.id
    assert "total" in r.stdout


def test_patch_and_its_errors(folder, tmp_path):
    path, model = folder
    out = tmp_path / "patch.npz"
    r = cli("patch", "--clean", CLEAN, "--corrupt", CORRUPT, "--model-dir", str(path), "--target", " mat", "--foil",
            " Paris", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "' Paris' is 5 tokens; its first, 'Ġ'" in r.stderr  # a multi-token answer: its first token, said so
    p = patch(model, CLEAN, CORRUPT, " mat", " Paris", residual=False)
    with np.load(out, allow_pickle=False) as z:
        assert z["head_patch"].shape == (2, 6) and "residual_patch" not in z.files
        np.testing.assert_allclose(z["head_patch"], p.head, rtol=0, atol=1e-6)
        assert z["clean_ids"].tolist() == list(p.clean_ids) and z["corrupt_ids"].tolist() == list(p.corrupt_ids)
        assert float(z["clean_diff"]) == pytest.approx(p.clean_diff) and float(z["corrupt_diff"]) == \
            pytest.approx(p.corrupt_diff)
    r = cli("patch", "--clean", CLEAN, "--corrupt", "The dog sat on the mat", "--model-dir", str(path), "--target",
            " mat", "--foil", " park")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: The clean prompt has 5 tokens and the corrupted one 6: activation patching needs the same number of "
        "tokens (position i of one is position i of the other)."]
    r = cli("attribute", "text", "--model", "minilm-l6")
    assert r.returncode == 2 and "attribute is for decoder-only language models; minilm-l6 is encoder" in r.stderr
    r = cli("generate", "x", "--model-dir", str(path), "--temperature", "-1")
    assert r.returncode == 2 and "Invalid sampling" in r.stderr
    # the trace command is unchanged beside the new ones
    r = cli(CLEAN, "--model-dir", str(path), "--out", str(tmp_path / "t.npz"))
    assert r.returncode == 0 and "decoder_self_attention (2, 6, 5, 5)" in r.stdout
