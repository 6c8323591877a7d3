"""The Training page's lab (issue 36): the schedule equals the paper's formula, the label-smoothed loss equals torch's,
batches follow the tasks, the same seed gives the same run, the command line writes the JSON the issue names, and
the recorded runs shipped in assets/training-lab/ are what the page says they are. Short runs only: the 400-step
targets are bench/bench_training_lab.py's (docs/benchmarks.md)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.data import TASKS, permutation
from model.errors import WeightsError
from training import lab, schedule
from training.lab_files import RECORD_DIR, names, read_model, read_record, write_record
from training.train import lr_at

ROOT = Path(__file__).resolve().parents[1]


# ---- the schedule -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d_model,warmup", [(512, 4000), (64, 100)])
def test_schedule_is_the_papers_formula(d_model, warmup):
    for step in (1, 2, 50, warmup - 1, warmup, warmup + 1, 10 * warmup, 100_000):
        want = d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
        assert schedule.rate(step, d_model, warmup) == pytest.approx(want, rel=1e-15)
        assert schedule.rate(step, d_model, warmup, 2.5) == pytest.approx(2.5 * want, rel=1e-15)
    assert schedule.rate(0, d_model, warmup) == schedule.rate(1, d_model, warmup)  # step 0 is taken as step 1
    assert schedule.peak(d_model, warmup) == pytest.approx(d_model ** -0.5 * warmup ** -0.5, rel=1e-12)
    rates = [schedule.rate(s, d_model, warmup) for s in range(1, 3 * warmup)]
    assert int(np.argmax(rates)) + 1 == warmup  # it peaks at step = warmup


def test_seq2seq_tinys_schedule_is_the_same_formula():
    """training/train.py's lr_at is schedule.rate plus its own cool-down (off here)."""
    for step in (1, 399, 400, 401, 4800):
        assert lr_at(step, 128, 400, 1.0) == schedule.rate(step, 128, 400, 1.0)
    assert schedule.rate(100, 512, 4000) == pytest.approx(512 ** -0.5 * 100 * 4000 ** -1.5)
    assert schedule.ADAM_BETAS == (0.9, 0.98) and schedule.ADAM_EPS == 1e-9


# ---- label smoothing --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.25, 0.5])
def test_smoothed_loss_equals_torchs(eps):
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(37, len(lab.VOCAB), generator=g) * 3
    target = torch.randint(0, len(lab.VOCAB), (37,), generator=g)
    ours = lab.smoothed_cross_entropy(logits, target, eps)
    theirs = F.cross_entropy(logits, target, label_smoothing=eps)
    assert float(ours) == pytest.approx(float(theirs), abs=1e-6)
    # and it is the formula the page writes: (1 - eps) * (-log p_y) + eps * mean_k(-log p_k)
    logp = torch.log_softmax(logits.double(), -1)
    by_hand = ((1 - eps) * -logp[range(37), target] + eps * -logp.mean(-1)).mean()
    assert float(ours) == pytest.approx(float(by_hand), rel=1e-6)  # float32 against float64


def test_the_smoothed_target_is_the_minimiser():
    """Under the smoothed target the best prediction is the target itself, (1 - eps) + eps/V on the label and eps/V on
    every other entry; one-hot wants probability 1."""
    v, eps, y = len(lab.VOCAB), 0.1, 9
    q = torch.full((v,), eps / v)
    q[y] += 1 - eps
    best = lab.smoothed_cross_entropy(torch.log(q)[None], torch.tensor([y]), eps)
    for other in (0.5, 0.8, 0.95, 0.999):
        p = torch.full((v,), (1 - other) / (v - 1))
        p[y] = other
        assert float(lab.smoothed_cross_entropy(torch.log(p)[None], torch.tensor([y]), eps)) > float(best)
    entropy = -(q * torch.log(q)).sum()
    assert float(best) == pytest.approx(float(entropy), abs=1e-6)


# ---- words and batches ---------------------------------------------------------------------------------------------
def test_vocabulary_and_sentences():
    assert len(lab.VOCAB) == lab.LAB_MODEL.vocab_size == 64 and len(set(lab.VOCAB)) == 64
    assert lab.VOCAB[:7] == ("<pad>", "<unk>", "<bos>", "<eos>", "<copy>", "<reverse>", "<swap>")
    assert {"졸리다", "잠이"} <= set(lab.WORDS)
    assert lab.words_of("The small cat, saw a DOG!") == ["the", "small", "cat", "saw", "a", "dog"]
    assert lab.encode("the cat") == [lab.IDS["the"], lab.IDS["cat"]]
    with pytest.raises(lab.UnknownWords) as err:
        lab.encode("the zebra saw a giraffe and the zebra")
    assert err.value.words == ["zebra", "giraffe", "and"]
    for text in ("<eos> cat", "<copy>"):  # a special typed as text is not a word
        with pytest.raises(lab.UnknownWords):
            lab.encode(text)
    with pytest.raises(lab.UnknownWords) as err:
        lab.encode("cat " * 9)
    assert err.value.words == [] and err.value.n_words == 9
    with pytest.raises(lab.UnknownWords):
        lab.encode("   ")
    src, tin, tout = lab.sequences("reverse", lab.encode("i saw a cat"))
    ids = lab.IDS
    assert src == [ids["<reverse>"], ids["i"], ids["saw"], ids["a"], ids["cat"], ids["<eos>"]]
    assert tin == [ids["<bos>"], ids["cat"], ids["a"], ids["saw"], ids["i"]]
    assert tout == [ids["cat"], ids["a"], ids["saw"], ids["i"], ids["<eos>"]]


@pytest.mark.parametrize("task", TASKS)
def test_batches_follow_the_task(task):
    b = lab.make_batch(task, 50, torch.Generator().manual_seed(3))
    ids = lab.IDS
    assert b.src.shape[1] == int(b.lengths.max()) + 2 and b.tgt_in.shape == b.tgt_out.shape
    for i in range(50):
        n = int(b.lengths[i])
        x = b.src[i, 1:n + 1].tolist()
        y = [x[j] for j in permutation(task, n)]
        assert b.src[i, 0] == ids[f"<{task}>"] and b.src[i, n + 1] == ids["<eos>"]
        assert b.tgt_in[i, :n + 1].tolist() == [ids["<bos>"], *y]
        assert b.tgt_out[i, :n + 1].tolist() == [*y, ids["<eos>"]]
        assert (b.src[i, n + 2:] == 0).all() and (b.tgt_out[i, n + 1:] == 0).all()
        assert b.perm[i, :n].tolist() == permutation(task, n)
        assert lab.MIN_LEN <= n <= lab.MAX_LEN and min(x) >= lab.FIRST_WORD
    ev = lab.eval_batch(task)
    assert all(len(set(ev.src[i, 1:int(ev.lengths[i]) + 1].tolist())) == int(ev.lengths[i]) for i in range(20))
    assert torch.equal(ev.src, lab.eval_batch(task).src)  # the same evaluation rows in every run


# ---- runs ------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def short_runs():
    settings = lab.LabSettings(task="swap", steps=12, seed=5, batch_size=16, snapshots=4)
    return settings, lab.train(settings), lab.train(settings)


def test_the_same_seed_gives_the_same_run(short_runs):
    settings, a, b = short_runs
    assert [s.step for s in a.snapshots] == settings.snapshot_steps() == [0, 3, 6, 9, 12]
    for x, y in zip(a.snapshots, b.snapshots):
        assert (x.step, x.loss, x.lr, x.alignment, x.accuracy, x.greedy) == (y.step, y.loss, y.lr, y.alignment,
                                                                              y.accuracy, y.greedy)
        assert np.array_equal(x.cross, y.cross) and np.array_equal(x.encoder, y.encoder)
    assert all(torch.equal(a.state[k], b.state[k]) for k in a.state)
    assert a.check == b.check
    other = lab.train(lab.LabSettings(task="swap", steps=3, seed=6, batch_size=16, snapshots=4))
    assert other.snapshots[0].loss != a.snapshots[0].loss


def test_a_run_in_a_thread_is_not_disturbed_by_the_global_rng(short_runs):
    """Another computation that seeds torch's global RNG between the steps (the page's dropout view) changes
    nothing: each run keeps its own dropout stream."""
    settings, a, _ = short_runs

    def meddle(_snap):
        torch.manual_seed(12345)
        torch.rand(1000)

    c = lab.train(settings, on_snapshot=meddle)
    assert [s.loss for s in c.snapshots] == [s.loss for s in a.snapshots]


def test_snapshots_hold_the_formulas_and_the_maps(short_runs):
    settings, run, _ = short_runs
    for s in run.snapshots:
        assert s.lr == schedule.rate(max(s.step, 1), 64, settings.warmup, settings.lr_factor)
        assert s.cross.shape == (1, 4, 9, 10) and s.encoder.shape == (1, 4, 10, 10)  # the 8-word fixed sentence
        assert np.allclose(s.cross.sum(-1), 1, atol=1e-5) and np.allclose(s.encoder.sum(-1), 1, atol=1e-5)
        assert 0 <= s.alignment <= 1 and 0 <= s.accuracy <= 1 and math.isfinite(s.loss)
    assert run.snapshots[0].loss > 3  # about ln 64 before training
    check = run.check
    loss = F.cross_entropy(torch.tensor(check["logits"]), torch.tensor(check["targets"]), label_smoothing=check["eps"])
    assert float(loss) == pytest.approx(check["loss"], abs=1e-5)
    assert len(check["logits"]) == len(check["targets"]) and len(check["logits"][0]) == 64


class _Attends:
    """A stand-in model whose cross-attention (the last layer, every head) is one-hot on `source(batch)` and whose
    logits are one-hot on the labels."""

    training = False

    def __init__(self, batch, source):
        self.batch, self.source = batch, source

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def __call__(self, src, tgt_in):
        b, n, m = tgt_in.shape[0], tgt_in.shape[1], src.shape[1]
        cross = torch.zeros(b, 4, n, m)
        cross[:, :, :-1].scatter_(3, self.source(self.batch)[:, None, :, None].expand(b, 4, n - 1, 1), 1.0)
        logits = F.one_hot(self.batch.tgt_out, len(lab.VOCAB)).float()
        return SimpleNamespace(decoder=SimpleNamespace(cross_attention=[cross]), logits=logits)


def test_the_alignment_counts_the_rows_on_the_tasks_source_position():
    ev = lab.eval_batch("reverse")
    assert lab.alignment(_Attends(ev, lambda b: b.perm + 1), ev) == (1.0, 1.0)
    diagonal = lambda b: torch.arange(b.perm.shape[1])[None].expand_as(b.perm) + 1  # noqa: E731 - copy's diagonal
    wrong = lab.alignment(_Attends(ev, diagonal), ev)[0]
    # only the middle word of an odd-length row is on the diagonal and the anti-diagonal at once
    words = ev.lengths.sum().item()
    assert wrong == pytest.approx((ev.lengths % 2).sum().item() / words)
    model, _ = lab.build_model(0)
    assert lab.alignment(model, ev)[0] <= 0.5  # untrained


def test_stop_ends_the_run_at_the_current_step():
    calls = []
    run = lab.train(lab.LabSettings(task="copy", steps=50, seed=1, batch_size=8, snapshots=50),
                    stop=lambda: len(calls) >= 3, on_snapshot=calls.append)
    assert run.stopped and run.snapshots[-1].step == 3 and [s.step for s in run.snapshots] == [0, 1, 2, 3]


def test_settings_are_checked():
    with pytest.raises(ValueError, match="unknown task"):
        lab.LabSettings(task="sort")
    with pytest.raises(ValueError):
        lab.LabSettings(steps=0)
    assert lab.LabSettings(steps=400).snapshot_steps() == list(range(0, 401, 10))


# ---- the command line ---------------------------------------------------------------------------------------------
def test_command_line_writes_the_issues_json(tmp_path):
    out = tmp_path / "out.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "training", "lab", "--task", "reverse", "--steps", "60", "--seed", "3",
                        "--json", str(out)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert {"d_model", "warmup", "lr_factor", "label_smoothing", "snapshots", "label_smoothing_check"} <= set(data)
    assert (data["d_model"], data["warmup"], data["lr_factor"], data["label_smoothing"]) == (64, 100, 1.0, 0.1)
    snaps = data["snapshots"]
    assert [s["step"] for s in snaps] == list(range(61)) and len(snaps) >= 40
    for s in snaps:
        assert {"step", "loss", "lr", "alignment"} <= set(s)
        step = max(s["step"], 1)
        assert s["lr"] == pytest.approx(1.0 * 64 ** -0.5 * min(step ** -0.5, step * 100 ** -1.5), rel=1e-12)
        assert 0 <= s["alignment"] <= 1
    assert snaps[0]["alignment"] <= 0.5 and snaps[-1]["loss"] < snaps[0]["loss"]
    check = data["label_smoothing_check"]
    assert set(check) >= {"eps", "logits", "targets", "loss"} and check["eps"] == 0.1
    torch_loss = F.cross_entropy(torch.tensor(check["logits"]), torch.tensor(check["targets"]), label_smoothing=0.1)
    assert float(torch_loss) == pytest.approx(check["loss"], abs=1e-5)
    # the same seed again: the same numbers
    out2 = tmp_path / "again.json"
    subprocess.run([sys.executable, "-m", "training", "lab", "--task", "reverse", "--steps", "60", "--seed", "3",
                    "--json", str(out2)], cwd=ROOT, check=True, capture_output=True, env=env, timeout=600)
    assert json.loads(out2.read_text())["snapshots"] == snaps


def test_command_line_refuses_bad_arguments():
    r = subprocess.run([sys.executable, "-m", "training", "lab", "--task", "sort"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = subprocess.run([sys.executable, "-m", "training", "lab", "--steps", "0"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "at least 1" in r.stderr


# ---- the recorded runs -------------------------------------------------------------------------------------------
def test_a_record_reads_back_as_written(tmp_path, short_runs):
    _, run, _ = short_runs
    paths = write_record(run, tmp_path)
    assert [p.name for p in paths] == list(names("swap"))
    rec = read_record("swap", tmp_path)
    assert [s["step"] for s in rec.snapshots] == [s.step for s in run.snapshots]
    assert np.array_equal(rec.cross, np.stack([s.cross for s in run.snapshots]))
    assert rec.greedy == [list(s.greedy) for s in run.snapshots]
    model = read_model(rec)
    assert all(torch.equal(model.state_dict()[k], run.state[k]) for k in run.state)
    # an altered file is refused, naming the fix
    maps = tmp_path / names("swap")[1]
    maps.write_bytes(maps.read_bytes()[:-1] + b"\0")
    with pytest.raises(WeightsError, match="git checkout -- assets/training-lab"):
        read_record("swap", tmp_path)
    with pytest.raises(WeightsError):
        read_record("copy", tmp_path)  # not recorded there


@pytest.mark.parametrize("task", TASKS)
def test_the_shipped_recorded_runs(task):
    """At least 40 snapshots, a few MB in all, and the run the page describes: the loss falls to a third, the
    alignment rises from at most 0.5 to at least 0.9, and the shipped final weights give the last snapshot's
    alignment again (the curves are the run's own)."""
    rec = read_record(task)
    snaps = rec.snapshots
    assert len(snaps) >= 41 and snaps[0]["step"] == 0 and snaps[-1]["step"] == rec.settings["steps"] == 400
    assert snaps[-1]["loss"] <= snaps[0]["loss"] / 3
    assert snaps[0]["alignment"] <= 0.5 and snaps[-1]["alignment"] >= 0.9
    assert rec.cross.shape[0] == rec.encoder.shape[0] == len(snaps) == len(rec.greedy)
    model = read_model(rec)
    align, acc = lab.alignment(model, lab.eval_batch(task))
    assert align == pytest.approx(snaps[-1]["alignment"], abs=1e-6) and acc == pytest.approx(snaps[-1]["accuracy"],
                                                                                              abs=1e-6)
    cross, enc, greedy = lab.probe(model, task, lab.encode(rec.sentence))
    assert np.allclose(cross, rec.cross[-1], atol=1e-6) and list(greedy) == rec.greedy[-1]
    assert all(s["lr"] == schedule.rate(max(s["step"], 1), 64, 100) for s in snaps)


def test_the_recorded_runs_are_small():
    files = [p for p in RECORD_DIR.iterdir() if p.is_file()]
    assert {p.suffix for p in files} <= {".json", ".safetensors"}  # never a pickle
    assert sum(p.stat().st_size for p in files) <= 4 * 2 ** 20
    assert len(files) == 3 * len(TASKS) + 1
