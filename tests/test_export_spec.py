"""A builder's figure carries its export (viz/export_spec.py), and ui.widgets.chart reads it when a page gives no
Export: for each converted builder, the Export made from the attached spec is exactly the one its page built by hand
before (main 3ca6eb1): the same matrix (values and dtype), labels, title, subtitle, file name and twin arguments."""

import numpy as np
import pytest

from analysis.masks import example_masks
from ui import widgets
from ui.widgets import Export, chart
from viz import cause as vc
from viz import masks as vm
from viz.export_spec import ExportSpec, attach, spec_of
from viz.heatmap import heatmap


def same(a: Export, b: Export) -> None:
    """Two Exports hold the same data: arrays bit for bit (and dtype), everything else equal; an unset twin argument
    (None) is the same as one not named (heatmap_figure's defaults are None)."""
    assert a.matrix.dtype == b.matrix.dtype and a.matrix.shape == b.matrix.shape
    assert np.array_equal(a.matrix, b.matrix, equal_nan=True)
    assert (a.rows, a.cols, a.title, a.subtitle, a.filename) == (b.rows, b.cols, b.title, b.subtitle, b.filename)
    assert a.make_figure is None and b.make_figure is None
    ka = {k: v for k, v in (a.heatmap or {}).items() if v is not None}
    kb = {k: v for k, v in (b.heatmap or {}).items() if v is not None}
    assert ka.keys() == kb.keys()
    for k in ka:
        assert np.array_equal(ka[k], kb[k]), k


def test_heatmap_attaches_what_it_was_given():
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    masked = np.array([[False, True, False], [False, False, True]])
    fig = heatmap(m, ["a", "b"], ["x", "y", "z"], title="T", zmin=0.0, zmax=5.0, masked=masked)
    spec = spec_of(fig)
    assert spec.matrix is m and spec.rows == ["a", "b"] and spec.cols == ["x", "y", "z"] and spec.title == "T"
    assert spec.heatmap_kwargs() == {"vmin": 0.0, "vmax": 5.0, "masked": masked}
    assert "_lazy" in vars(fig)  # read without building the lazy figure
    assert fig.layout.title.text == "T" and spec_of(fig) is spec  # still there once plotly has built it
    assert ExportSpec(m).heatmap_kwargs() == {} and spec_of(object()) is None and spec_of(3) is None
    assert "_export_spec" not in str(fig.to_dict())  # never sent to the browser


def test_mask_heatmap_exports_as_the_mask_lab_did():
    words = ["I", "am", "sam", "<pad>"]
    for name, mask in example_masks(words).items():  # ui/mask_lab.py draw_mask_examples
        title = f"masks.example.{name}"
        fig = vm.mask_heatmap(mask, words, words, title=title, lang="en")
        old = Export(mask.astype(int), words, words, title, "I am sam", f"mask-{name}", heatmap=dict(vmin=0, vmax=1))
        same(Export.of(spec_of(fig), "I am sam", f"mask-{name}"), old)
        assert Export.of(spec_of(fig), "I am sam", f"mask-{name}").matrix.dtype.kind == "i"


def stages_of(n: int = 4, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(n, n)).astype(np.float32)
    mask = np.tril(np.ones((n, n), dtype=bool))
    scaled = np.where(mask, scores / 2, -np.inf).astype(np.float32)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return {"scores": scores, "scaled": scaled, "mask": mask, "weights": (e / e.sum(axis=1, keepdims=True))}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_stage_figures_export_as_the_labs_did(lang):
    stages, tokens, title = stages_of(), ["a", "b", "a", "c"], "L0 H1"
    figs = vm.stage_figures(stages, tokens, tokens, title=title, lang=lang)
    assert list(figs) == ["scores", "masked", "weights"]
    for name, fig in figs.items():  # ui/labs.py draw_stages before
        mat = stages["weights"] if name == "weights" else stages["scaled" if name == "masked" else name]
        old = Export(mat, tokens, tokens, f"{name} · {title}", "a b a c", f"p-{name}",
                     heatmap=dict(masked=~stages["mask"] if name == "masked" else None))
        same(Export.of(spec_of(fig), "a b a c", f"p-{name}"), old)


def test_step_rows_export_as_the_generation_tab_did():
    rows = np.array([[0.5, 0.5, np.nan], [0.2, 0.3, 0.5]], dtype=np.float32)
    keys, labels = ["<s>", "Hi", "there"], ["Head 0", "Head 1"]
    fig = vc.step_rows(rows, keys, labels, title="step 2", lang="en", highlight=1)
    old = Export(np.nan_to_num(rows), labels, keys, "step 2", "Hi", "self-by-head")  # ui/generation.py row_pair
    new = Export.of(spec_of(fig), "Hi", "self-by-head")
    same(new, old)
    assert new.matrix[0, 2] == 0.0


def test_chart_reads_the_attached_export_only_when_named(monkeypatch):
    shown, popovers = [], []
    monkeypatch.setattr(widgets.st, "plotly_chart", lambda fig, **kw: shown.append((fig, kw)) or "state")
    monkeypatch.setattr(widgets, "export_popover", lambda key, export, fig=None: popovers.append((key, export, fig)))
    fig = attach(heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="t"), ExportSpec(np.eye(2, dtype=int), title="e"))
    assert chart(fig, "k", subtitle="s", filename="f") == "state"
    (key, export, f), = popovers
    assert (key, f) == ("k-export", fig)
    same(export, Export(np.eye(2, dtype=int), None, None, "e", "s", "f"))
    chart(fig, "k2")  # no file name: a figure drawn without an export, as before
    assert len(popovers) == 1 and len(shown) == 2
    given = Export(np.ones((1, 1)), filename="g")
    chart(fig, "k3", given, filename="ignored")  # a page's own Export wins
    assert popovers[-1][1] is given


def test_kv_rows_export_as_the_generation_tab_did():
    mat = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)  # (G * n_fed, d_k)
    labels = ["KV 0 · a", "KV 0 · b", "KV 1 · a"]
    fig = vc.kv_rows(mat, labels, title="keys appended", lang="en")
    old = Export(mat, labels, [str(i) for i in range(mat.shape[1])], "keys appended", "Hi", "appended-k")
    same(Export.of(spec_of(fig), "Hi", "appended-k"), old)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kv", [None, 1])
def test_head_map_exports_as_the_cause_tab_did(lang, kv):
    from ui.widgets import layer_head

    att = np.tril(np.full((3, 3), 1 / 3, dtype=np.float32))
    tokens = ["<b>x</b>", "y", "y"]  # markup stays plain text in the export (the figure's title is escaped)
    fig = vc.head_map(att, tokens, 2, 1, lang=lang, kv=kv)
    old = Export(att, tokens, tokens, layer_head(2, 1, lang, kv), "clean", "picked-head-attention")
    same(Export.of(spec_of(fig), "clean", "picked-head-attention"), old)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_head_lab_maps_export_as_the_head_lab_did(lang):
    from analysis.heads import EncoderEffect, ValueNorms
    from i18n import t
    from ui.widgets import layer_head
    from viz import heads as vh

    tokens = ["[CLS]", "the", "<script>", "the", "[SEP]"]  # a hostile token and a repeated one
    n, rng = len(tokens), np.random.default_rng(0)
    att = rng.uniform(size=(2, 3, n, n)).astype(np.float32)
    att /= att.sum(-1, keepdims=True)
    effect = EncoderEffect(tokens=tuple(tokens), heads=((0, 1),), mode="zero", token_cosine=np.linspace(0.9, 1, n),
                           sentence_cosine=0.98, attention_before=att, attention_after=att[::-1])
    vn = ValueNorms(tokens=tuple(tokens), special=tuple(x.startswith("[") for x in tokens), weights=att,
                    norms=att * 2, value_norms=np.ones((2, 3, n), np.float32))
    layer, head = 1, 2
    where = layer_head(layer, head, lang)
    for fig, key, att in zip(vh.before_after_heatmaps(effect, layer, head, lang=lang), ("hl_before", "hl_after"),
                             (effect.attention_before, effect.attention_after)):  # ui/heads.py surgery_maps before
        old = Export(att[layer, head], list(effect.tokens), list(effect.tokens),
                     f"{t(f'heads.viz.{key[3:]}_word', lang)} · {where}", "s", f"head-surgery-{key[3:]}")
        same(Export.of(spec_of(fig), "s", f"head-surgery-{key[3:]}"), old)
    delta = effect.attention_after[layer, head] - effect.attention_before[layer, head]
    old = Export(delta, list(effect.tokens), list(effect.tokens), t("heads.viz.ablation_delta", lang, where=where),
                 "s", "head-surgery-delta")
    same(Export.of(spec_of(vh.ablation_delta_heatmap(effect, layer, head, lang=lang)), "s", "head-surgery-delta"), old)
    for fig, key, m in zip(vh.value_norm_heatmaps(vn, layer, head, lang=lang), ("hl_weights", "hl_norms"),
                           (vn.weights, vn.norms)):  # ui/heads.py beyond_weights before: the norms, not the shares
        old = Export(m[layer, head], list(vn.tokens), list(vn.tokens),
                     f"{t(f'heads.beyond.{key[3:]}', lang)} · {where}", "s", f"value-{key[3:]}")
        same(Export.of(spec_of(fig), "s", f"value-{key[3:]}"), old)


def _popovers(tab: str | None = None) -> list[str]:
    """The Export popovers' keys on the mask lab (the tab with this label open), in drawing order."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from ui.pages import page_file

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    if tab is not None:
        at.session_state["mask_tab"] = tab
    at.switch_page(page_file("masks"))
    at.run()
    assert not at.exception
    return [p.proto.popover.id.removesuffix("-export-popover").split("-", 2)[2] for p in at.get("popover")]


def test_the_mask_lab_still_draws_each_converted_export():
    assert _popovers() == ["mask-pad_scores", "mask-pad_masked", "mask-pad_weights"]  # ui/labs.py draw_stages
    ahead = _popovers("Look-ahead mask and the combined decoder mask")
    assert ahead[:3] == ["ex_padding", "ex_causal", "ex_combined"]  # ui/mask_lab.py draw_mask_examples


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_dropout_figures_export_as_the_training_page_did(lang):
    from analysis.training import Dropout
    from viz import training as vt

    rng = np.random.default_rng(3)
    allowed = np.tril(np.ones((4, 4), dtype=bool))
    ev = np.where(allowed, rng.uniform(size=(4, 4)), 0).astype(np.float32)
    dropped = allowed & (rng.uniform(size=(4, 4)) < 0.3)
    d = Dropout(block="decoder_self", layer=1, head=0, p=0.1, seed=7, rows=("<b>", "a", "b", "c"),
                cols=("<b>", "a", "b", "c"), train=np.where(dropped, 0, ev / 0.9).astype(np.float32), eval=ev,
                dropped=dropped, allowed=allowed, train_out=("a",) * 4, eval_out=("a",) * 4)
    for fig, m, name in zip(vt.dropout_figures(d, lang=lang), (d.train, d.eval), ("train", "eval")):
        old = Export(m, list(d.rows), list(d.cols), vt.plain_title(fig.layout.title.text), "a b",
                     f"training-dropout-{name}")  # ui/training_page.py dropout_tab before
        same(Export.of(spec_of(fig), "a b", f"training-dropout-{name}"), old)
        assert "<" not in spec_of(fig).title.replace("<b>", "")  # plain text: no markup left


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("L", [2, 14])  # 14: a deep model's grid, drawn with its layers along x (still exported by layer)
def test_head_grids_export_as_their_pages_did(lang, L):
    from types import SimpleNamespace

    from i18n import t
    from viz import crosslingual as vx
    from viz import heads as vh

    def axes(grid):  # ui/heads.py, ui/cause.py axes and ui/crosslingual.py _axes before
        return ([t("ex.layer_n", lang, i=i) for i in range(grid.shape[0])],
                [t("ex.head_n", lang, i=h) for h in range(grid.shape[1])])

    rng = np.random.default_rng(L)
    grid = rng.uniform(size=(L, 3))  # float64, as the analyses return some grids
    sink = SimpleNamespace(scores=grid, tokens=("<s>", "a"))
    same(Export.of(spec_of(vh.sink_grid(sink, chosen=[(0, 1)], lang=lang)), "a b", "attention-sink"),
         Export(grid, *axes(grid), t("heads.sink.export", lang), "a b", "attention-sink"))
    ind = SimpleNamespace(induction=grid, previous=grid[::-1].astype(np.float32), repeat=5)
    for which in ("induction", "previous"):
        g = ind.induction if which == "induction" else ind.previous
        same(Export.of(spec_of(vh.induction_grid(ind, which, chosen=[(0, 0)], lang=lang)), "", f"{which}-scores"),
             Export(g, *axes(g), t(f"heads.{which}.export", lang, r=5), filename=f"{which}-scores"))
    side = SimpleNamespace(weight=grid.astype(np.float32), query_word="<b>", target_word="it")
    same(Export.of(spec_of(vx.weight_grid(side, zmax=1.0, shared=((0, 1),), lang=lang)), "A.", "figure"),
         Export(side.weight, *axes(side.weight), t("e5.xl.export", lang), "A."))  # its file name: the default
    for title in ("DLA <of> 'x'", "patching"):  # ui/cause.py DLA and patching grids (vc.grid: clickable)
        fig = vc.grid(grid, title=title, colorbar="c", chosen=[(1, 2)], lecture=False, lang=lang, zmax=None)
        same(Export.of(spec_of(fig), "clean / corrupt", "patching-heads"),
             Export(grid, *axes(grid), title, "clean / corrupt", "patching-heads"))
        assert fig.data[-1].name == "heads"  # the click markers were added to the same figure


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_minimal_pair_and_effect_maps_export_as_the_head_lab_did(lang):
    from types import SimpleNamespace

    from i18n import t
    from ui.widgets import layer_head
    from viz import heads as vh

    def axes(grid):  # ui/heads.py axes
        return ([t("ex.layer_n", lang, i=i) for i in range(grid.shape[0])],
                [t("ex.head_n", lang, i=h) for h in range(grid.shape[1])])

    rng = np.random.default_rng(5)
    change = rng.normal(size=(3, 4)).astype(np.float32)
    pair = SimpleNamespace(labels=("it", "<trophy>", "suitcase"), change=change, flipped=change > 1)
    same(Export.of(spec_of(vh.change_grid(pair, lang=lang)), "A sentence.", "figure"),
         Export(change, *axes(change), t("heads.pairs.export", lang), "A sentence."))  # the file name: the default
    delta = np.array([[0.1, np.nan], [-0.2, 0.05]])
    dmap = SimpleNamespace(labels=("the", "cat"), changed=(False, True), delta=delta, layer=2, head=3)
    same(Export.of(spec_of(vh.delta_heatmap(dmap, lang=lang)), "A / B", "figure"),
         Export(delta, ["the", "cat"], ["the", "cat"], f"B − A · {layer_head(2, 3, lang)}", "A / B"))
    grid = SimpleNamespace(sentence_change=change ** 2, token_change=change, mode="zero")
    same(Export.of(spec_of(vh.effect_grid(grid, chosen=[(0, 1)], lang=lang)), "s", "head-effects"),
         Export(grid.sentence_change, *axes(grid.sentence_change), t("heads.surgery.effect", lang), "s", "head-effects"))


@pytest.mark.parametrize("colorscale,masked", [("RdBu_r", False), ("Viridis", True)])
def test_stage_figures_export_as_step_by_step_and_the_tour_did(colorscale, masked):
    from viz.steps import Stage, stage_figure

    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    stage = Stage("scores", "Q Kᵀ", m, ["a", "<b>"], ["x", "y", "z"], "2 × 3", "", "", colorscale=colorscale,
                  masked=np.triu(np.ones((2, 3), dtype=bool), 1) if masked else None, xlabel="key", ylabel="")
    spec = spec_of(stage_figure(stage, lang="ko"))
    title = "minilm · Encoder · Layer 0 · Head 1"  # ui/steps_page.py draw_stage before (and ui/tour.py _stage_chart)
    old = Export(stage.matrix, stage.rows, stage.cols, f"{title} · {stage.title} ({stage.shape})", "I am", "f",
                 heatmap=dict(masked=stage.masked, cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
                              xlabel=stage.xlabel, ylabel=stage.ylabel))
    new = Export.of(spec, "I am", "f", context=title)
    same(new, old)
    assert new.heatmap["ylabel"] == ""  # an empty axis title stays empty (not the default key / query)
    assert Export.of(spec, "I am", "f").title == "Q Kᵀ (2 × 3)"  # no context: the builder's title alone


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_generation_grids_export_as_the_generation_tab_did(lang):
    from analysis import cause
    from i18n import t

    m = cause.kv_map(6, 2)  # (H, G)
    same(Export.of(spec_of(vc.kv_groups(m, lang=lang)), "", "kv-groups"),
         Export(m, [t("ex.head_n", lang, i=h) for h in range(6)], [t("cause.gen.kv_n", lang, g=g) for g in range(2)],
                t("cause.gen.groups_title", lang, h=6, g=2), filename="kv-groups"))
    by_layer = np.random.default_rng(2).uniform(size=(3, 5))
    same(Export.of(spec_of(vc.sink(by_layer, lang=lang, step=2)), "Hi", "sink-by-step"),
         Export(by_layer, [t("ex.layer_n", lang, i=i) for i in range(3)], [str(i) for i in range(5)],
                t("cause.gen.sink_title", lang), "Hi", "sink-by-step"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_head_lab_bars_scatter_lens_and_atlas_export_as_the_head_lab_did(lang):
    from analysis.atlas import LABELS, TOP_LABELS, Atlas
    from analysis.flow import FlowResult
    from analysis.heads import DecoderEffect, EncoderEffect, LogitLens, ValueNorms
    from i18n import head_name, t
    from viz import heads as vh

    tokens, model = ["[CLS]", "the", "<script>", "the", "[SEP]"], "minilm <b>"
    n, rng = len(tokens), np.random.default_rng(1)
    att = rng.uniform(size=(2, 3, n, n)).astype(np.float32)
    deff = DecoderEffect(source_tokens=tuple(tokens), task="copy", heads=(("decoder", 0, 1),), mode="zero",
                         expected=None, output_before=("a",), output_after=("b",), text_before="a", text_after="b",
                         step=0, top_before=(("a", 0.5),), top_after=(("b", 0.4),),
                         compared=(("<script>", 0.5, 0.1), ("b", 0.2, 0.4)))
    rows = deff.top_rows()  # ui/heads.py surgery and next_token_surgery before
    same(Export.of(spec_of(vh.top_k_bars(deff, lang=lang, model=model)), "s", "head-surgery-top5"),
         Export(np.array([[r["before"], r["after"]] for r in rows]), [r["token"] for r in rows],
                [t("heads.viz.before_word", lang), t("heads.viz.after_word", lang)],
                t("heads.surgery.top5", lang, model=model), "s", "head-surgery-top5"))
    effect = EncoderEffect(tokens=tuple(tokens), heads=((0, 1),), mode="zero", token_cosine=np.linspace(0.9, 1, n),
                           sentence_cosine=0.98, attention_before=att, attention_after=att[::-1])
    same(Export.of(spec_of(vh.token_change_bars(effect, lang=lang, model=model)), "s", "head-surgery-token-change"),
         Export(effect.token_change[None], ["1 - cos"], list(effect.tokens),
                t("heads.surgery.token_change", lang, model=model), "s", "head-surgery-token-change"))
    vn = ValueNorms(tokens=tuple(tokens), special=tuple(x.startswith("[") for x in tokens), weights=att,
                    norms=att * rng.uniform(size=att.shape).astype(np.float32), value_norms=np.ones((2, 3, n)))
    share = np.stack([vn.special_weight_share.ravel(), vn.special_norm_share.ravel()], axis=1)  # beyond_weights
    H = vn.weights.shape[1]
    same(Export.of(spec_of(vh.special_share_scatter(vn, lang=lang, specials="[CLS]/[SEP]")), "s", "special-shares"),
         Export(share, [head_name(i // H, i % H, lang) for i in range(len(share))],
                [t("heads.beyond.weight_share", lang), t("heads.beyond.norm_share", lang)],
                t("heads.beyond.specials", lang), "s", "special-shares"))
    fr = FlowResult(tokens=tuple(tokens), token=2, rollout=np.full(n, 1 / n), flow=np.linspace(0, 1, n),
                    rollout_matrix=np.zeros((2, n, n)))
    same(Export.of(spec_of(vh.flow_bars(fr, lang=lang)), "s", "attention-flow"),
         Export(np.stack([fr.rollout, fr.flow]), [t("heads.viz.rollout", lang), t("heads.viz.flow", lang)],
                list(fr.tokens), t("heads.beyond.flow", lang), "s", "attention-flow"))
    lens = LogitLens(step=1, prefix=("<bos>",), answer="<script>", layers=(0, 1), answer_prob=np.ones(2),
                     top_tokens=(("<script>", "a", "b"), ("c", "d", "e")), answer_rank=np.zeros(2),
                     top_probs=np.array([[0.5, 0.3, 0.2], [0.6, 0.3, 0.1]]))  # float64: kept as given
    same(Export.of(spec_of(vh.logit_lens_heatmap(lens, lang=lang)), "s", "logit-lens"),
         Export(lens.top_probs, [t("heads.viz.dec_layer", lang, i=la) for la in lens.layers],
                [f"top {k + 1}" for k in range(lens.top_probs.shape[1])], t("heads.beyond.lens", lang), "s",
                "logit-lens"))
    L, H = 2, 3
    top = tuple(tuple(TOP_LABELS[(la * H + h) % len(TOP_LABELS)] for h in range(H)) for la in range(L))
    at = Atlas(model="<script>", sentences=("a",), n_coref=0, per_sentence={}, top_label=top, seconds=0.0,
               scores={k: np.full((L, H), 0.5) for k in (*LABELS, "coref_mass")})
    idx = at.top_label_index().astype(float)  # ui/heads.py atlas before (its axes helper: layer / head names)
    same(Export.of(spec_of(vh.atlas_grid(at, chosen=[(0, 1)], lang=lang)), "", "head-atlas"),
         Export(idx, [t("ex.layer_n", lang, i=i) for i in range(L)], [t("ex.head_n", lang, i=h) for h in range(H)],
                t("heads.atlas.export", lang), filename="head-atlas"))
    assert idx.dtype == np.float64 and sorted(set(idx.ravel())) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def decoding_run(steps: int = 3, task: str | None = "copy", model: str = "seq2seq-tiny"):
    """A small synthetic DecodingRun (a hostile token among its inputs) with an SSRU's forget gates beside it."""
    from analysis.decoding import DecodingRun, Step

    rng = np.random.default_rng(4)
    src, outs, out = ["<copy>", "the", "<script>", "cat", "<eos>"], ["the", "<script>", "<eos>"][:steps], []
    for s in range(1, steps + 1):
        sa = rng.uniform(size=(2, 4, s, s)) * np.tril(np.ones((s, s)))
        cr = rng.uniform(size=(2, 4, len(src)))
        out.append(Step(inputs=["<bos>", *outs[: s - 1]], self_attention=(sa / sa.sum(-1, keepdims=True)).astype(
            np.float32), cross_row=(cr / cr.sum(-1, keepdims=True)).astype(np.float32),
            top_tokens=[outs[s - 1], "<b>", "a", "b", "c"], chosen=outs[s - 1],
            top_probs=np.array([0.6, 0.2, 0.1, 0.06, 0.04], dtype=np.float32)))
    return DecodingRun(task=task, mode="greedy", source_tokens=src, steps=tuple(out), expected=outs, model=model,
                       forget_gates=rng.uniform(size=(2, steps, 6)).astype(np.float32))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("task,teacher,head", [("copy", False, 1), (None, True, "mean")])
def test_decoding_figures_export_as_the_encoder_decoder_page_did(lang, task, teacher, head):
    from i18n import t
    from viz import alignment as va
    from viz import seq2seq as vs

    run, step, layer = decoding_run(task=task), 2, 1
    title = " · ".join(x for x in (run.model, run.task, vs.head_name(layer, head, lang)) if x)  # ui/seq2seq.py figures
    name = f"{run.model}-{run.task}" if run.task else run.model
    fig, mat, blocked, labels = vs.self_attention_figure(run, step, layer, head, full=teacher, lang=lang)
    same(Export.of(spec_of(fig), "s", f"{name}-decoder-self-step{step}"),
         Export(mat, labels, labels, t("s2s.fig.self", lang, where=title), "s", f"{name}-decoder-self-step{step}",
                heatmap=dict(masked=blocked, vmin=0, vmax=1)))
    assert mat.shape == ((3, 3) if teacher else (2, 2)) and blocked[0, 1] and not blocked[1, 0]
    fig, cmat, rows = vs.cross_figure(run, step, layer, head, full=teacher, lang=lang)
    same(Export.of(spec_of(fig), "s", f"{name}-cross-step{step}"),
         Export(cmat, rows, run.source_tokens, t("s2s.fig.cross", lang, where=title), "s", f"{name}-cross-step{step}",
                heatmap=dict(vmin=0, vmax=1, xlabel=t("s2s.axis.source_short", lang),
                             ylabel=t("s2s.axis.input", lang))))
    probs, prow, pcol = vs.topk_table(run)
    same(Export.of(spec_of(vs.topk_figure(run, step, lang=lang)), "s", f"{name}-top5"),
         Export(probs, prow, pcol, t("s2s.export.topk", lang, model=run.model), "s", f"{name}-top5",
                heatmap=dict(vmin=0, vmax=1)))
    gates, s = run.forget_gates[layer, :step], run.steps[step - 1]  # ui/seq2seq.py ssru_figure
    ftitle = t("s2s.fig.forget", lang, layer=layer, step=step)
    same(Export.of(spec_of(va.forget_gate_figure(s.inputs, gates, lang=lang, title=ftitle)), "s", "g"),
         Export(gates.T, [f"c{i}" for i in range(gates.shape[1])], list(s.inputs), ftitle, "s", "g",
                heatmap=dict(vmin=0, vmax=1)))
    weights, out = vs.pick(run.cross_matrix(len(run.steps)), layer, head), run.output_tokens  # alignment
    where = vs.head_name(layer, head, lang)
    kw = dict(lang=lang, merge=True, drop_special=True, source_special=[x == "</s>" for x in run.source_tokens],
              target_special=[x == "</s>" for x in out], title=t("s2s.fig.alignment", lang, where=where))
    old = Export(weights, list(out), list(run.source_tokens), t("s2s.fig.alignment", lang, where=where), "s",
                 f"{run.model}-alignment", heatmap=dict(vmin=0, vmax=1))
    for fig in (va.alignment_lines_figure(run.source_tokens, out, weights, threshold=0.3, **kw),
                va.alignment_matrix_figure(run.source_tokens, out, weights, **kw)):
        same(Export.of(spec_of(fig), "s", f"{run.model}-alignment"), old)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_tour_next_token_and_forget_gate_export_as_the_tour_did(lang):
    from i18n import t
    from viz import alignment as va
    from viz import tour as vt
    from viz.theme import esc

    probs, shown = [0.5, 0.25, 0.125], ["␣the", "<b>", "↵"]  # ui/tour_decoder.py _own_output before
    title = t("tour.dec.fig.next", lang, model="gpt2 <x>", k=len(shown))
    fig = vt.ranked_bars(probs, shown, answer=0, title=esc(title, 200), ylabel=t("tour.axis.probability", lang),
                         export_title=title)
    same(Export.of(spec_of(fig), "s", "gpt2-next-token"),
         Export(np.array([probs]), [t("tour.axis.probability", lang)], shown, title, "s", "gpt2-next-token"))
    run, step, layer, name = decoding_run(), 2, 1, "opus-en-pt"  # ui/tour_decoder.py _forget_gate before
    s, gates = run.steps[step - 1], run.forget_gates[layer, :step]
    title = t("trpages.tour.fig.forget", lang, layer=layer, step=step)
    fig = va.forget_gate_figure(s.inputs, gates, lang=lang, title=f"{esc(title, 120)}<br><sup>{va.FORMULA}</sup>",
                                export_title=title)
    filename = f"{name}-forget-gate-L{layer}-step{step}"
    same(Export.of(spec_of(fig), "s", filename, context=name),
         Export(gates.T, [f"c{i}" for i in range(gates.shape[1])], list(s.inputs), f"{name} · {title}", "s", filename,
                heatmap=dict(vmin=0, vmax=1)))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_next_token_bars_export_as_the_explorer_did(lang):
    from i18n import t
    from viz.next_token import next_token_figure

    shown, probs = ["␣the", "<b>", "␣the"], [0.5, 0.3, 0.2]  # a repeated label kept twice; ui/explorer.py before
    same(Export.of(spec_of(next_token_figure(shown, probs, lang=lang)), "s", "gpt2-next-token"),
         Export(np.array([probs]), [t("ex.next.prob", lang)], shown, t("ex.next.fig", lang, k=3), "s",
                "gpt2-next-token"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_cause_bars_residual_and_costs_export_as_the_cause_tab_did(lang):
    from i18n import t
    from ui.widgets import layer_head

    rng = np.random.default_rng(6)
    head, mlp, bias = rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=3)  # ui/cause.py dla before
    title = t("cause.dla.parts_title", lang)
    per_layer = np.stack([head.sum(1) + bias, mlp])
    same(Export.of(spec_of(vc.dla_parts(head, mlp, bias, 0.5, title=title, lang=lang)), "clean", "dla-layers"),
         Export(per_layer, [t("cause.dla.heads", lang), t("cause.dla.mlps", lang)], ["0", "1", "2"], title, "clean",
                "dla-layers"))
    grid = rng.normal(size=(3, 4))  # float64, drawn as float32; ui/cause.py patching before
    clean, corrupt = ["<s>", "Paris", "is", "in"], ["<s>", "Rome", "is", "in"]
    title = t("cause.patch.residual_title", lang)
    fig = vc.residual_grid(grid, clean, corrupt, title=title, colorbar="Δ", lang=lang, zmax=None)
    same(Export.of(spec_of(fig), "a / b", "patching-residual"),
         Export(grid, [t("ex.layer_n", lang, i=i) for i in range(3)], clean, title, "a / b", "patching-residual"))
    values = {t("cause.picked.dla", lang): 0.25, t("cause.picked.patch_raw", lang): -0.125}  # ui/cause.py picked
    name = layer_head(2, 1, lang, 0)
    same(Export.of(spec_of(vc.head_bars(values, title=name)), "clean", "picked-head"),
         Export(np.array([list(values.values())]), [name], list(values), name, "clean", "picked-head"))
    c = {"cache_kib": np.array([1.0, 2.0, 3.0]), "macs_cached": np.array([10, 20, 30]),  # ui/generation.py costs
         "macs_full": np.array([10, 40, 90]), "ms_cached": np.array([0.5, 0.6, 0.7]),
         "ms_full": np.array([0.5, np.nan, 1.5])}
    keys = {"cache": ("cache_kib",), "macs": ("macs_cached", "macs_full"), "time": ("ms_cached", "ms_full")}
    for which in ("cache", "macs", "time"):
        mat = np.stack([np.asarray(c[x], dtype=float) for x in keys[which]])
        same(Export.of(spec_of(vc.costs(c, which=which, lang=lang)), "Hi", f"cost-{which}"),
             Export(mat, list(keys[which]), ["0", "1", "2"], t(f"cause.gen.cost_{which}", lang), "Hi", f"cost-{which}"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_teacher_forcing_figures_export_as_the_training_page_did(lang):
    from analysis.training import StepLogits, TeacherForcing
    from i18n import t
    from viz import training as vt

    rng = np.random.default_rng(8)
    dec, cols = ("<bos>", "a", "<b>"), ("a", "<b>", "<eos>")
    probs = rng.uniform(size=(3, 3)).astype(np.float32)
    logits = StepLogits(columns=cols, probs=probs, label_prob=probs[:, 0], loss=np.ones(3), argmax=cols, mean_loss=1.5)
    tf = TeacherForcing(task="copy", source=("a", "<b>", "<eos>"), decoder_input=dec, labels=cols,
                        mask=np.tril(np.ones((3, 3), dtype=bool)), untrained=logits, trained=logits)
    same(Export.of(spec_of(vt.mask_figure(tf, lang=lang)), "a <b>", "training-look-ahead-mask"),
         Export(tf.mask.astype(float), list(dec), list(dec), t("train.tf.mask_fig", lang), "a <b>",
                "training-look-ahead-mask"))  # ui/training_page.py teacher_tab before
    title = t("train.tf.logits_fig", lang, which=t("train.tf.trained", lang), loss=1.5)
    same(Export.of(spec_of(vt.logits_figure(tf, logits, title, lang=lang)), "a <b>", "training-logits-trained"),
         Export(logits.probs, list(dec), list(logits.columns), title, "a <b>", "training-logits-trained"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_cross_glance_stages_export_as_step_by_step_did(paper_base, lang):
    from analysis.stages import attention_steps
    from viz.steps import build_stages, stage_figure

    trace = paper_base.trace("I am sam", intermediates=True, target="I am sam")
    rows, cols = trace.axis_tokens("cross")
    by_key = {s.key: s for s in build_stages(attention_steps(paper_base, trace, "cross", 4, 7), rows, cols, head=7,
                                             n_heads=8, block="cross", lang=lang)}
    for key in ("memory", "weights"):  # ui/steps_page.py cross_glance before
        stage, name = by_key[key], f"paper-base-L4-H7-cross-{key}"
        assert stage.masked is None  # what the old Export left out: neither stage draws a blocked cell
        old = Export(stage.matrix, stage.rows, stage.cols, f"paper-base · {stage.title} ({stage.shape})", "I am sam",
                     name, heatmap=dict(cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
                                        xlabel=stage.xlabel, ylabel=stage.ylabel))
        same(Export.of(spec_of(stage_figure(stage, lang=lang)), "I am sam", name, context="paper-base"), old)
    assert by_key["weights"].colorscale == "Viridis" and by_key["memory"].colorscale == "RdBu_r"
