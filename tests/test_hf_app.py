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
from ui.pages import page_file
from viz.steps import step_tabs

ROOT = Path(__file__).resolve().parents[1]
TEXT = "the cat sat on the mat"
PAGES = {page_file("explorer"): (ex.K_TAB, ex.TABS), page_file("heads"): (uh.K_TAB, uh.TABS),
         page_file("steps"): ("steps_tab", None),  # the model's own tabs (STEP_TABS)
         page_file("positional"): ("pe_tab", pe_lab.PE_TABS), page_file("masks"): ("mask_tab", mask_lab.MASK_TABS),
         page_file("seq2seq"): (None, [None]), page_file("tour"): (None, [None])}
# the Step by step tabs: the encoder's (BERT; BART's sidebar block is its encoder) or the pre-LN stack's (GPT-2)
STEP_TABS = {m: [t(f"steps.tab.{n}", norm="LN") for n in step_tabs("encoder", False, pre_ln=m == "hl-gpt2")]
             for m in ("hl-bert", "hl-gpt2", "hl-bart")}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-app")
    paths = {"hl-bert": make_encoder("bert", root / "hl-bert")[1], "hl-gpt2": make_gpt2(root / "hl-gpt2")[1],
             # a decoder deeper, with a narrower FFN and more heads than its encoder (3 heads of 7, then 7 of 3)
             "hl-bart": make_bart(root / "hl-bart", decoder_layers=3, decoder_ffn_dim=19,
                                  decoder_attention_heads=7)[1]}
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
        for label in labels or STEP_TABS[model]:
            at = _run(model, page, key, label)
            assert_ok(at)
            assert not at.error, (model, page, label, [e.value for e in at.error])
            assert at.session_state["model"] == model
    from ui.tour import STEPS

    for i in range(1, len(STEPS) + 1):  # every step of the guided tour
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        at.query_params.update({"model": model, "text": TEXT, "step": str(i)})
        at.run()
        at.switch_page(page_file("tour"))
        at.query_params["step"] = str(i)
        at.run()
        assert_ok(at)
        assert not at.error, (model, STEPS[i - 1], [e.value for e in at.error])


def test_gpt2_explorer_shows_its_causal_attention_and_next_tokens(folders):
    for lang in ("en", "ko"):
        at = _run("hl-gpt2", page_file("explorer"), None, None, lang)
        assert_ok(at)
        assert not at.error, [e.value for e in at.error]
        assert at.query_params.get("block") in ("decoder_self", ["decoder_self"]), at.query_params  # its one block
        assert any(h.value == t("ex.next.title", lang) for h in at.subheader)
        assert not [m for m in at.markdown if m.value.startswith(t("ex.next.continuation", lang))]  # on request
        at.button(key="ex_next_one").click().run()
        assert not at.exception and len(at.dataframe) >= 1 and len(at.dataframe[-1].value) == 1
        at.button(key="ex_next_more").click().run()
        assert not at.exception and len(at.dataframe[-1].value) == 9
        cont = [m.value for m in at.markdown if m.value.startswith(t("ex.next.continuation", lang))]
        assert cont and "**" in cont[0]
        # one step at a time is the same continuation as nine at once
        from model.registry import load_model
        from model.tokenizer import shown_piece

        gpt2 = load_model("hl-gpt2", "cpu")  # its byte-level pieces as text ("Ġthe" -> "␣the"), issue 34
        want = [shown_piece(s.choice.token, gpt2.tokenizer.scheme) for s in gpt2.greedy_continue(TEXT, 9)]
        assert list(at.dataframe[-1].value.iloc[:, 1]) == want
        at.button(key="ex_next_clear").click().run()
        assert not [m for m in at.markdown if m.value.startswith(t("ex.next.continuation", lang))]


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
    assert len(lens.layers) == model.n_layers(model.main_block) and lens.answer_rank[-1] == 0


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_gpt2_step_by_step_walks_the_pre_ln_layer_to_its_output(folders, lang):
    """GPT-2 on Step by step: the pre-LN tabs draw LN_2 of the residual sum, the FFN and the layer output, and the
    output recomputed from its sublayers equals the model's own (the page's check passes, < 1e-5)."""
    want = {"add_norm_pre": t("steps.pre_sum_fig", lang, n=0, d=0, norm="LN").split(" · ")[0], "output_pre": None}
    for tab, title in want.items():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        at.query_params.update({"model": "hl-gpt2", "text": TEXT, "lang": lang, "layer": "1"})
        at.run()
        at.switch_page(page_file("steps"))
        at.session_state["steps_tab"] = tab  # by its id (ui.widgets.localised_tabs)
        at.run()
        assert_ok(at)
        assert not at.error and not at.warning, [e.value for e in [*at.error, *at.warning]]
        assert t("steps.decoder_only", lang, norm="LN") in [c.value for c in at.caption]
        charts = [c for c in at.get("plotly_chart")]
        assert charts, tab
        if title:
            import json
            titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts]
            assert any(x.startswith(title) for x in titles), titles
        else:  # the layer output and its check against the model's own hidden state
            prefix = t("tour.ffn.check", lang, diff=0, layer=1).split("(")[0]
            ok = [s.value for s in at.success if s.value.startswith(prefix)]
            assert len(ok) == 1, [s.value for s in at.success]
            assert float(ok[0].rsplit(" ", 1)[-1].rstrip(").")) < 1e-5


def test_gpt2_tour_draws_its_sublayers(folders):
    """The tour's Add & Norm and Feed Forward steps on GPT-2: the pre-LN notice, the figures and the layer check."""
    from ui.tour import STEPS

    for key in ("add_norm", "ffn"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        at.query_params.update({"model": "hl-gpt2", "text": TEXT, "step": str(STEPS.index(key) + 1)})
        at.run()
        at.switch_page(page_file("tour"))
        at.query_params["step"] = str(STEPS.index(key) + 1)
        at.run()
        assert_ok(at)
        notes = " ".join(i.value for i in at.info)  # viz.model_notes, from the folder's config
        if key == "add_norm":
            assert "hl-gpt2 is pre-LN" in notes and "x + Sublayer(LayerNorm(x))" in notes
        else:
            assert "then GELU (tanh), then W_2" in notes and "gated" not in notes
        assert len(at.get("plotly_chart")) >= 3
        if key == "ffn":
            assert [s.value for s in at.success][0].startswith("Check: this equals the model's output of layer")


def test_gpt2_head_surgery_shows_the_next_token_before_and_after(folders):
    for lang in ("en", "ko"):
        at = _run("hl-gpt2", page_file("heads"), uh.K_TAB, t("heads.tab.surgery", "en"), lang)
        at.multiselect(key="hl_heads").set_value(["0.0", "1.1"])  # a later layer (2) is left to show the maps
        at.run()
        assert_ok(at)
        assert not at.error, [e.value for e in at.error]
        code = [c.value for c in at.code]
        assert code and code[0].startswith("before:" if lang == "en" else t("heads.surgery.outputs", lang, before="",
                                                                              after="")[:3]), code
        assert {t("heads.surgery.next_same", lang), t("heads.surgery.next_changed", lang)} & {
            m.value for m in [*at.success, *at.warning]}
        keys = [c.proto.id for c in at.get("plotly_chart")]
        assert len(keys) >= 3  # the top-k bars, the token change, before / after heatmaps
        assert t("heads.note.next", lang) in [c.value for c in at.caption]


def test_bart_runs_on_the_encoder_decoder_page_greedy_and_teacher_forced(folders):
    """A local BART on the Encoder-decoder page (issue 17, item 4): greedy decoding equals the model's own; teacher
    forcing reads the typed target, and every step's attention equals the model's trace with that target."""
    import numpy as np

    from analysis.decoding import teacher_forced_run
    from model.registry import load_model

    model = load_model("hl-bart", "cpu")
    for lang in ("en", "ko"):
        at = _run("hl-bart", page_file("seq2seq"), None, None, lang)
        assert_ok(at)
        assert not at.error, [e.value for e in at.error]
        assert at.caption[0].value == t("s2s.caption_folder", lang, model="hl-bart")
        assert "task" not in [r.key for r in at.radio]  # no task to choose
        gen = model.trace(TEXT).meta["generated_tokens"]
        assert at.code[1].value == " ".join(gen)
        at.toggle(key="teacher_forcing").set_value(True).run()
        assert [i.value for i in at.info] == [t("s2s.need_target", lang)]
        at.text_input(key="s2s_target").set_value("the mat sat").run()
        assert_ok(at)
        assert not at.error, [e.value for e in at.error]
        want = [*model.tokenizer.encode("the mat sat", add_special_tokens=False).tokens,
                model.tokenizer.id_to_token(model.eos_id)]
        assert at.code[1].value == " ".join(want)
    run = teacher_forced_run(model, TEXT, target="the mat sat")
    tr = model.trace(TEXT, target="the mat sat")
    assert run.source_tokens == tr.source_tokens and [s.inputs[-1] for s in run.steps] == tr.target_tokens
    last = run.steps[-1]
    np.testing.assert_allclose(last.self_attention, tr.decoder_self_attention, atol=1e-6)
    np.testing.assert_allclose(run.cross_matrix(len(run.steps)), tr.cross_attention, atol=1e-6)


def test_bart_head_lab_reads_bart_not_seq2seq_tiny(folders):
    """The Head lab's logit lens and surgery on a local BART use that model (no task to choose)."""
    from analysis.heads import logit_lens
    from model.registry import load_model

    at = _run("hl-bart", page_file("heads"), uh.K_TAB, t("heads.tab.beyond", "en"))
    assert_ok(at)
    assert not at.error and "hl_lens_task" not in [r.key for r in at.radio], [e.value for e in at.error]
    lens = logit_lens(load_model("hl-bart", "cpu"), TEXT)
    import json

    import numpy as np

    lens_fig = [f for f in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
                if f["data"][0].get("colorscale") and f["data"][0].get("texttemplate") == "%{text}<br>%{z:.2f}"]
    assert len(lens_fig) == 1  # the lens heatmap: BART's own top tokens, layer by layer
    np.testing.assert_allclose(np.array(lens_fig[0]["data"][0]["z"]), lens.top_probs, atol=1e-6)
    import html

    shown = [[html.unescape(x) for x in r] for r in lens_fig[0]["data"][0]["text"]]  # escaped for plotly's HTML
    assert shown == [list(r) for r in lens.top_tokens]
    at = _run("hl-bart", page_file("heads"), uh.K_TAB, t("heads.tab.surgery", "en"))
    at.multiselect(key="hl_heads").set_value(["0.1"]).run()
    assert_ok(at)
    assert not at.error and "hl_task" not in [r.key for r in at.radio]
    assert {m.value for m in [*at.success, *at.warning]} & {t("heads.surgery.next_same"), t("heads.surgery.next_changed")}


def test_bart_decoder_with_its_own_head_count(folders):
    """hl-bart has 2 encoder layers of 3 heads and 3 decoder layers of 7: the sidebar offers each block's own layers
    and heads, a link to a decoder layer and head the encoder lacks opens them, and every page and tab runs there."""
    for block, n, layers in (("encoder", 3, 2), ("decoder_self", 7, 3), ("cross", 7, 3)):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        at.query_params.update({"model": "hl-bart", "text": TEXT, "block": block, "head": str(n - 1),
                                "layer": str(layers - 1)})
        at.run()
        assert_ok(at)
        assert not at.error and not at.warning, [e.value for e in [*at.error, *at.warning]]
        head = at.sidebar.selectbox(key="head")
        assert len(head.options) == n and head.value == n - 1
        assert at.sidebar.selectbox(key="layer").value == layers - 1
        for page, (key, labels) in PAGES.items():  # every page and tab, on the last layer and head of the block
            for label in labels or STEP_TABS["hl-bart"]:
                at.switch_page(page)
                if key:
                    at.session_state[key] = label
                at.run()
                assert_ok(at)
                assert not at.error, (block, page, label, [e.value for e in at.error])
