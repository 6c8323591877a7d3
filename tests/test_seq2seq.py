"""seq2seq-tiny: tokenizer and everyday-English coverage, strict and sha256-checked checkpoint, quality on a
sample of the everyday set, unknown characters, CLI trace, training and resume."""

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from model import InputError, WeightsError
from model.data import BRIEF_SENTENCES, MAX_TEXT_TOKENS, SPECIAL_TOKENS, TASK_TOKENS, TASKS, apply_task, permutation
from model.seq2seq import FILES, read_config, unknown_words

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets" / "seq2seq-tiny"
TROPHY = "The trophy didn't fit in the suitcase because it was too big"


def everyday() -> list[str]:
    return [ln.strip() for ln in (ASSETS / "everyday.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]


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


def test_tokenizer_has_specials_and_task_tokens(seq2seq_tiny):
    tok = seq2seq_tiny.tokenizer
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    assert SPECIAL_TOKENS[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert set(TASK_TOKENS.values()) == {"<copy>", "<reverse>", "<swap>"}
    assert 40_000 <= tok.vocab_size <= 60_000  # English and Korean (issue 16)
    assert seq2seq_tiny.config.pad_id == tok.token_to_id("<pad>") == 0
    assert seq2seq_tiny.tokenizer.max_length == MAX_TEXT_TOKENS == read_config()["max_text_tokens"] >= 48


def test_everyday_words_are_single_tokens(seq2seq_tiny):
    """Issue 7: >= 97% of the words of the everyday set are one vocabulary token each."""
    from training.data import word_coverage

    coverage, missing = word_coverage(seq2seq_tiny.tokenizer._tok, everyday())
    assert coverage >= 0.97, (coverage, sorted(set(missing)))
    for word in ("trophy", "suitcase", "grandmother", "morning"):
        assert seq2seq_tiny.tokenizer.encode(word, add_special_tokens=False).tokens == [word]
    assert seq2seq_tiny.encode_source(TROPHY, task="copy").tokens[1:-1] == [
        "the", "trophy", "didn", "'", "t", "fit", "in", "the", "suitcase", "because", "it", "was", "too", "big"]


def test_unknown_characters_become_unk_and_the_task_stays_exact(seq2seq_tiny):
    enc = seq2seq_tiny.encode_source("the cat 안녕하세요 ☃ 🙂 naïve", task="copy")
    assert enc.tokens[0] == "<copy>" and enc.tokens[-1] == "<eos>"
    assert enc.tokens[1:-1] == ["the", "cat", "안녕", "##하세요", "<unk>", "<unk>", "naive"]  # Korean is read
    trace = seq2seq_tiny.trace("Καλημέρα κόσμε", task="reverse")
    assert bracketed(trace.source_tokens) == []  # nothing but <unk> and specials
    assert trace.cross_attention.shape[-1] == len(trace.source_tokens)
    text = "My friend 민준 sent me a 🙂 from Αθήνα yesterday"
    assert seq2seq_tiny.unknown_words(text) == ["🙂", "Αθήνα"]
    for task in TASKS:
        trace = seq2seq_tiny.trace(text, task=task)
        assert trace.meta["unknown_words"] == ["🙂", "Αθήνα"]
        assert trace.meta["generated_tokens"] == [*apply_task(task, trace.source_tokens[1:-1]), "<eos>"], task
    assert unknown_words("plain words", seq2seq_tiny.encode_source("plain words")) == []


def test_no_profanity_in_the_vocabulary_and_typed_profanity_is_still_copied(seq2seq_tiny):
    """The top-5 and logit-lens views show low-ranked entries: profanities and slurs are not vocabulary entries
    (their ids are <unusedN>), and typed they become pieces that the tasks move like any other token."""
    from training.data import BLOCKED

    vocab = seq2seq_tiny.tokenizer._tok.get_vocab()
    assert not BLOCKED & set(vocab)
    assert sum(t.startswith("<unused") for t in vocab) == 28
    text = "What the fuck is this shit"
    assert "fuck" not in seq2seq_tiny.encode_source(text).tokens
    for task in TASKS:
        trace = seq2seq_tiny.trace(text, task=task)
        assert trace.meta["generated_tokens"] == [*apply_task(task, trace.source_tokens[1:-1]), "<eos>"], task
        assert not any(t.startswith("<unused") for t in trace.meta["generated_tokens"])


def test_typed_special_tokens_are_plain_text(seq2seq_tiny):
    enc = seq2seq_tiny.encode_source("<eos> <reverse> <script>alert(1)</script>", task="copy")
    assert enc.tokens.count("<eos>") == 1 and enc.tokens[-1] == "<eos>"
    assert "<reverse>" not in enc.tokens and "script" in enc.tokens


def test_bad_task_and_empty_text(seq2seq_tiny):
    with pytest.raises(InputError, match="copy, reverse, swap"):
        seq2seq_tiny.trace("I am good", task="sort")
    for text in ("", "   \n\t"):
        with pytest.raises(InputError):
            seq2seq_tiny.trace(text, task="copy")


def test_long_text_is_truncated(seq2seq_tiny):
    text = " ".join(["the street was wide"] * 40)
    trace = seq2seq_tiny.trace(text, task="copy")
    assert trace.truncated and trace.n_tokens_untruncated > len(trace.source_tokens)
    assert len(trace.source_tokens) == MAX_TEXT_TOKENS + 2
    assert len(trace.target_tokens) <= seq2seq_tiny.config.max_positions
    # exact at the limit on ordinary text (a paragraph of the everyday set, cut at 60 tokens), on every task.
    # A periodic text ("the street was wide" x 15, "the" x 60) is the known hard case at the limit: one token too
    # many or too few on one task or another, with the earlier checkpoint as with this one (README, Limits).
    for task in TASKS:
        trace = seq2seq_tiny.trace(" ".join(everyday()[:12]), task=task)
        assert trace.truncated and len(trace.source_tokens) == MAX_TEXT_TOKENS + 2
        assert trace.meta["generated_tokens"] == [*apply_task(task, trace.source_tokens[1:-1]), "<eos>"], task


def _copy_assets(dst: Path, manifest: bool = True) -> None:
    from model.weights import SEQ2SEQ_TINY_SHA256

    for name in FILES:
        shutil.copyfile(ASSETS / name, dst / name)
    if manifest:
        (dst / "sha256.json").write_text(json.dumps(SEQ2SEQ_TINY_SHA256))


def _flip_one_bit(path: Path, byte: int) -> None:
    data = bytearray(path.read_bytes())
    data[byte % len(data)] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", FILES)
def test_one_flipped_bit_is_refused(tmp_path, monkeypatch, name):
    """Issue 7: every shipped file is sha256-checked at load, with an error naming the fix."""
    import model.seq2seq as s2s

    _copy_assets(tmp_path, manifest=False)
    _flip_one_bit(tmp_path / name, 40_000 if name == "model.safetensors" else 100)
    monkeypatch.setattr(s2s, "ASSET_DIR", tmp_path)  # the pinned digests apply to the shipped directory
    with pytest.raises(WeightsError, match=rf"{name} is altered or corrupt.*Fix: git checkout -- assets/seq2seq-tiny"):
        s2s.load_seq2seq_tiny(torch.device("cpu"))
    with pytest.raises(WeightsError, match="Fix: git checkout -- assets/seq2seq-tiny"):  # what the app and the CLI call
        s2s.load_seq2seq_tiny(torch.device("cpu"), tmp_path)


def test_assets_are_small_pinned_and_load_strictly(tmp_path):
    from safetensors.torch import load_file, save_file

    from model.seq2seq import load_seq2seq_tiny
    from model.weights import SEQ2SEQ_TINY_SHA256, sha256_file

    files = {p.name: p.stat().st_size for p in ASSETS.iterdir() if p.is_file()}
    assert set(FILES) <= set(files) and "corpus.txt" not in files
    assert sum(files.values()) <= 20 * 1024 * 1024  # the fixed float16 embedding of 51,576 entries is 13 MB
    assert {n: sha256_file(ASSETS / n) for n in FILES} == SEQ2SEQ_TINY_SHA256
    cfg = read_config()
    assert cfg["transformer"]["positional"] == "sinusoidal" and cfg["transformer"]["activation"] == "relu"
    assert cfg["transformer"]["dropout"] == 0.1 and cfg["training"]["label_smoothing"] == 0.1
    # another directory is checked against its own sha256.json (written by training); none: refused
    _copy_assets(tmp_path, manifest=False)
    with pytest.raises(WeightsError, match="sha256.json"):
        load_seq2seq_tiny(torch.device("cpu"), tmp_path)
    # strict: a checkpoint missing one tensor (digest updated) is refused with a message naming it
    tensors = load_file(str(ASSETS / "model.safetensors"))
    del tensors[sorted(tensors)[3]]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    digests = {n: sha256_file(tmp_path / n) for n in FILES}
    (tmp_path / "sha256.json").write_text(json.dumps(digests))
    with pytest.raises(WeightsError, match="missing"):
        load_seq2seq_tiny(torch.device("cpu"), tmp_path)


def test_brief_and_trophy_sentences_decode_correctly(seq2seq_tiny):
    for text in [*BRIEF_SENTENCES, TROPHY]:
        for task in TASKS:
            trace = seq2seq_tiny.trace(text, task=task)
            src = trace.source_tokens[1:-1]
            assert trace.meta["generated_tokens"] == [*apply_task(task, src), "<eos>"], (text, task)


def test_trace_is_a_normal_attention_trace(seq2seq_tiny):
    trace = seq2seq_tiny.trace("A dog ate the food because it was hungry", task="reverse", intermediates=True)
    assert trace.blocks == ["encoder", "decoder_self", "cross"]
    assert trace.source_tokens[0] == "<reverse>" and trace.target_tokens[0] == "<bos>"
    L, H = seq2seq_tiny.config.n_decoder_layers, seq2seq_tiny.config.n_heads
    T, N = len(trace.target_tokens), len(trace.source_tokens)
    assert trace.cross_attention.shape == (L, H, T, N)
    assert trace.decoder_self_attention.shape == (L, H, T, T)
    for block in trace.blocks:
        np.testing.assert_allclose(trace.attention(block).sum(-1), 1.0, atol=1e-5)
    upper = np.triu(np.ones((T, T), dtype=bool), 1)
    assert np.all(trace.decoder_self_attention[..., upper] == 0.0)
    assert trace.meta["task"] == "reverse" and trace.meta["unknown_words"] == []
    assert trace.meta["generated_tokens"] == [*trace.source_tokens[1:-1][::-1], "<eos>"]
    assert trace.target_tokens == ["<bos>", *trace.meta["generated_tokens"][:-1]]
    assert trace.decoder_hidden_states.shape[0] == L + 1


def test_quality_on_everyday_sample(seq2seq_tiny):
    """Issue 7: 200 sentences of the everyday set (written by hand; none from the vocabulary's source):
    exact match >= 97% (copy) / 95% (reverse, swap), alignment >= 95%."""
    from training.evaluate import evaluate_loaded

    texts = random.Random(0).sample(everyday(), 200)
    results = evaluate_loaded(seq2seq_tiny, texts)
    for task, floor in {"copy": 0.97, "reverse": 0.95, "swap": 0.95}.items():
        r = results[task]
        assert r.exact >= floor, (task, r.exact)
        assert r.alignment >= 0.95, (task, r.alignment)


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
    """A few steps of the tiny preset; stopping after 2 and resuming gives the same weights as 4 straight,
    and the checkpoint it writes loads (checked against its sha256.json)."""
    from safetensors.torch import load_file

    from model.seq2seq import load_seq2seq_tiny
    from training import train

    common = ["--preset", "tiny", "--stream", "300", "--tokens", "64", "--negatives", "16", "--eval-every", "100",
              "--save-every", "1", "--device", "cpu", "--no-progress", "--threads", "1"]
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
    assert load_seq2seq_tiny(torch.device("cpu"), tmp_path / "oa").trace("I am sam", task="swap").cross_attention.ndim == 4
    assert train.main([*common, "--resume", "--run-dir", str(tmp_path / "nothing")]) == 2


def test_greedy_steps_match_the_one_pass_trace(seq2seq_tiny):
    """Decoding step by step (each output fed back in) sees exactly the rows of the one-pass trace."""
    from analysis.decoding import greedy_run, teacher_forced_run

    text = "I am sam"
    run = greedy_run(seq2seq_tiny, text, "swap")
    trace = seq2seq_tiny.trace(text, task="swap")
    assert run.output_tokens == trace.meta["generated_tokens"]
    for t, step in enumerate(run.steps[: len(trace.target_tokens)]):
        np.testing.assert_allclose(step.cross_row, trace.cross_attention[:, :, t], atol=1e-5)
        np.testing.assert_allclose(step.self_attention[:, :, -1], trace.decoder_self_attention[:, :, t, : t + 1],
                                   atol=1e-5)
        assert step.top_tokens[0] == step.chosen
    forced = teacher_forced_run(seq2seq_tiny, text, "swap")
    assert forced.output_tokens == forced.expected == ["am", "i", "sam", "<eos>"]


def test_a_tokenizer_that_is_not_the_checkpoints_is_refused(tmp_path):
    """The source declares that its tokenizer's entries are the embedding's rows (build checks it): another
    tokenizer.json (MiniLM's 30,522 WordPiece entries, digest updated) is refused with both sizes named."""
    from model.seq2seq import seq2seq_source
    from model.source import build
    from model.weights import minilm_dir, sha256_file

    _copy_assets(tmp_path, manifest=False)
    (tmp_path / "tokenizer.json").write_bytes((minilm_dir() / "tokenizer.json").read_bytes())
    (tmp_path / "sha256.json").write_text(json.dumps({n: sha256_file(tmp_path / n) for n in FILES}))
    with pytest.raises(WeightsError) as err:
        build(seq2seq_source(tmp_path), torch.device("cpu"))
    assert err.value.key == "checkpoint_vocab" and err.value.params["tokens"] == 30522
    assert err.value.params["model"] == 51576 and "Fix: python -m training.train --out DIR" in str(err.value)
