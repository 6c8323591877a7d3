"""Issue 38 in the app: a Gemma 3 and a Qwen3 folder, registered as a lecturer registers them (HEADLIGHT_MODELS), on
every page and tab, and every view reads the new options from the config: Step by step shows the q / k norms and
Gemma's post-norms (the layer output still checked against the model's own); the explorer and the Mask lab show the
sliding window as a band; the PE lab's RoPE tab draws both bases; the tour's "since 2017" rows name the sliding window
and the q / k norm; and Korean read as bytes is shown as Hangul, the raw pieces one switch away."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from gguf_support import make_llama
from streamlit.testing.v1 import AppTest

from i18n import t
from model.registry import REGISTRY, register_local_models
from ui import explorer as ex
from ui import heads as uh
from ui import mask_lab, pe_lab
from ui.pages import page_file
from viz.steps import step_tabs

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The animal didn't cross the street because it was tired."
KOREAN = "철수는 영희에게 책을 빌려주었다."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families-app")
    # Gemma 3: 6 heads on 2 of head_dim 10, 4 layers, layers 0, 1 and 3 sliding (window 4, RoPE base 300), layer 2
    # global (5000); Qwen3: the same heads, byte-level BPE (Korean in bytes)
    paths = {"hl-gemma3": make_llama(root / "hl-gemma3", "gemma3")[1],
             "hl-qwen3": make_llama(root / "hl-qwen3", "qwen3")[1]}
    specs = register_local_models(",".join(str(p) for p in paths.values()))
    yield {s.name: s for s in specs}
    for s in specs:  # other tests see the built-in registry only
        REGISTRY.pop(s.name, None)


def _run(model: str, page: str, key=None, label=None, lang: str = "en", text: str = TEXT, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"model": model, "text": text, "lang": lang, **params})
    at.run()
    at.switch_page(page)
    if key:
        at.session_state[key] = label
    at.run()
    assert_ok(at)
    return at


def _titles(at) -> list[str]:
    """Each chart's title as read: a title wider than its figure breaks into lines (<br>), read here as spaces."""
    return [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "").replace("<br>", " ")
            for c in at.get("plotly_chart")]


def test_registered_by_their_families(folders):
    assert {n: (s.kind, s.label) for n, s in folders.items()} == {
        "hl-gemma3": ("decoder", "hl-gemma3 (local gemma3_text)"), "hl-qwen3": ("decoder", "hl-qwen3 (local qwen3)")}


PAGES = {page_file("explorer"): (ex.K_TAB, ex.TABS), page_file("heads"): (uh.K_TAB, uh.TABS),
         page_file("steps"): ("steps_tab", [t(f"steps.tab.{n}") for n in step_tabs("decoder_self", False, True)]),
         page_file("positional"): ("pe_tab", pe_lab.PE_TABS), page_file("masks"): ("mask_tab", mask_lab.MASK_TABS),
         page_file("seq2seq"): (None, [None]), page_file("tour"): (None, [None])}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["hl-gemma3", "hl-qwen3"])
def test_every_page_and_tab_runs(folders, model):
    for page, (key, labels) in PAGES.items():
        both = page in (page_file("explorer"), page_file("steps"))  # English too where the views differ by text
        for label in labels:
            for text in (TEXT, KOREAN) if both else (KOREAN,):
                at = _run(model, page, key, label, text=text)
                assert at.session_state["model"] == model, (page, label)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_step_by_step_shows_the_qk_norms_and_the_post_norms(folders, lang):
    # layer 0 is a sliding-window layer: its mask is the band, its RoPE base the local one
    at = _run("hl-gemma3", page_file("steps"), "steps_tab", t("steps.tab.qkv", lang), lang, layer="0")
    titles = " ".join(_titles(at))
    assert t("stage.Q_norm", lang) in titles and t("stage.K_norm", lang) in titles
    assert t("steps.rope_norm_title", lang, name="Q") in titles
    captions = " ".join(c.value for c in at.caption)
    assert t("steps.cap.rope_local", lang, theta=300.0) in captions and t("steps.post_norms", lang) in captions
    at = _run("hl-gemma3", page_file("steps"), "steps_tab", t("steps.tab.scores", lang), lang, layer="0")
    captions = " ".join(c.value for c in at.caption)
    assert t("steps.cap.mask_window", lang, w=4, w1=3) in captions
    assert t("steps.cap.scaled_scalar", lang, s="13", k=10, sqrt=float(np.sqrt(13))) in captions
    at = _run("hl-gemma3", page_file("steps"), "steps_tab", "add_norm_pre", lang, layer="2")
    titles = _titles(at)
    assert any(x.startswith(t("steps.post_norm1_fig", lang, n=0, d=0).split(" · ")[0]) for x in titles), titles
    assert any(x.startswith(t("tour.rms.g_fig_offset", lang)) for x in titles), titles  # 1 + γ
    at = _run("hl-gemma3", page_file("steps"), "steps_tab", "output_pre", lang, layer="3")
    titles = _titles(at)
    assert any(x.startswith(t("steps.post_norm2_fig", lang, n=0, d=0).split(" · ")[0]) for x in titles), titles
    ok = [s.value for s in at.success if s.value.startswith(t("tour.ffn.check", lang, diff=0, layer=3).split("(")[0])]
    assert len(ok) == 1 and float(ok[0].rsplit(" ", 1)[-1].rstrip(").")) < 1e-5, [s.value for s in at.success]
    at = _run("hl-qwen3", page_file("steps"), "steps_tab", t("steps.tab.qkv", lang), lang)
    titles = " ".join(_titles(at))
    assert t("stage.Q_norm", lang) in titles and t("steps.post_norms", lang) not in [c.value for c in at.caption]


def test_the_explorer_draws_the_band_of_a_sliding_window_layer(folders):
    from model.registry import load_model

    trace = load_model("hl-gemma3", "cpu").trace(TEXT)
    n = len(trace.source_tokens)
    band = np.tril(np.ones((n, n), dtype=bool)) & (np.subtract.outer(np.arange(n), np.arange(n)) < 4)
    np.testing.assert_array_equal(trace.mask_of("decoder_self", 0), band)
    np.testing.assert_array_equal(trace.mask_of("decoder_self", 2), np.tril(np.ones((n, n), dtype=bool)))
    for layer, masked in ((0, int((~band).sum())), (2, n * (n - 1) // 2)):
        at = _run("hl-gemma3", page_file("explorer"), ex.K_TAB, ex.TABS[0], layer=str(layer))
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        marks = [d for d in spec["data"] if d.get("type") == "scatter" and d.get("mode") == "text"]
        assert len(marks) == 1 and len(marks[0]["text"]) == masked, (layer, masked)  # a ✕ on every blocked cell
        local = t("ex.window_layer", "en", layer=layer, w=4, w1=3) in [c.value for c in at.caption]
        assert local == (layer == 0)


def test_the_mask_lab_shows_both_masks(folders):
    at = _run("hl-gemma3", page_file("masks"), "mask_tab", mask_lab.MASK_TABS[0], layer="1")
    titles = _titles(at)
    assert t("masks.fig.global", "en") in titles and t("masks.fig.local", "en", w=4) in titles
    md = " ".join(m.value for m in at.markdown)
    assert "layers 0, 1, 3" in md and t("masks.kind.local", "en") in md


def test_the_rope_tab_draws_both_bases(folders):
    at = _run("hl-gemma3", page_file("positional"), "pe_tab", pe_lab.PE_TABS[-1])
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = {d["name"] for d in spec["data"]}
    assert {t("rope.trace.rope", "en", theta=5000.0, k=10), t("rope.trace.local", "en", theta=300.0)} <= names, names
    assert t("rope.source.local", "en", model="hl-gemma3", theta=5000.0, local=300.0, n=3, L=4, w=4) in [
        c.value for c in at.caption]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_tour_names_the_sliding_window_and_the_qk_norm(folders, lang):
    from ui.tour import STEPS

    at = _run("hl-gemma3", page_file("tour"), lang=lang, step=str(STEPS.index("since") + 1))
    text = json.dumps([d.value.to_dict() for d in at.table], ensure_ascii=False)
    for key in ("since.row.window", "since.row.qk_norm"):
        assert t(key, lang) in text, key
    assert t("since.model.window", lang, w=4, n=3, L=4, g=1) in text


def test_korean_read_as_bytes_is_shown_as_hangul(folders):
    """Qwen3's tiny byte-level BPE reads "철수는" as nine byte pieces: the explorer shows "철", "수", "는" (the
    attention summed over a syllable's keys, averaged over its queries), the raw pieces one switch away; the notice
    that the model reads Korean as bytes stays."""
    at = _run("hl-qwen3", page_file("explorer"), ex.K_TAB, ex.TABS[0], text=KOREAN)
    assert at.toggle(key=ex.K_SPELL).value is True
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    rows = spec["data"][0]["y"]
    assert rows[:6] == ["철", "수", "는", "Ġ", "영", "희"], rows  # the tiny vocabulary keeps the space apart
    notice = t("e5.unreadable", "en", model="hl-qwen3", n=0, total=0, examples="").split(" 0 ")[0]
    assert any(w.value.startswith(notice) for w in at.warning), [w.value for w in at.warning]  # the notice stays
    at.toggle(key=ex.K_SPELL).set_value(False).run()
    raw = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["y"]
    assert len(raw) > len(rows) and "철" not in raw
    # the numbers: the merged map is the raw one summed over a syllable's keys and averaged over its queries
    from analysis.explore import derive
    from model.registry import load_model

    trace = load_model("hl-qwen3", "cpu").trace(KOREAN)
    d = derive(trace, "decoder_self", spell=True)
    a = trace.decoder_self_attention[0, 0]
    np.testing.assert_allclose(d.att[0, 0, 0, 0], a[0:3, 0:3].sum(1).mean(), atol=1e-6)
    np.testing.assert_allclose(d.att[0, 0].sum(-1), 1.0, atol=1e-5)
