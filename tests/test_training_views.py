"""The Training page's numbers (analysis/training.py) and its live run (analysis/training_live.py): the schedule
curves, label smoothing against torch, teacher forcing's shifted target and mask, dropout's dropped cells read from
the model's own forward, a recorded run as the page draws it, and the live runner's bounds (one at a time, a stop,
a time limit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis import training as an
from analysis import training_live as live
from training import lab, schedule


@pytest.fixture(scope="module")
def trained():
    return an.recorded_model("reverse")


def test_schedule_curve_is_the_formula():
    c = an.schedule_curve(512, 4000, 20_000)
    assert c.steps[0] == 1 and c.steps[-1] == 20_000 and 4000 in c.steps
    assert np.allclose(c.rate, [512 ** -0.5 * min(s ** -0.5, s * 4000 ** -1.5) for s in c.steps], rtol=1e-12)
    assert c.peak_rate == pytest.approx(c.rate.max()) and c.rate[list(c.steps).index(4000)] == c.peak_rate
    assert not c.rate.flags.writeable


def test_recorded_run_view():
    run = an.recorded_run("copy")
    assert run.source == ("<copy>", *lab.FIXED_SENTENCE.split(), "<eos>")
    assert run.decoder_input == ("<bos>", *lab.FIXED_SENTENCE.split()) and run.target == tuple(lab.FIXED_SENTENCE.split())
    assert run.right == tuple(range(1, 9))  # copy: the diagonal, one past <copy>
    assert an.recorded_run("reverse").right == tuple(range(8, 0, -1))  # reverse: the anti-diagonal
    assert run.index(400) == len(run.steps) - 1 and run.index(0) == 0
    with pytest.raises(ValueError):
        run.index(401)
    assert run.cross.shape == (41, 1, 4, 9, 10) and run.greedy[-1] == run.target
    first = run.cross[0, -1].mean(0)[:-1]  # (8, 10): the untrained model's attention is spread out
    assert first.max() < 0.5
    assert run.alignment[-1] >= 0.9 >= 0.5 >= run.alignment[0]


def test_smoothing_over_the_real_vocabulary(trained):
    sm = an.smoothing(trained, "reverse", 0, 0.1)
    v = len(lab.VOCAB)
    assert sm.word == "today" and sm.labels[0] == "today" and sm.vocab_size == v == 64
    assert sm.rest == v - len(sm.labels) and len(sm.onehot) == len(sm.labels) + 1
    assert sm.onehot.sum() == pytest.approx(1) and sm.smoothed.sum() == pytest.approx(1)
    assert sm.smoothed[0] == pytest.approx(0.9 + 0.1 / v) and sm.smoothed[-1] == pytest.approx(sm.rest * 0.1 / v)
    assert sm.model.sum() == pytest.approx(1)
    rows = {r.name: r for r in sm.rows}
    for r in (*sm.rows, *sm.two):
        assert r.smoothed == pytest.approx(r.torch, abs=1e-5)  # the lab's loss is torch's
    assert rows["confident"].onehot < rows["hedged"].onehot  # one-hot prefers certainty ...
    assert rows["hedged"].smoothed < rows["confident"].smoothed  # ... smoothing prefers the hedge
    assert rows["confident"].p_right == pytest.approx(0.999) and rows["hedged"].p_right == pytest.approx(0.9 + 0.1 / v)
    two = {r.name: r for r in sm.two}
    assert two["on_first"].onehot < two["split"].onehot < two["on_second"].onehot
    assert sm.two_other[1] < sm.two_other[0]  # against "잠이", all on "잠이" beats all on "졸리다"
    assert sm.best_gap == pytest.approx(np.log((0.9 + 0.1 / v) / (0.1 / v)))
    assert an.smoothing(trained, "reverse", 99, 0.1).position == 8  # clamped to the <eos> position


def test_teacher_forcing_shifts_the_target(trained):
    tf = an.teacher_forcing(trained, "reverse", "I saw a cat", seed=0)
    assert tf.source == ("<reverse>", "i", "saw", "a", "cat", "<eos>")
    assert tf.decoder_input == ("<bos>", "cat", "a", "saw", "i") and tf.labels == ("cat", "a", "saw", "i", "<eos>")
    assert tf.decoder_input[1:] == tf.labels[:-1]  # the labels, shifted one place to the right
    assert np.array_equal(tf.mask, np.tril(np.ones((5, 5), bool)))
    for s in (tf.untrained, tf.trained):
        assert s.probs.shape == (5, 5) and set(s.columns) == {"cat", "a", "saw", "i", "<eos>"}
        assert s.mean_loss == pytest.approx(float(np.mean(s.loss)), rel=1e-5)
    assert tf.trained.mean_loss < tf.untrained.mean_loss / 2 and tf.trained.argmax == tf.labels
    with pytest.raises(lab.UnknownWords):
        an.teacher_forcing(trained, "copy", "a zebra", seed=0)


@pytest.mark.parametrize("block", an.BLOCKS)
def test_dropout_marks_the_cells_it_dropped(trained, block):
    d = an.dropout_view(trained, "copy", lab.FIXED_SENTENCE, seed=4, block=block, layer=0, head=1)
    assert d.p == 0.1 and d.train.shape == d.eval.shape == d.allowed.shape
    assert d.dropped.any() and (d.train[d.dropped] == 0).all() and (d.eval[d.allowed] > 0).all()
    assert not (d.dropped & ~d.allowed).any() and (d.eval[~d.allowed] == 0).all()
    assert np.allclose(d.eval.sum(-1), 1, atol=1e-5)
    again = an.dropout_view(trained, "copy", lab.FIXED_SENTENCE, seed=4, block=block, layer=0, head=1)
    assert np.array_equal(again.train, d.train) and np.array_equal(again.dropped, d.dropped)
    other = an.dropout_view(trained, "copy", lab.FIXED_SENTENCE, seed=5, block=block, layer=0, head=1)
    assert not np.array_equal(other.dropped, d.dropped) and np.array_equal(other.eval, d.eval)
    assert not trained.training  # the shared model stays in eval mode
    if block == "decoder_self":
        assert np.array_equal(d.allowed, np.tril(np.ones_like(d.allowed)))


def test_dropout_view_refuses_unknown_blocks(trained):
    with pytest.raises(ValueError, match="unknown block"):
        an.dropout_view(trained, "copy", "the cat", seed=0, block="ffn")


# ---- the live run ----------------------------------------------------------------------------------------------
def _settings(steps=400):
    return lab.LabSettings(task="copy", steps=steps, seed=2, batch_size=8, snapshots=steps)


def test_live_run_finishes_and_matches_the_lab():
    runner = live.LiveRunner()
    run = runner.start(_settings(6))
    run.join(120)
    status = run.status()
    assert status.state == "done" and status.step == 6 and not runner.busy()
    view = run.view()
    direct = lab.train(_settings(6))
    assert list(view.steps) == [s.step for s in direct.snapshots]
    assert np.array_equal(view.loss, np.float32([s.loss for s in direct.snapshots]))


def test_one_live_run_at_a_time_and_stop():
    runner = live.LiveRunner()
    run = runner.start(_settings())
    try:
        with pytest.raises(live.LiveBusy):
            runner.start(_settings())
        assert runner.busy() and runner.get(run.id) is run and runner.get("1") is None
    finally:
        run.stop()
        run.join(120)
    status = run.status()
    assert status.state == "stopped" and 0 <= status.step < 400 and run.view().stopped
    second = runner.start(_settings(2))  # once it ended, another may start
    second.join(120)
    assert second.status().state == "done" and runner.get(run.id) is None


def test_live_run_stops_at_its_time_limit():
    runner = live.LiveRunner(limit_s=0.0)
    run = runner.start(_settings())
    run.join(120)
    status = run.status()
    assert status.state == "limit" and status.step == 0 and len(run.view().steps) == 1


def test_a_failing_run_says_so(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(lab, "train", boom)
    runner = live.LiveRunner()
    run = runner.start(_settings())
    run.join(30)
    assert run.status().state == "failed" and run.view() is None and not runner.busy()


def test_rng_lock_is_the_labs():
    assert an.lab.RNG_LOCK is lab.RNG_LOCK and schedule.rate(1, 64, 100) == lab.LabSettings().lr(0)
    torch.manual_seed(0)  # leave the global RNG as other tests expect it
