"""AttentionTrace save/load (npz without pickle, json) and the command line
`python -m model` (run in a subprocess, as a user would)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model import AttentionTrace
from model.trace import BLOCK_LABELS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "The animal didn't cross the street because it was tired"


def run_cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}  # no OpenMP oversubscription
    return subprocess.run([sys.executable, "-m", "model", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=240)


# ---- trace files ------------------------------------------------------------------------

def test_minilm_npz_round_trip(minilm, tmp_path):
    tr = minilm.trace(DEFAULT, pair="it was wide")
    path = tr.save(tmp_path / "trace.npz")
    with np.load(path, allow_pickle=False) as z:  # no object arrays: loads without pickle
        assert z["tokens"].tolist() == tr.source_tokens
        assert z["tokens"].dtype.kind == "U"
        att = z["encoder_attention"]
        assert att.dtype == np.float32 and att.shape == (6, 12, len(tr.source_tokens), len(tr.source_tokens))
        np.testing.assert_array_equal(att, tr.encoder_attention)
        assert "cross_attention" not in z.files
    back = AttentionTrace.load_npz(path)
    assert back.source_tokens == tr.source_tokens and back.source_ids == tr.source_ids
    assert back.source_special == tr.source_special and back.source_word_ids == tr.source_word_ids
    assert back.source_offsets == tr.source_offsets
    assert back.model == "minilm-l6" and back.text == DEFAULT
    assert back.meta["pair"] == "it was wide" and back.meta["trained"] is True
    np.testing.assert_array_equal(back.encoder_attention, tr.encoder_attention)
    assert back.masks.keys() == tr.masks.keys()
    assert back.blocks == ["encoder"] and not back.is_encoder_decoder
    assert (back.n_layers, back.n_heads) == (6, 12)


def test_paper_base_npz_has_all_blocks(paper_base, tmp_path):
    tr = paper_base.trace("I am good", max_new_tokens=4, intermediates=True)
    path = tr.save_npz(tmp_path / "pb.npz")
    with np.load(path, allow_pickle=False) as z:
        n, t = len(z["source_tokens"]), len(z["target_tokens"])
        assert z["encoder_attention"].shape == (6, 8, n, n)
        assert z["decoder_self_attention"].shape == (6, 8, t, t)
        assert z["cross_attention"].shape == (6, 8, t, n)
        assert z["encoder_hidden_states"].shape == (7, n, 512)
        assert all(z[k].dtype == np.float32 for k in ("encoder_attention", "decoder_self_attention",
                                                      "cross_attention"))
        assert z["tokens"].tolist() == z["source_tokens"].tolist() == tr.source_tokens
        assert z["target_tokens"].tolist() == tr.target_tokens
    back = AttentionTrace.load_npz(path)
    assert back.is_encoder_decoder and back.blocks == ["encoder", "decoder_self", "cross"]
    for block in back.blocks:
        np.testing.assert_array_equal(back.attention(block), tr.attention(block))
        rows, cols = back.axis_tokens(block)
        assert back.attention(block).shape[2:] == (len(rows), len(cols))
        assert block in BLOCK_LABELS
    assert back.target_special == tr.target_special
    np.testing.assert_array_equal(back.masks["decoder_self"], tr.masks["decoder_self"])
    assert back.meta["generated_tokens"] == tr.meta["generated_tokens"]
    np.testing.assert_array_equal(back.decoder_hidden_states, tr.decoder_hidden_states)


def test_json_export(paper_base, minilm, tmp_path):
    for loaded in (minilm, paper_base):
        tr = loaded.trace("I am <b>good</b> 나는", **({"max_new_tokens": 3} if loaded is paper_base else {}))
        path = tr.save(tmp_path / f"{loaded.name}.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        assert data["source_tokens"] == tr.source_tokens
        assert data["text"] == "I am <b>good</b> 나는"
        np.testing.assert_allclose(np.array(data["encoder_attention"]), tr.encoder_attention, atol=1e-6)
        assert data["shape_convention"] == "(layers, heads, query_len, key_len)"
        if loaded is paper_base:
            assert np.array(data["cross_attention"]).shape == tr.cross_attention.shape
            assert data["target_tokens"] == tr.target_tokens


def test_unknown_format_and_missing_block(minilm, tmp_path):
    tr = minilm.trace("I am good")
    with pytest.raises(ValueError, match="npz or .json"):
        tr.save(tmp_path / "trace.csv")
    with pytest.raises(ValueError, match="no 'cross' attention"):
        tr.attention("cross")


def test_trace_of_long_text_says_it_was_truncated(minilm):
    tr = minilm.trace("word " * 700)
    assert tr.truncated and tr.n_tokens_untruncated == 702
    assert len(tr.source_tokens) == 512 and tr.encoder_attention.shape[-1] == 512
    short = minilm.trace("I am good")
    assert not short.truncated and short.n_tokens_untruncated == 5


@pytest.mark.parametrize("bad", ["", "   ", "\n"])
def test_trace_of_empty_text_is_an_input_error(minilm, paper_base, bad):
    from model.errors import InputError

    with pytest.raises(InputError, match="empty"):
        minilm.trace(bad)
    with pytest.raises(InputError, match="empty"):
        paper_base.trace(bad)


def test_unknown_model_lists_known_ones():
    from model import InputError, list_models, load_model

    with pytest.raises(InputError) as err:
        load_model("gpt-17")
    for name in list_models():
        assert name in str(err.value)
    assert {"minilm-l6", "paper-base", "seq2seq-tiny"} <= set(list_models())


# ---- command line -----------------------------------------------------------------------

def test_cli_list():
    from model import list_models

    r = run_cli("--list")
    assert r.returncode == 0
    assert r.stdout.splitlines() == list_models()


def test_cli_writes_npz(tmp_path):
    out = tmp_path / "trace.npz"
    r = run_cli(DEFAULT, "--out", str(out), "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "(6, 12, 14, 14)" in r.stdout
    with np.load(out, allow_pickle=False) as z:
        assert z["encoder_attention"].shape == (6, 12, 14, 14)
        assert z["tokens"][0] == "[CLS]"
        assert json.loads(str(z["meta_json"]))["device"] == "cpu"


def test_cli_from_token_prints_every_layer_and_head():
    r = run_cli(DEFAULT, "--from", "it", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("layer ")]
    assert len(lines) == 72  # 6 layers x 12 heads
    pattern = re.compile(r"^layer (\d) head +(\d+): '(.+)' \(token (\d+)\) (\d\.\d{3})$")
    seen = set()
    for ln in lines:
        m = pattern.match(ln)
        assert m, ln
        seen.add((int(m[1]), int(m[2])))
        assert 0.0 < float(m[5]) <= 1.0
    assert seen == {(la, h) for la in range(6) for h in range(12)}


@pytest.mark.parametrize("args,needle", [
    (["", "--device", "cpu"], "empty"),
    (["hello", "--model", "gpt-17"], "known models: minilm-l6"),
    (["hello", "--from", "zebra", "--device", "cpu"], "not among the tokens"),
    (["hello", "--out", "/nonexistent-dir/x/trace.npz", "--device", "cpu"], "nonexistent-dir"),
    (["hello", "--out", "trace.csv", "--device", "cpu"], "npz or .json"),
    (["hello", "--task", "copy"], "--task is for"),
    (["hello", "--model", "paper-base", "--pair", "world"], "--pair is for encoder models"),
])
def test_cli_bad_input_is_one_line_without_traceback(args, needle, tmp_path):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert needle in err[0]


def test_device_choice(monkeypatch):
    import torch

    from model.device import available_devices, resolve_device
    from model.errors import InputError

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")
    with pytest.raises(InputError, match="choose one of auto, cpu, cuda"):
        resolve_device("gpu")
    monkeypatch.setenv("HEADLIGHT_DEVICE", "cpu")
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv("HEADLIGHT_DEVICE", "tpu<script>")
    with pytest.raises(InputError, match="unknown device"):
        resolve_device(None)
    assert "cpu" in available_devices()
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA GPU"):
            resolve_device("cuda")
        monkeypatch.setenv("HEADLIGHT_DEVICE", "auto")
        assert resolve_device(None) == torch.device("cpu")


@pytest.mark.parametrize("name", [None, 3, "", "MINILM-L6", "minilm-l6 ", "../etc/passwd"])
def test_get_spec_rejects_odd_names(name):
    from model import InputError, get_spec

    with pytest.raises(InputError, match="known models"):
        get_spec(name)
