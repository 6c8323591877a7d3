"""seq2seq-tiny: tokenizer, strict checkpoint, quality bar on held-out inputs, CLI trace, training and resume."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from model import InputError, WeightsError, load_model
from model.data import BRIEF_SENTENCES, SPECIAL_TOKENS, TASK_TOKENS, TASKS, SentenceSampler, apply_task, permutation
from model.seq2seq import MAX_TEXT_TOKENS, read_config

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets" / "seq2seq-tiny"


@pytest.fixture(scope="module")
def tiny():
    return load_model("seq2seq-tiny", "cpu")


def bracketed(tokens):
    return [t for t in tokens if not (t.startswith("<") and t.endswith(">") and len(t) > 2)]


def test_permutations():
    assert permutation("copy", 4) == [0, 1, 2, 3]
    assert permutation("reverse", 4) == [3, 2, 1, 0]
    assert permutation("swap", 5) == [1, 0, 3, 2, 4]
    for task in TASKS:
        for n in range(1, 30):
            assert sorted(permutation(task, n)) == list(range(n))
    with pytest.raises(ValueError, match="known tasks"):
        permutation("sort", 3)


def test_tokenizer_has_specials_and_task_tokens(tiny):
    tok = tiny.tokenizer
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    assert SPECIAL_TOKENS[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert set(TASK_TOKENS.values()) == {"<copy>", "<reverse>", "<swap>"}
    assert 2000 <= tok.vocab_size <= 5000
    assert tiny.config.pad_id == tok.token_to_id("<pad>") == 0


def test_unknown_characters_become_unk(tiny):
    enc = tiny.encode_source("the cat 안녕하세요 ☃ 🙂 naïve", task="copy")
    assert enc.tokens[0] == "<copy>" and enc.tokens[-1] == "<eos>"
    assert "<unk>" in enc.tokens
    trace = tiny.trace("안녕하세요 세계", task="reverse")
    assert bracketed(trace.source_tokens) == []  # nothing but <unk> pieces and specials
    assert trace.cross_attention.shape[-1] == len(trace.source_tokens)


def test_typed_special_tokens_are_plain_text(tiny):
    enc = tiny.encode_source("<eos> <reverse> <script>alert(1)</script>", task="copy")
    assert enc.tokens.count("<eos>") == 1 and enc.tokens[-1] == "<eos>"
    assert "<reverse>" not in enc.tokens and "script" in enc.tokens


def test_bad_task_and_empty_text(tiny):
    with pytest.raises(InputError, match="copy, reverse, swap"):
        tiny.trace("I am good", task="sort")
    for text in ("", "   \n\t"):
        with pytest.raises(InputError):
            tiny.trace(text, task="copy")


def test_long_text_is_truncated(tiny):
    text = " ".join(["the street was wide"] * 40)
    trace = tiny.trace(text, task="copy")
    assert trace.truncated and trace.n_tokens_untruncated > len(trace.source_tokens)
    assert len(trace.source_tokens) == MAX_TEXT_TOKENS + 2 == read_config()["max_text_tokens"] + 2
    assert len(trace.target_tokens) <= tiny.config.max_positions


def test_assets_are_small_and_load_strictly(tmp_path):
    files = {p.name: p.stat().st_size for p in ASSETS.iterdir() if p.is_file()}
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert name in files
    assert sum(files.values()) <= 20 * 1024 * 1024
    cfg = read_config()
    assert cfg["transformer"]["positional"] == "sinusoidal" and cfg["transformer"]["activation"] == "relu"
    assert cfg["transformer"]["dropout"] == 0.1 and cfg["training"]["label_smoothing"] == 0.1
    # strict: a checkpoint missing one tensor is refused with a message naming it
    from safetensors.torch import load_file, save_file

    from model.seq2seq import load_seq2seq_tiny

    tensors = load_file(str(ASSETS / "model.safetensors"))
    dropped = sorted(tensors)[3]
    del tensors[dropped]
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((ASSETS / name).read_bytes())
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(WeightsError, match="missing"):
        load_seq2seq_tiny(torch.device("cpu"), tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(WeightsError):
        load_seq2seq_tiny(torch.device("cpu"), tmp_path)


def test_brief_sentences_decode_correctly(tiny):
    for text in BRIEF_SENTENCES:
        for task in TASKS:
            trace = tiny.trace(text, task=task)
            src = trace.source_tokens[1:-1]
            assert trace.meta["generated_tokens"] == [*apply_task(task, src), "<eos>"], (text, task)


def test_trace_is_a_normal_attention_trace(tiny):
    trace = tiny.trace("A dog ate the food because it was hungry", task="reverse", intermediates=True)
    assert trace.blocks == ["encoder", "decoder_self", "cross"]
    assert trace.source_tokens[0] == "<reverse>" and trace.target_tokens[0] == "<bos>"
    L, H = tiny.config.n_decoder_layers, tiny.config.n_heads
    T, N = len(trace.target_tokens), len(trace.source_tokens)
    assert trace.cross_attention.shape == (L, H, T, N)
    assert trace.decoder_self_attention.shape == (L, H, T, T)
    for block in trace.blocks:
        np.testing.assert_allclose(trace.attention(block).sum(-1), 1.0, atol=1e-5)
    upper = np.triu(np.ones((T, T), dtype=bool), 1)
    assert np.all(trace.decoder_self_attention[..., upper] == 0.0)
    assert trace.meta["task"] == "reverse"
    assert trace.meta["generated_tokens"] == [*trace.source_tokens[1:-1][::-1], "<eos>"]  # pieces too: ##gry hun
    assert trace.target_tokens == ["<bos>", *trace.meta["generated_tokens"][:-1]]
    assert trace.decoder_hidden_states.shape[0] == L + 1


def test_quality_on_heldout_inputs(tiny):
    """200 held-out inputs per task (none in the training pool): exact match >= 95%, alignment >= 90%."""
    from model.evaluate import evaluate_loaded
    from model.train import TRAIN_POOL

    sampler = SentenceSampler()
    train = {s.lower() for s in sampler.sentences(0, TRAIN_POOL)}
    from model.data import heldout_sentences

    texts = heldout_sentences(sampler, list(train), 200)
    assert len(texts) == 200 and not {t.lower() for t in texts} & train
    assert all(3 <= len(t.split()) <= 24 for t in texts)
    results = evaluate_loaded(tiny, texts)
    for task, r in results.items():
        assert r.exact >= 0.95, (task, r.exact)
        if task in ("copy", "reverse"):
            assert r.alignment >= 0.90, (task, r.alignment)


def test_cli_writes_trace_with_bracketed_tokens(tmp_path):
    out = tmp_path / "x.npz"
    text = "The animal didn't cross the street because it was tired"
    res = subprocess.run([sys.executable, "-m", "model", text, "--model", "seq2seq-tiny", "--task", "reverse",
                          "--out", str(out), "--device", "cpu"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "output: tired was it because street the cross" in res.stdout
    with np.load(out, allow_pickle=False) as z:
        for key in ("encoder_attention", "decoder_self_attention", "cross_attention", "source_tokens",
                    "target_tokens"):
            assert key in z.files
        src, tgt = [str(t) for t in z["source_tokens"]], [str(t) for t in z["target_tokens"]]
        assert src[0] == "<reverse>" and src[-1] == "<eos>" and tgt[0] == "<bos>"
        assert bracketed(tgt) == bracketed(src)[::-1]
        assert z["cross_attention"].shape[2:] == (len(tgt), len(src))
        assert z["encoder_attention"].shape[2:] == (len(src), len(src))


def test_training_step_and_exact_resume(tmp_path):
    """A few steps of the tiny preset; stopping after 2 and resuming gives the same weights as 4 straight."""
    from safetensors.torch import load_file

    from model import train

    common = ["--preset", "tiny", "--pool", "300", "--batch-size", "8", "--eval-every", "100", "--save-every", "1",
              "--device", "cpu", "--no-progress", "--threads", "1"]
    assert train.main([*common, "--steps", "4", "--run-dir", str(tmp_path / "a"), "--out", str(tmp_path / "oa")]) == 0
    assert train.main([*common, "--steps", "2", "--run-dir", str(tmp_path / "b"), "--out", str(tmp_path / "ob")]) == 0
    assert json.loads((tmp_path / "b" / "state.json").read_text())["step"] == 2
    assert train.main([*common, "--steps", "4", "--resume", "--run-dir", str(tmp_path / "b"),
                       "--out", str(tmp_path / "ob")]) == 0
    a, b = load_file(str(tmp_path / "oa" / "model.safetensors")), load_file(str(tmp_path / "ob" / "model.safetensors"))
    assert a.keys() == b.keys()
    start = load_file(str(tmp_path / "b" / "state.safetensors"))
    assert json.loads((tmp_path / "b" / "state.json").read_text())["step"] == 4
    assert any(k.startswith("adam.") for k in start)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)
    cfg = json.loads((tmp_path / "oa" / "config.json").read_text())
    assert cfg["training"]["steps"] == 4 and cfg["transformer"]["d_model"] == 16
    assert train.main([*common, "--resume", "--run-dir", str(tmp_path / "nothing")]) == 2


def test_greedy_steps_match_the_one_pass_trace(tiny):
    """Decoding step by step (each output fed back in) sees exactly the rows of the one-pass trace."""
    from viz.seq2seq import greedy_run, teacher_forced_run

    text = "I am sam"
    run = greedy_run(tiny, text, "swap")
    trace = tiny.trace(text, task="swap")
    assert run.output_tokens == trace.meta["generated_tokens"]
    for t, step in enumerate(run.steps[: len(trace.target_tokens)]):
        np.testing.assert_allclose(step.cross_row, trace.cross_attention[:, :, t], atol=1e-5)
        np.testing.assert_allclose(step.self_attention[:, :, -1], trace.decoder_self_attention[:, :, t, : t + 1],
                                   atol=1e-5)
        assert step.top_tokens[0] == step.chosen
    forced = teacher_forced_run(tiny, text, "swap")
    assert forced.output_tokens == forced.expected == ["am", "i", "sam", "<eos>"]
