"""The guided tour on a rotary model (SmolLM2). Step 3 (Positional Encoding): RoPE adds nothing to X, so the step shows
what it does instead: q and k before and after the RoPE turn, each the very matrix analysis.stages.attention_steps
reads from the model's own forward (the numbers Step by step shows), and one pair of k's dimensions turning, in
English and Korean. Step 4 (Q, K, V): Q and K as they enter Q Kᵀ (turned), V not turned. A model without RoPE keeps
its X, position and sum panels on step 3 and its three figures on step 4."""

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
POS = str(tour.STEPS.index("positional") + 1)
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


def _pair_points(at) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The pair figure's points: for each token ((x, y) before RoPE, (x, y) after)."""
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    pair = [f for f in figs if f["data"] and f["data"][0].get("type") == "scatter"]
    assert len(pair) == 1, [f["layout"]["title"]["text"] for f in figs]
    return [((tr["x"][0], tr["y"][0]), (tr["x"][1], tr["y"][1])) for tr in pair[0]["data"]]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_smollm2_positional_step_shows_q_and_k_before_and_after_rope(reference, lang):
    at = _open(model="smollm2-135m", text=TEXT, step=POS, layer=str(LAYER), head=str(HEAD), lang=lang)
    assert at.subheader[0].value == t("tour.step_title", lang, i=int(POS), n=tour.N_STEPS,
                                      title=t("tour.positional.title", lang))
    maps = _heatmaps(at)
    shown = {"Q_proj": _find(maps, t("stage.Q_proj", lang)), "K_proj": _find(maps, t("stage.K_proj", lang)),
             "Q": _find(maps, t("steps.rope_title", lang, name="Q")),
             "K": _find(maps, t("steps.rope_title", lang, name="K"))}
    assert len(maps) == 4, list(maps)  # no X / position / sum panels: RoPE adds nothing to X
    assert not any(t("tour.positional.fig", lang) in k for k in maps)
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
    # the sentences around the two rows, with the numbers of this head
    text = "\n".join(m.value for m in at.markdown)
    check = rope_check(reference)
    assert t("tour.qkv.rope_before", lang) in text
    assert t("tour.qkv.rope_after", lang, **check) in text
    assert check["moved"] > 1e-2 and check["length"] < 1e-4
    # one pair of k's dimensions (0, 32): token i turned by i radians about the origin, its length kept
    points = _pair_points(at)
    assert len(points) == n
    kp, k = reference["K_proj"].astype(np.float64), reference["K"].astype(np.float64)
    for i, ((xb, yb), (xa, ya)) in enumerate(points):
        np.testing.assert_allclose([xb, yb, xa, ya], [kp[i, 0], kp[i, 32], k[i, 0], k[i, 32]], rtol=1e-6, atol=1e-6)
        turn = np.angle(complex(xa, ya)) - np.angle(complex(xb, yb))
        assert abs(np.angle(np.exp(1j * (turn - i)))) < 1e-4, (i, turn)  # by i radians (mod 2π)
        assert abs(np.hypot(xa, ya) - np.hypot(xb, yb)) < 1e-4
    formula = "\n".join(x.value for x in at.latex)
    assert r"R_{\Theta, m}" in formula
    assert ("depends only on" in formula) == (lang == "en") and ("달려 있음" in formula) == (lang == "ko")


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_smollm2_qkv_step_shows_q_and_k_turned_and_v(reference, lang):
    at = _open(model="smollm2-135m", text=TEXT, step=QKV, layer=str(LAYER), head=str(HEAD), lang=lang)
    assert at.subheader[0].value == t("tour.step_title", lang, i=int(QKV), n=tour.N_STEPS, title=t("tour.qkv.title", lang))
    maps = _heatmaps(at)
    for name, title in (("Q", t("steps.rope_title", lang, name="Q")), ("K", t("steps.rope_title", lang, name="K")),
                        ("V", t("stage.V", lang))):
        np.testing.assert_array_equal(_find(maps, title).astype(np.float32), reference[name], err_msg=name)
    assert len(maps) == 3 and not any(k.startswith(t("stage.Q_proj", lang)) for k in maps), list(maps)
    # the step's formula says which of the three are turned (SmolLM2 has no Q/K/V biases)
    assert r"Q = R_{\Theta}\,(X W^{Q}),\quad K = R_{\Theta}\,(X W^{K}),\quad V = X W^{V}" in "\n".join(x.value for x in at.latex)
    assert t("notes.qkv.rotary", lang) in " ".join(i.value for i in at.info)
    # V's caption: no bias, as the model has none
    caps = [c.value for c in at.caption]
    assert t("steps.cap.QKV_no_bias", lang, n=n_tokens(reference), k=64) in caps
    assert t("steps.cap.QKV", lang, n=n_tokens(reference), k=64) not in caps


def n_tokens(steps: dict) -> int:
    return len(steps["Q"])


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
    at = _open(text=TEXT, step=POS)  # X, its position vectors and their sum, one figure
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles == [t("tour.positional.fig", "en")]
    assert not any(t("tour.qkv.rope_before", "en")[:12] in m.value for m in at.markdown)
