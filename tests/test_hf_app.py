"""Issue 17 in the app: local folders registered by whoever starts it (HEADLIGHT_MODELS) appear in the picker and
every page and tab runs on them: a BERT encoder, a GPT-2 (decoder-only: its causal self-attention, the next-token
panel) and a BART (encoder-decoder). Tiny random checkpoints made at test time (tests/hf_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_support import assert_ok
from hf_support import make_bart, make_encoder, make_gpt2
from streamlit.testing.v1 import AppTest

from i18n import t
from model.registry import REGISTRY, register_local_models
from ui import explorer as ex
from ui import heads as uh
from ui import mask_lab, pe_lab
from viz.steps import ATTENTION_TABS

ROOT = Path(__file__).resolve().parents[1]
TEXT = "the cat sat on the mat"
PAGES = {"app_pages/explorer.py": (ex.K_TAB, ex.TABS), "app_pages/heads.py": (uh.K_TAB, uh.TABS),
         "app_pages/steps.py": ("steps_tab", [t(f"steps.tab.{n}") for n in ATTENTION_TABS]),
         "app_pages/positional.py": ("pe_tab", pe_lab.PE_TABS), "app_pages/masks.py": ("mask_tab", mask_lab.MASK_TABS),
         "app_pages/seq2seq.py": (None, [None]), "app_pages/tour.py": (None, [None])}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-app")
    paths = {"hl-bert": make_encoder("bert", root / "hl-bert")[1], "hl-gpt2": make_gpt2(root / "hl-gpt2")[1],
             "hl-bart": make_bart(root / "hl-bart")[1]}
    specs = register_local_models(",".join(str(p) for p in paths.values()))
    yield {s.name: s for s in specs}
    for s in specs:  # other tests see the built-in registry only
        REGISTRY.pop(s.name, None)


def _run(model: str, page: str, key, label, lang: str = "en") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"model": model, "text": TEXT, "lang": lang})
    at.run()
    at.switch_page(page)
    if key:
        at.session_state[key] = label
    at.run()
    return at


def test_folders_are_registered_by_their_names(folders):
    assert {n: s.kind for n, s in folders.items()} == {"hl-bert": "encoder", "hl-gpt2": "decoder",
                                                        "hl-bart": "encoder-decoder"}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    options = at.sidebar.selectbox(key="model").options  # shown as "name (local type)"
    for name, family in (("hl-bert", "bert"), ("hl-gpt2", "gpt2"), ("hl-bart", "bart")):
        assert f"{name} (local {family})" in options, options


@pytest.mark.slow
@pytest.mark.parametrize("model", ["hl-gpt2", "hl-bert", "hl-bart"])
def test_every_page_and_tab_runs_on_a_local_folder(folders, model):
    for page, (key, labels) in PAGES.items():
        for label in labels:
            at = _run(model, page, key, label)
            assert_ok(at)
            assert not at.error, (model, page, label, [e.value for e in at.error])
            assert at.session_state["model"] == model
    from ui.tour import STEPS

    for i in range(1, len(STEPS) + 1):  # every step of the guided tour
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        at.query_params.update({"model": model, "text": TEXT, "step": str(i)})
        at.run()
        at.switch_page("app_pages/tour.py")
        at.query_params["step"] = str(i)
        at.run()
        assert_ok(at)
        assert not at.error, (model, STEPS[i - 1], [e.value for e in at.error])


def test_gpt2_explorer_shows_its_causal_attention_and_next_tokens(folders):
    for lang in ("en", "ko"):
        at = _run("hl-gpt2", "app_pages/explorer.py", None, None, lang)
        assert_ok(at)
        assert not at.error, [e.value for e in at.error]
        assert at.query_params.get("block") in ("decoder_self", ["decoder_self"]), at.query_params  # its one block
        assert any(h.value == t("ex.next.title", lang) for h in at.subheader)
        assert len(at.dataframe) >= 1
        cont = [m.value for m in at.markdown if m.value.startswith(t("ex.next.continuation", lang))]
        assert cont and "**" in cont[0]


def test_gpt2_logit_lens_last_layer_is_the_next_token_distribution(folders):
    """The logit lens of a decoder-only model: its last layer's reading is the model's own next-token distribution."""
    import numpy as np

    from analysis.heads import logit_lens
    from model.registry import load_model

    model = load_model("hl-gpt2", "cpu")
    lens = logit_lens(model, TEXT, k=5)
    nxt = model.next_token_distribution(TEXT, top_k=5)
    assert lens.answer == nxt[0].token and list(lens.top_tokens[-1]) == [c.token for c in nxt]
    np.testing.assert_allclose(lens.top_probs[-1], [c.prob for c in nxt], atol=1e-5)
    assert len(lens.layers) == model.config.n_encoder_layers and lens.answer_rank[-1] == 0
