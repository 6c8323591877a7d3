"""What the cause views draw, without Streamlit: analysis/cause.py's derived tables and the patching result's JSON
(exact round trip), ui/saved.py's store on disk, and viz/cause.py's figures (their numbers, the pickable cells)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from gguf_support import make_llama

from analysis import cause
from model.hf.load import load_local
from ui import saved
from viz import cause as vc

CLEAN, CORRUPT = "The cat sat on the", "The dog sat on the"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _, path, _ = make_llama(tmp_path_factory.mktemp("views") / "llama", "llama")
    return load_local(torch.device("cpu"), path)


def test_generation_tables(tiny):
    g = cause.generation(tiny, CLEAN, 4, cause.Sampling())
    P = len(g.prompt_ids)
    np.testing.assert_array_equal(cause.kv_map(6, 2), np.repeat(np.eye(2), 3, axis=0))
    rows = cause.step_rows_padded(g, 1)  # (L, H, P + 4): the step saw P + 1 keys
    assert rows.shape == (2, 6, P + 4) and np.isnan(rows[..., P + 1:]).all()
    np.testing.assert_array_equal(rows[..., : P + 1], g.steps[1].rows)
    c = cause.costs(g)
    assert c["cache_kib"].tolist() == [s.cache_bytes / 1024 for s in g.steps]
    assert c["macs_full"][0] == c["macs_cached"][0] and (c["macs_full"][1:] > c["macs_cached"][1:]).all()
    assert np.isnan(c["ms_full"]).all()  # not timed unless asked
    sink = cause.sink_by_layer(g)
    np.testing.assert_allclose(sink[:, 2], g.steps[2].rows[:, :, 0].mean(1), rtol=0, atol=1e-7)
    table = cause.step_table(g)
    assert [r["token"] for r in table] == [s.choice.token for s in g.steps]
    assert table[0]["position"] == P and table[0]["drawn"] == 1.0
    timed = cause.generation(tiny, CLEAN, 2, cause.Sampling(), time_uncached=True)
    assert all(s.ms_full is not None and s.ms_full > 0 for s in timed.steps)
    with pytest.raises(ValueError):
        g.steps[0].rows[0, 0, 0] = 1.0  # frozen


def test_patching_json_round_trip_is_exact(tiny):
    p = cause.patching(tiny, CLEAN, CORRUPT, " mat", " park")
    back = cause.patching_from_json(cause.patching_to_json(p))
    for name in ("model", "clean", "corrupt", "clean_ids", "corrupt_ids", "clean_diff", "corrupt_diff"):
        assert getattr(back, name) == getattr(p, name), name
    np.testing.assert_array_equal(back.head, p.head)
    np.testing.assert_array_equal(back.residual, p.residual)
    assert back.target == p.target and back.foil == p.foil and back.clean_tokens == p.clean_tokens
    assert cause.check_pair(tiny, CLEAN, CORRUPT) == 5
    with pytest.raises(KeyError):
        cause.patching_from_json(json.dumps({"model": "x"}))


def test_saved_store(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))
    key = ("smollm2-135m", "a b", "c d", " x", " y")
    assert saved.get("patching", key) is None
    saved.put("patching", key, '{"n": 1}')
    assert saved.get("patching", key) == '{"n": 1}'
    assert saved.get("patching", (*key[:-1], " z")) is None
    path = next((tmp_path / "saved" / "patching").iterdir())
    path.write_text(json.dumps({"key": "another", "payload": "{}"}))  # a file whose key differs is not served
    assert saved.get("patching", key) is None
    with pytest.raises(ValueError, match="unknown kind"):
        saved.put("pickle", key, "x")
    with pytest.raises(ValueError, match="over the"):
        saved.put("patching", key, "x" * (saved.MAX_BYTES + 1))


def test_figures_carry_the_numbers_and_the_pickable_cells(tiny):
    a = cause.attribution(tiny, CLEAN, " mat", " park")
    fig = vc.grid(a.head, title="t", colorbar="c", chosen=[(1, 2)], lecture=False, lang="en")
    heat, marks = fig.data[0], fig.data[-1]
    np.testing.assert_allclose(np.asarray(heat.z, dtype=float), a.head, rtol=0, atol=1e-6)  # 2 layers: not wide
    assert list(marks.customdata[8][:2]) == [1, 2] and marks.customdata[8][2] == pytest.approx(a.head[1, 2])
    assert (marks.x[8], marks.y[8]) == ("Head 2", "Layer 1")
    deep = np.arange(30 * 9, dtype=float).reshape(30, 9)
    wide = vc.grid(deep, title="t", colorbar="c", chosen=None, lecture=True, lang="ko")
    assert wide.data[-1].x[0] == "레이어 0" and wide.data[-1].y[1] == "헤드 1"  # layers along x
    parts = vc.dla_parts(a.head, a.mlp, a.attn_bias, a.embed, title="t")
    assert parts.data[0].y[0] == pytest.approx(a.embed)
    np.testing.assert_allclose(parts.data[1].y[1:], a.head.sum(1) + a.attn_bias)
    np.testing.assert_allclose(parts.data[2].y[1:], a.mlp)
    g = cause.generation(tiny, CLEAN, 3, cause.Sampling())
    costs = vc.costs(cause.costs(g), which="time")
    assert [d.name for d in costs.data] == ["with the cache"]  # the untimed line is left out
    groups = vc.kv_groups(cause.kv_map(6, 2), lang="ko")
    assert groups.data[0].x[1] == "KV 1" and groups.data[0].text[4][1] == "●"
