"""The guided tour's Q, K, V step on a rotary model (SmolLM2): q and k before and after the RoPE turn, each the very
matrix analysis.stages.attention_steps reads from the model's own forward (the numbers Step by step shows), in
English and Korean; a model without RoPE keeps its three figures."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from analysis.stages import attention_steps
from i18n import t
from model.registry import load_model
from ui import tour
from ui.pages import page_file
from viz.tour import rope_check

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The animal didn't cross the street"
QKV = str(tour.STEPS.index("qkv") + 1)
LAYER, HEAD = 2, 4  # SmolLM2: query head 4 reads key/value head 1


def _open(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    at.switch_page(page_file("tour")).run()
    assert_ok(at)
    return at


def _heatmaps(at) -> dict[str, np.ndarray]:
    """{figure title: its heatmap's matrix} of every chart on the screen."""
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        trace = spec["data"][0]
        if trace.get("type") != "heatmap":
            continue
        z = trace["z"]
        if isinstance(z, dict):  # plotly's typed array
            shape = tuple(int(s) for s in str(z["shape"]).split(","))
            z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
        out[spec["layout"]["title"]["text"]] = np.asarray(z, dtype=np.float64)
    return out


def _find(maps: dict[str, np.ndarray], title: str) -> np.ndarray:
    hits = [m for k, m in maps.items() if k.startswith(title + "  ·  ")]
    assert len(hits) == 1, (title, list(maps))
    return hits[0]


@pytest.fixture(scope="module")
def reference() -> dict:
    """The analysis values the tour must show (the same layer and head, on the same sentence)."""
    loaded = load_model("smollm2-135m", "cpu")
    return attention_steps(loaded, loaded.trace(TEXT), "decoder_self", LAYER, HEAD)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_smollm2_qkv_step_shows_q_and_k_before_and_after_rope(reference, lang):
    at = _open(model="smollm2-135m", text=TEXT, step=QKV, layer=str(LAYER), head=str(HEAD), lang=lang)
    assert at.subheader[0].value == t("tour.step_title", lang, i=int(QKV), n=tour.N_STEPS, title=t("tour.qkv.title", lang))
    maps = _heatmaps(at)
    shown = {"Q_proj": _find(maps, t("stage.Q_proj", lang)), "K_proj": _find(maps, t("stage.K_proj", lang)),
             "Q": _find(maps, t("steps.rope_title", lang, name="Q")),
             "K": _find(maps, t("steps.rope_title", lang, name="K"))}
    n = len(reference["Q"])
    assert n > 3 and reference["Q"].shape == (n, 64)
    for name, m in shown.items():  # the very numbers of the analysis (float32 through plotly's JSON)
        assert m.shape == reference[name].shape, name
        np.testing.assert_array_equal(m.astype(np.float32), reference[name], err_msg=name)
    for name in ("Q", "K"):
        before, after = shown[f"{name}_proj"], shown[name]
        np.testing.assert_allclose(after[0], before[0], atol=1e-6)  # position 0 is not turned
        moved = np.abs(after[1:] - before[1:]).max(axis=1)
        assert (moved > 1e-3).all(), f"{name}: some later row was not turned: {moved}"
        # a turn, not a rescale: every row keeps its length
        np.testing.assert_allclose(np.linalg.norm(after, axis=1), np.linalg.norm(before, axis=1), rtol=1e-4)
    # the V figure is still there, unturned (no "before" of V)
    assert sum(k.startswith("V = X W_V") or k.startswith(t("stage.V", lang)) for k in maps) == 1, list(maps)
    # the step's formula says which of the three are turned (SmolLM2 has no Q/K/V biases)
    assert r"Q = R_{\Theta}\,(X W^{Q}),\quad K = R_{\Theta}\,(X W^{K}),\quad V = X W^{V}" in "\n".join(x.value for x in at.latex)
    # the sentences around the two rows, with the numbers of this head
    text = "\n".join(m.value for m in at.markdown)
    check = rope_check(reference)
    assert t("tour.qkv.rope_before", lang) in text
    assert t("tour.qkv.rope_after", lang, **check) in text
    assert check["moved"] > 1e-2 and check["length"] < 1e-4


def test_rope_check_reads_the_turn():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    ang = np.arange(5)[:, None] * np.array([1.0, 0.1, 0.01, 0.001])[None]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    turn = lambda x: x * cos + np.concatenate([-x[:, 4:], x[:, :4]], 1) * sin  # noqa: E731
    check = rope_check({"Q": turn(q), "Q_proj": q, "K": turn(k), "K_proj": k})
    assert check["length"] < 1e-12
    assert check["moved"] == pytest.approx(max(np.abs(turn(q) - q).max(), np.abs(turn(k) - k).max()))
    assert rope_check({"Q": 2 * q, "Q_proj": q, "K": k, "K_proj": k})["length"] == pytest.approx(
        np.linalg.norm(q, axis=1).max())


@pytest.mark.slow
def test_a_model_without_rope_keeps_its_three_figures():
    at = _open(text=TEXT, step=QKV)  # the default model (MiniLM): learned positions, no turn
    titles = list(_heatmaps(at))
    assert [k.split("  ·  ")[0] for k in titles] == [t(f"stage.{n}", "en") for n in ("Q", "K", "V")]
    assert not any(t("tour.qkv.rope_before", "en")[:12] in m.value for m in at.markdown)
    assert not any("R_{" in x.value for x in at.latex)
