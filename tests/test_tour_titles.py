"""The tour names the Encoder-decoder figures and their axes its own way: it passes its title and axis names into the
builders (viz/seq2seq.py, viz/positional.py) instead of rewriting finished figures. The figures are the ones the
rewriting made (title, axes, sizes), but for the heatmaps' hover text, which now names the axes as their titles do."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from analysis.decoding import DecodingRun, Step
from viz import seq2seq as vs
from viz.positional import embedding_triptych

TITLE, X, Y = "Dec self <sup>L1</sup> · step 2", "keys earlier", "decoder input"


def _run(steps: int = 3) -> DecodingRun:
    rng = np.random.default_rng(0)
    src, outs, out = ["<copy>", "the", "<script>", "cat", "<eos>"], ["the", "<script>", "<eos>"][:steps], []
    for s in range(1, steps + 1):
        sa = rng.uniform(size=(2, 4, s, s)) * np.tril(np.ones((s, s)))
        row = rng.uniform(size=(2, 4, len(src)))
        out.append(Step(inputs=["<bos>", *outs[: s - 1]], self_attention=(sa / sa.sum(-1, keepdims=True)).astype(np.float32),
                        cross_row=(row / row.sum(-1, keepdims=True)).astype(np.float32),
                        top_tokens=[outs[s - 1], "<b>", "a", "b", "c"],
                        top_probs=np.array([0.6, 0.2, 0.1, 0.06, 0.04], dtype=np.float32), chosen=outs[s - 1]))
    return DecodingRun(task="copy", mode="greedy", source_tokens=src, steps=tuple(out), expected=outs)


def _rewritten(fig, title: str, x: str | None = None, y: str | None = None) -> go.Figure:
    """What ui/tour_decoder.py did before (its _retitle): a finished figure's title and axis titles rewritten."""
    fig.update_layout(title={"text": title})
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    return fig


def _plain(fig: go.Figure) -> dict:
    return json.loads(json.dumps(fig.to_plotly_json(), default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


@pytest.mark.parametrize("lecture", [False, True])
def test_the_tours_decoder_heatmaps_are_titled_by_the_builder(lecture):
    run = _run()
    for build, hover in ((vs.self_attention_figure, "decoder input %{y}<br>keys earlier %{x}<br>%{z:.4g}"),
                         (vs.cross_figure, "decoder input %{y}<br>keys earlier %{x}<br>%{z:.4g}")):
        old = _plain(_rewritten(build(run, 2, 1, 0, lang="ko", lecture=lecture)[0], TITLE, X, Y))
        new = _plain(build(run, 2, 1, 0, lang="ko", lecture=lecture, title=TITLE, xlabel=X, ylabel=Y)[0])
        assert new["layout"] == old["layout"]  # title, axis titles, margins, sizes
        assert new["layout"]["title"]["text"] == TITLE and new["layout"]["xaxis"]["title"]["text"] == X
        assert new["data"][0].pop("hovertemplate") == hover + "<extra></extra>"  # the axes named as their titles
        old["data"][0].pop("hovertemplate")
        assert new["data"] == old["data"]
        default = _plain(build(run, 2, 1, 0, lang="ko", lecture=lecture)[0])  # the Encoder-decoder page's own
        assert default["layout"]["title"]["text"] != TITLE and default["layout"]["xaxis"]["title"]["text"] != X


@pytest.mark.parametrize("lecture", [False, True])
def test_the_tours_bars_and_triptych_are_the_rewritten_figures(lecture):
    run = _run()
    assert _plain(vs.cross_row_figure(run, 2, 1, 0, lang="en", lecture=lecture, title=TITLE, ylabel=Y)) == _plain(
        _rewritten(vs.cross_row_figure(run, 2, 1, 0, lang="en", lecture=lecture), TITLE, None, Y))
    assert _plain(vs.topk_figure(run, 2, lang="en", lecture=lecture, title=TITLE, xlabel=X)) == _plain(
        _rewritten(vs.topk_figure(run, 2, lang="en", lecture=lecture), TITLE, X))
    parts = {k: np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32) for k in ("token", "position", "sum")}
    tokens = ["a", "b", "a", "<c>"]
    new = embedding_triptych(parts, tokens, title="T", lecture=lecture, lang="ko", xlabel="DIM")
    old = embedding_triptych(parts, tokens, title="T", lecture=lecture, lang="ko").update_xaxes(title_text="DIM")
    assert _plain(new) == _plain(old)
    assert [new.layout[f"xaxis{i or ''}"].title.text for i in ("", 2, 3)] == ["DIM"] * 3
