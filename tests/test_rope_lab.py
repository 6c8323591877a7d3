"""The RoPE section of the Positional-encoding lab (analysis/positional.py): the frequencies of each pair of
dimensions, the relative-only property of q·k under rotary positions against an independent formula (complex
numbers: pair j is the complex number q_j + i q_{j+k/2}, turned by e^{i pos omega_j}), and the head's score by
distance equal to what model/attention's MultiHeadAttention computes with its Rotary on a tiny config."""

import math

import numpy as np
import pytest
import torch

from analysis import positional as ap
from model.attention import MultiHeadAttention, Rotary
from model.config import TransformerConfig


def complex_score(q: np.ndarray, k: np.ndarray, theta: float, m: int, n: int) -> float:
    """R(m) q · R(n) k written as Re(sum_j q_c conj(k_c) e^{i (m - n) omega_j}), independently of the module."""
    h = len(q) // 2
    omega = np.array([theta ** (-2 * j / len(q)) for j in range(h)])
    qc, kc = q[:h] + 1j * q[h:], k[:h] + 1j * k[h:]
    return float(np.real(np.sum(qc * np.conj(kc) * np.exp(1j * (m - n) * omega))))


def test_frequencies_and_wavelengths_by_hand():
    f = ap.rope_frequencies(100000.0, 64)
    assert f.shape == (32,) and f[0] == 1.0
    assert [f[j] for j in (1, 31)] == pytest.approx([100000 ** (-2 / 64), 100000 ** (-62 / 64)], rel=1e-12)
    assert np.all(np.diff(f) < 0)  # the first pairs turn fastest
    s = ap.sinusoidal_frequencies(128)
    assert s.shape == (64,) and s[10] == pytest.approx(1 / 10000 ** (20 / 128), rel=1e-12)
    # the same family: RoPE with base 10000 and k = d is the sinusoidal table's frequencies
    assert np.allclose(ap.rope_frequencies(10000.0, 128), s, rtol=1e-12)
    # and the model's own Rotary uses these
    assert np.allclose(Rotary(64, 100000.0, 4).inv_freq().numpy(), f, rtol=1e-6)
    w = ap.wavelengths(f)
    assert w[0] == pytest.approx(2 * math.pi) and w[-1] == pytest.approx(2 * math.pi * 100000 ** (62 / 64))


@pytest.mark.parametrize("theta,k", [(0.5, 64), (1e5, 63), (1e5, 0), (float("nan"), 8)])
def test_bad_theta_or_width(theta, k):
    with pytest.raises(ValueError, match="theta"):
        ap.rope_frequencies(theta, k)


@pytest.mark.parametrize("kind", ["random", "constant"])
@pytest.mark.parametrize("theta,k", [(100000.0, 64), (10000.0, 16), (500000.0, 128)])
def test_score_depends_only_on_the_difference_of_positions(kind, theta, k):
    q, key = ap.rope_test_vectors(k, kind, seed=3)
    offsets = [0, 7, 250, 3000]
    r = ap.relative_scores(q, key, theta, offsets, 96)
    assert r["scores"].shape == (4, 97) and list(r["distance"][:3]) == [0, 1, 2]
    for o, n in enumerate(offsets):
        for delta in (0, 1, 5, 50, 96):
            assert r["scores"][o, delta] == pytest.approx(complex_score(q, key, theta, n + delta, n), abs=1e-5)
    assert r["max_diff"] < 1e-5
    assert r["scores"][0, 0] == pytest.approx(float(q @ key))  # distance 0: no turn at all
    # the rotation at any position is the module's own (float32 tables; positions 0..n-1)
    x = np.random.default_rng(0).standard_normal((5, k))
    ours = ap.rope_rotate(x, np.arange(5), theta)
    theirs = Rotary(k, theta, 5)(torch.tensor(x, dtype=torch.float32)[None, None])[0, 0].numpy()
    assert np.allclose(ours, theirs, atol=1e-5)


def test_constant_vectors_decay_with_distance():
    r = ap.relative_scores(*ap.rope_test_vectors(64, "constant"), 100000.0, [0], 512)
    s = r["scores"][0]
    assert s[0] == pytest.approx(64.0) and s[1:].max() < s[0] and s[200:].mean() < s[:20].mean()


def test_head_distance_scores_equal_the_models_rotary_attention():
    """A tiny rotary self-attention (2 query heads on 1 key/value head): its recorded scaled score of query i and key
    j is the head_distance_scores of i's projection at distance i - j, for every pair with i >= j."""
    torch.manual_seed(0)
    config = TransformerConfig(d_model=32, n_heads=2, n_kv_heads=1, n_encoder_layers=0, n_decoder_layers=1,
                               positional="rotary", rope_theta=5000.0, max_positions=64, bias=False, dropout=0.0)
    mha = MultiHeadAttention(config).eval()
    x = torch.randn(1, 12, 32)
    causal = torch.tril(torch.ones(12, 12, dtype=torch.bool))
    with torch.inference_mode():
        rec = mha(x, mask=causal, record=True).record
    for head in (0, 1):
        q_proj, k_proj = rec["q_proj"][0, head].numpy(), rec["k_proj"][0, head].numpy()
        scaled = rec["stages"].scaled[0, head].numpy()
        for i in (0, 5, 11):
            d = ap.head_distance_scores(q_proj[i], k_proj, 5000.0, 40)
            assert d.shape == (12, 41)
            for j in range(i + 1):
                assert d[j, i - j] == pytest.approx(scaled[i, j], abs=1e-5)
        steps = {"Q_proj": q_proj, "K_proj": k_proj, "rope_theta": np.float32(5000.0), "scaled": scaled,
                 "mask": causal.numpy()}
        p = ap.head_distance_profile(steps, 11, 40)
        assert p["check"] < 1e-5 and p["k"] == 16 and p["theta"] == 5000.0
        assert list(p["real"][:3]) == [11, 10, 9] and p["shown"].sum() == 12
        assert np.allclose(p["mean"], p["scores"].mean(0))
        p = ap.head_distance_profile(steps, 3, 40)  # keys after the query: masked in the sentence, no real score
        assert p["shown"].sum() == 4 and p["check"] < 1e-5 and np.allclose(p["mean"], p["scores"].mean(0))


def test_head_distance_profile_needs_a_rotary_head():
    with pytest.raises(ValueError, match="rotary"):
        ap.head_distance_profile({"Q": np.zeros((3, 4))}, 0, 8)


# ---- the RoPE tab of the Positional-encoding lab (AppTest through app.py) ------------------------------------------
def _rope_tab(model: str, lang: str):
    from pathlib import Path

    from apptest_support import assert_ok
    from streamlit.testing.v1 import AppTest

    from i18n import t
    from ui.pages import page_file

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=240)
    at.session_state["model"] = model
    at.session_state["lang"] = lang
    at.session_state["pe_tab"] = t("pe.tab.rope", lang)
    at.switch_page(page_file("positional"))
    at.run()
    assert_ok(at)
    return at


def _figs(at) -> list[dict]:
    import json

    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_rope_tab_on_minilm_uses_smollm2_defaults_and_offers_the_switch(lang):
    from apptest_support import assert_ok

    from i18n import t

    at = _rope_tab("minilm-l6", lang)
    assert at.number_input(key="rope_theta").value == 100000.0 and at.number_input(key="rope_k").value == 64
    assert any(t("rope.source.defaults", lang, model="minilm-l6") == c.value for c in at.caption)
    assert any(t("rope.need_rotary", lang, model="minilm-l6") == i.value for i in at.info)
    figs = _figs(at)
    assert len(figs) == 2  # frequencies and the relative-only demonstration; no model head
    freq = figs[0]["data"]
    assert len(freq[0]["x"]) == 32 and freq[0]["y"][0] == pytest.approx(1.0)
    assert freq[1]["y"][1] == pytest.approx(10000 ** (-2 / 64))  # the sinusoidal table's pair 1 at d = 64
    rel = figs[1]["data"]
    assert len(rel) == 4 and all(np.allclose(r["y"], rel[0]["y"], atol=1e-6) for r in rel)  # curves coincide
    # θ and k controls change the figures
    at.number_input(key="rope_theta").set_value(10000.0)
    at.number_input(key="rope_k").set_value(16)
    at.run()
    assert_ok(at)
    freq = _figs(at)[0]["data"]
    assert len(freq[0]["x"]) == 8 and np.allclose(freq[0]["y"], freq[1]["y"])  # base 10000, k = d: the same
    # the switch moves the sidebar to the rotary model, and the controls follow its θ and k
    at.button(key="rope_switch").click().run()
    assert_ok(at)
    assert at.session_state["model"] == "smollm2-135m" and at.number_input(key="rope_theta").value == 100000.0
    assert at.number_input(key="rope_k").value == 64 and len(_figs(at)) == 3


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_rope_tab_on_smollm2_shows_a_real_head_through_its_own_scores(lang):
    import re

    from apptest_support import assert_ok

    from i18n import t

    at = _rope_tab("smollm2-135m", lang)
    assert any(t("rope.source.model", lang, model="smollm2-135m", theta=100000.0, k=64) == c.value
               for c in at.caption)
    figs = _figs(at)
    assert len(figs) == 3
    head = figs[2]
    assert t("rope.fig.model", lang, model="smollm2-135m", layer=0, head=0, query="", theta=100000.0,
             k=64).split(":")[0] in head["layout"]["title"]["text"]
    mean, *keys, model = head["data"]
    assert len(mean["x"]) == 257 and 1 <= len(keys) <= 5 and model["mode"] == "markers"
    caption = next(c.value for c in at.caption if "x W_Q" in c.value)
    check = float(re.findall(r"([0-9.]+e[-+][0-9]+)", caption)[-1])
    assert check < 1e-3  # the curves pass through the model's own scaled scores
    for key in ("rope_freq-export", "rope_rel-export", "rope_head-export"):  # each chart's PNG and CSV export
        at.session_state[f"{key}-popover"] = True
        at.run()
        for fmt in ("png", "csv"):
            at.radio(key=f"{key}-fmt").set_value(fmt).run()
            assert_ok(at)
            assert any(b.proto.label == t("export.download", lang, fmt=fmt.upper()) for b in at.get("download_button"))
    first = head["data"][0]["y"]
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(5).run()
    assert_ok(at)
    title = _figs(at)[2]["layout"]["title"]["text"]
    assert t("rope.fig.model", lang, model="smollm2-135m", layer=3, head=5, query="", theta=100000.0,
             k=64).split(":")[0] in title
    assert not np.allclose(_figs(at)[2]["data"][0]["y"], first)  # another head, another distance pattern


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_rope_figures_and_their_export_twins(lang):
    import io

    from viz import positional as vp

    rope, sinus = ap.rope_frequencies(1e5, 64), ap.sinusoidal_frequencies(64)
    fig = vp.rope_frequency_figure(rope, sinus, theta=1e5, lecture=True, lang=lang)
    assert fig.layout.yaxis.type == "log" and len(fig.data) == 4  # two series on two panels
    r = ap.relative_scores(*ap.rope_test_vectors(64), 1e5, (0, 100), 64)
    assert len(vp.relative_scores_figure(r, lang=lang).data) == 2
    twin = vp.lines_figure(r["distance"], {"a": r["scores"][0], "b": r["scores"][1]}, title="q·k", xlabel="m − n",
                           ylabel="q·k", markers=("model", [1, 2], [0.5, 0.1]), lang=lang)
    buf = io.BytesIO()
    twin.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
