"""Step by step on a llama-family model: the projections before RoPE and Q, K after it; RMSNorm's mean square (no
mean, no beta); SwiGLU's gate, up and hidden parts. Each checked against its own formula on the model's recorded
numbers, on a tiny random llama (6 query heads on 2 key/value heads) saved by transformers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # noqa: F401
from gguf_support import make_llama  # noqa: E402

from analysis.stages import attention_steps, sublayer_steps  # noqa: E402
from model.hf.specs import folder_spec  # noqa: E402
from model.registry import load_model  # noqa: E402

TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    _, folder, _ = make_llama(tmp_path_factory.mktemp("llama") / "hf", "llama")
    loaded = folder_spec(folder, taken=()).load(torch.device("cpu"))
    return loaded, loaded.trace(TEXT)


def rope(x: np.ndarray, theta: float) -> np.ndarray:
    """transformers' rotate-half RoPE of (n, k) rows at positions 0..n-1."""
    n, k = x.shape
    inv = theta ** (-np.arange(0, k, 2, dtype=np.float64) / k)  # (k/2,)
    ang = np.arange(n)[:, None] * inv[None, :]  # (n, k/2)
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    half = np.concatenate([-x[:, k // 2:], x[:, :k // 2]], 1)
    return x * cos + half * sin


@pytest.mark.parametrize("head", [0, 5])  # head 5 reads key/value head 1
def test_q_and_k_are_the_projections_turned_by_rope(llama, head):
    loaded, trace = llama
    steps = attention_steps(loaded, trace, "decoder_self", 1, head)
    assert {"Q_proj", "K_proj"} <= set(steps)
    x, P = steps["X"], steps
    np.testing.assert_allclose(steps["Q_proj"], x @ P["W_Q"] + P["b_Q"], atol=1e-4)
    for name in ("Q", "K"):
        np.testing.assert_allclose(steps[name], rope(steps[f"{name}_proj"].astype(np.float64), 5000.0), atol=1e-4)
        # a rotation keeps each pair's length: the norm of every row is unchanged
        np.testing.assert_allclose(np.linalg.norm(steps[name], axis=1), np.linalg.norm(steps[f"{name}_proj"], axis=1),
                                   rtol=1e-5)
    np.testing.assert_allclose(steps["Q_proj"][0], steps["Q"][0], atol=1e-6)  # position 0 is not turned
    np.testing.assert_allclose(steps["scores"], steps["Q"] @ steps["K"].T, rtol=1e-4, atol=1e-4)


def test_rmsnorm_and_swiglu_parts(llama):
    loaded, trace = llama
    sub = sublayer_steps(loaded, trace, "decoder_self", 0)
    for norm in ("norm1", "norm2"):
        s = sub[f"{norm}_in"].astype(np.float64)
        assert f"mean_{norm}" not in sub and f"beta_{norm}" not in sub
        np.testing.assert_allclose(sub[f"ms_{norm}"], (s ** 2).mean(-1), rtol=1e-5)
        want = sub[f"gamma_{norm}"] * s / np.sqrt(sub[f"ms_{norm}"][:, None] + float(sub[f"eps_{norm}"]))
        np.testing.assert_allclose(sub[norm], want, atol=1e-4)
    gate, up = sub["ffn_gate"].astype(np.float64), sub["ffn_pre"]
    np.testing.assert_allclose(gate, sub["norm2"] @ sub["W_gate"], atol=1e-4)
    silu = gate / (1 + np.exp(-gate))
    np.testing.assert_allclose(sub["ffn_act"], silu, atol=1e-5)
    np.testing.assert_allclose(sub["ffn_hidden"], silu * up, atol=1e-5)
    np.testing.assert_allclose(sub["ffn_hidden"] @ sub["W_2"] + sub["b_2"] + sub["x"] + sub["attn_out"], sub["output"],
                               atol=1e-4)


def test_models_without_rope_or_rmsnorm_keep_their_keys():
    loaded = load_model("minilm-l6", "cpu")
    trace = loaded.trace(TEXT)
    assert "Q_proj" not in attention_steps(loaded, trace, "encoder", 0, 0)
    sub = sublayer_steps(loaded, trace, "encoder", 0)
    assert {"mean_norm1", "var_norm1", "beta_norm1"} <= set(sub) and "ms_norm1" not in sub and "W_gate" not in sub


# ---- the page, on the installed SmolLM2 (rotary positions, RMSNorm, pre-LN, SwiGLU) ---------------------------------
def _steps_page(tab: str | None = None, lang: str = "en"):
    from pathlib import Path

    from apptest_support import assert_ok, charts, open_tab
    from streamlit.testing.v1 import AppTest

    from i18n import t
    from ui.pages import page_file

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=240)
    at.session_state["model"] = "smollm2-135m"
    at.session_state["lang"] = lang
    at.session_state["text"] = "철수는 영희에게 책을 빌려주었다" if lang == "ko" else TEXT
    at.switch_page(page_file("steps"))
    at.run()
    assert_ok(at)
    if tab:
        at = open_tab(at, t(f"steps.tab.{tab}", lang), "steps_tab")
        assert_ok(at)
    return at, "\n".join(charts(at))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_smollm2_steps_show_rope_rmsnorm_and_swiglu(lang):
    from i18n import t

    at, figs = _steps_page("qkv", lang)
    text = "\n".join(m.value for m in at.markdown)
    assert t("steps.rope_title", lang, name="Q") in text and t("stage.Q_proj", lang) in text
    assert "R_{\\Theta" in "\n".join(x.value for x in at.latex)
    at, figs = _steps_page("add_norm_pre", lang)
    assert t("tour.rms.stats_fig", lang) in figs and t("tour.add_norm.mean", lang) not in figs
    assert r"\operatorname{mean}(s^2)" in "\n".join(x.value for x in at.latex)
    at, figs = _steps_page("ffn", lang)
    assert "W_{gate}" in "\n".join(x.value for x in at.latex)
    for key in ("tour.glu.gate_fig", "tour.glu.up_fig"):
        assert t(key, lang, n=0, f=0).split("·")[0].strip() in figs
    assert "W_gate" in figs
