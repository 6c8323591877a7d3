"""The guided tour's claims against each model's own config (issue 34: the tour told a lecturer that SmolLM2 adds a
bias b, that its layer output is a second Add & Norm, that it has LN_1, that the sidebar's model runs only the encoder
steps, and drew two identical panels for RoPE). All 16 steps walked with Next on every kind of model, in English and
Korean, and every caption and formula checked against TransformerConfig:

    bias          "+ b^Q", "+ b^O", "b_1" and the captions that name a bias: shown iff the model has that bias
    norm kind     LayerNorm or RMSNorm in the formulas and titles; LN_1 / LN_2 only on a LayerNorm model
    placement     post-LN: LayerNorm(x + Sublayer(x)) and "the second Add & Norm"; pre-LN: x + Sublayer(Norm(x))
                  and a layer output that is a plain residual sum
    positions     sinusoidal: sin/cos and X, PE, X + PE; learned: P[pos]; rotary: no X + PE panels but q and k
                  before and after RoPE
    decoder steps an encoder: seq2seq-tiny, said so; a decoder-only model: its own masked self-attention (12) and
                  next-token probabilities (14), seq2seq-tiny's cross-attention (13) with the reason; an
                  encoder-decoder (seq2seq-tiny, a translator, a BART folder, paper-base): its own decoder

The models: minilm-l6 and multilingual-e5-small (encoders, post-LN, learned positions), smollm2-135m (decoder-only,
pre-LN RMSNorm, rotary, no biases), a tiny random GPT-2 folder (decoder-only, pre-LN LayerNorm with biases, learned
positions), a tiny random BART folder (encoder-decoder), seq2seq-tiny, bergamot-en-pt (a translator) and paper-base
(sinusoidal)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from apptest_support import assert_ok
from hf_support import make_bart, make_gpt2
from streamlit.testing.v1 import AppTest

from i18n import t
from model.registry import REGISTRY, get_spec, register_local_models
from ui import quiz, tour
from ui.pages import page_file
from viz.tour import decoder_source

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The animal didn't cross the street"
MODELS = ["minilm-l6", "multilingual-e5-small", "smollm2-135m", "hl-gpt2", "hl-bart", "seq2seq-tiny",
          "bergamot-en-pt", "paper-base"]
FALLBACK = "seq2seq-tiny"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tour-models")
    paths = [make_gpt2(root / "hl-gpt2")[1], make_bart(root / "hl-bart")[1]]
    specs = register_local_models(",".join(str(p) for p in paths))
    yield {s.name for s in specs}
    for s in specs:  # other tests see the built-in registry only
        REGISTRY.pop(s.name, None)


@dataclass
class Screen:
    """What one step showed: its texts (markdown, notes, captions), formulas and figure titles."""

    heading: str
    markdown: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    latex: str = ""
    titles: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join([self.heading, *self.markdown, *self.info, *self.captions, *self.titles, self.latex])


def _walk(model: str, lang: str) -> dict[str, Screen]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"model": model, "text": TEXT, "lang": lang})
    at.run()
    at.switch_page(page_file("tour")).run()
    screens = {}
    for i, key in enumerate(tour.STEPS, start=1):
        assert_ok(at)
        assert at.subheader[0].value == t("tour.step_title", lang, i=i, n=tour.N_STEPS, title=t(f"tour.{key}.title", lang))
        screens[key] = Screen(
            at.subheader[0].value, [m.value for m in at.markdown], [x.value for x in at.info],
            [c.value for c in at.caption], "\n".join(x.value.strip("$").strip() for x in at.latex),
            [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")])
        if i < tour.N_STEPS:
            at.button(key="tour_next_top").click().run()
    return screens


def _has(text: str, pattern: str) -> bool:
    return re.search(pattern, text) is not None


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("model", MODELS)
def test_every_step_says_what_the_config_says(folders, model, lang):
    cfg = get_spec(model).read_config()
    screens = _walk(model, lang)
    qkv, concat, add_norm, ffn, pos = (screens[k] for k in ("qkv", "concat", "add_norm", "ffn", "positional"))
    rms, pre = cfg.norm == "rmsnorm", cfg.norm_placement == "pre"

    # ---- biases: "+ b" iff the model has that bias (formulas and captions)
    assert _has(qkv.latex, r"\+ b\^\{V\}") == cfg.has_qkv_bias, qkv.latex
    v_caption = t("steps.cap.QKV" if cfg.has_qkv_bias else "steps.cap.QKV_no_bias", lang, n=_n(qkv), k=cfg.d_k)
    other = t("steps.cap.QKV_no_bias" if cfg.has_qkv_bias else "steps.cap.QKV", lang, n=_n(qkv), k=cfg.d_k)
    assert v_caption in qkv.captions and other not in qkv.captions, qkv.captions
    assert _has(concat.latex, r"\+ b\^\{O\}") == cfg.bias, concat.latex
    assert t("steps.cap.output" if cfg.bias else "steps.cap.output_no_bias", lang) in concat.captions
    assert ("b_1" in ffn.latex) == ("b_2" in ffn.latex) == cfg.bias, ffn.latex
    assert any(x.startswith("x W_1 + b_1") for x in ffn.titles) == cfg.bias, ffn.titles
    for s in screens.values():  # no bias claimed anywhere for a model without them
        if not cfg.bias:
            assert "b_1" not in s.latex and "b^{O}" not in s.latex and "b^{Q}" not in s.latex, s.heading
            assert t("steps.cap.QKV", lang, n=_n(qkv), k=cfg.d_k) not in s.captions

    # ---- the norm's kind and placement
    norm_tex = r"\operatorname{RMSNorm}" if rms else r"\operatorname{LayerNorm}"
    assert norm_tex in add_norm.latex and (r"\operatorname{LayerNorm}" in add_norm.latex) != rms
    if pre:
        assert add_norm.latex.startswith(rf"x + \operatorname{{Sublayer}}({norm_tex}(x))")
        assert t("tour.add_norm.body_pre", lang, norm=t(f"notes.norm.{cfg.norm}", lang)) in add_norm.markdown
        norm = "RMSNorm" if rms else "LN"
        assert t("steps.pre_sum_fig", lang, n=_n(qkv), d=cfg.d_model, norm=norm) in add_norm.titles
        assert t("tour.ffn.out_fig_pre", lang, layer=0, norm=norm) in ffn.titles
        assert t("tour.ffn.body_pre", lang, norm=t(f"notes.norm.{cfg.norm}", lang)) in ffn.markdown
        assert "Add & Norm" not in ffn.text, ffn.text  # its layer output is a plain residual sum
    else:
        assert add_norm.latex.startswith(rf"{norm_tex}(x + \operatorname{{Sublayer}}(x))")
        assert t("tour.ffn.out_fig", lang, layer=0) in ffn.titles and t("tour.ffn.body", lang) in ffn.markdown
    for s in (add_norm, ffn):
        assert ("LN_1" in s.text or "LN_2" in s.text) == (pre and not rms), s.heading
        if rms:
            assert "LayerNorm" not in s.latex and "β" not in s.titles[-1]

    # ---- positions (step 3)
    if cfg.positional == "rotary":
        assert t("tour.positional.fig", lang) not in pos.titles  # X + nothing: no two identical panels
        assert [x.split("  ·  ")[0] for x in pos.titles[:4]] == [
            t("stage.Q_proj", lang), t("stage.K_proj", lang), t("steps.rope_title", lang, name="Q"),
            t("steps.rope_title", lang, name="K")]
        assert len(pos.titles) == 5 and r"R_{\Theta, m}" in pos.latex
        assert ("depends only on" in pos.latex) == (lang == "en")  # the formula's words in the interface language
    else:
        assert pos.titles == [t("tour.positional.fig", lang)]
        assert (r"\sin" in pos.latex) == (cfg.positional == "sinusoidal")
        assert ("P[pos]" in pos.latex) == (cfg.positional == "learned")

    # ---- the words inside formulas speak the interface language (step 1's "text", step 3's "depends only on")
    assert (r"\text{text}" in screens["tokens"].latex) == (lang == "en")
    assert (r"\text{텍스트}" in screens["tokens"].latex) == (lang == "ko")

    # ---- the decoder steps: whose decoder, said above each
    _check_decoder_steps(model, lang, cfg, screens)


def _n(screen: Screen) -> int:
    """The number of tokens, read from the step's first figure title ("Q = X W_Q (query)  ·  Q: 9 × 32")."""
    return int(re.search(r": (\d+) × ", screen.titles[0]).group(1))


def _check_decoder_steps(model: str, lang: str, cfg, screens: dict[str, Screen]) -> None:
    kind = cfg.kind
    dec_self, cross, out = (screens[k] for k in ("decoder_self", "cross", "output"))
    assert [decoder_source(k, kind) for k in ("decoder_self", "cross", "output")] == {
        "encoder": ["fallback"] * 3, "decoder": ["own", "fallback", "own"], "encoder-decoder": ["own"] * 3}[kind]
    if kind == "encoder":
        note = t("tour.dec.note.encoder", lang, model=model, fallback=FALLBACK)
        assert all(note in s.info for s in (dec_self, cross, out))
        assert _has(out.latex, r"\+ b\)") and r"P(y_t" in out.latex  # seq2seq-tiny's output layer has a bias
    elif kind == "decoder":
        last = tour.STEPS.index("ffn") + 1
        assert t("tour.dec.note.self_own", lang, model=model, fallback=FALLBACK, last=last) in dec_self.info
        assert [x.split("  ·  ")[0] for x in dec_self.titles] == [t("stage.masked", lang), t("stage.weights", lang)]
        assert t("tour.dec.note.cross_none", lang, model=model, fallback=FALLBACK, last=last) in cross.info
        assert t("tour.dec.note.output_own", lang, model=model, fallback=FALLBACK, last=last) in out.info
        assert out.titles == [t("tour.dec.fig.next", lang, model=model, k=5)]
        assert r"P(t_n" in out.latex and _has(out.latex, r"\+ b\)") == cfg.output_bias
        for s in (dec_self, out):
            assert FALLBACK not in s.text, s.heading  # its own decoder, not seq2seq-tiny's
        assert t("tour.decoder_self.title", lang) in dec_self.heading
    else:
        for s in (dec_self, cross, out):
            assert model == FALLBACK or FALLBACK not in s.text, s.heading  # its own decoder
            assert any(f"**{model}" in i for i in s.info), s.info
        assert _has(out.latex, r"\+ b\)") == cfg.output_bias and r"P(y_t" in out.latex
        if get_spec(model).trained is False:
            assert all(t("tour.dec.note.untrained", lang) in " ".join(s.info) for s in (dec_self, cross, out))


# ---- the Step by step page draws the same stages: its captions and formulas follow the same flags ----------------
def _steps_tab(model: str, tab: str, lang: str = "en") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"model": model, "text": TEXT, "lang": lang})
    at.run()
    at.switch_page(page_file("steps"))
    at.session_state["steps_tab"] = tab  # the tab by its id (ui.widgets.localised_tabs)
    at.run()
    assert_ok(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize("model", ["smollm2-135m", "minilm-l6"])
def test_step_by_step_page_biases_follow_the_model(model):
    cfg = get_spec(model).read_config()
    at = _steps_tab(model, "qkv")
    latex = " ".join(x.value for x in at.latex)
    caps = " ".join(c.value for c in at.caption)
    assert ("+ b^{V}_{0}" in latex) == ("+ b^{Q}_{0}" in latex) == cfg.has_qkv_bias, latex
    assert ("adds its bias b" in caps) == cfg.has_qkv_bias and ("no bias here" in caps) == (not cfg.has_qkv_bias)
    at = _steps_tab(model, "concat")
    assert ("b^{O}" in " ".join(x.value for x in at.latex)) == cfg.bias
    at = _steps_tab(model, "ffn")
    latex = " ".join(x.value for x in at.latex)
    assert ("b_1" in latex) == ("b_2" in latex) == cfg.bias, latex
    if cfg.norm_placement == "pre":  # SmolLM2: RMSNorm_1 / RMSNorm_2, never LN_1 / LN_2
        for tab in ("add_norm_pre", "output_pre"):
            at = _steps_tab(model, tab)
            shown = " ".join([*(x.value for x in at.latex), *(c.value for c in at.caption),
                              *(json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart"))])
            assert "RMSNorm_2" in shown and "LN_1" not in shown and "LN_2" not in shown, shown
            assert "second Add & Norm" not in shown


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_quiz_on_a_decoder_only_model(lang):
    """Step 9's question (which head is the previous-token head?) on SmolLM2 reads its own causal stack's metrics
    (it has no encoder block), and step 14's own next-token figure shows with the quiz on."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"model": "smollm2-135m", "text": TEXT, "lang": lang,
                            "step": str(tour.STEPS.index("concat") + 1), "layer": "3"})
    at.run()
    at.switch_page(page_file("tour")).run()
    at.toggle(key="quiz_on").set_value(True).run()
    assert_ok(at)
    qid = quiz._qid("prev", "smollm2-135m", TEXT, 3)
    assert at.button(key=f"{qid}_reveal").disabled  # asked, not yet answered
    assert f"**{t('quiz.heading', lang)}**" in [m.value for m in at.markdown]
    for _ in range(5):
        at.button(key="tour_next_top").click().run()
    assert_ok(at)
    assert at.subheader[0].value.startswith(t("tour.step_title", lang, i=14, n=len(tour.STEPS), title="")[:8])
    assert [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")] == [
        t("tour.dec.fig.next", lang, model="smollm2-135m", k=5)]
