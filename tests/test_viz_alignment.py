"""Word alignment and SSRU figures (viz.alignment): pieces grouped into words, mass kept by the word alignment, lines
that cross for a reordered phrase, the unrolled SSRU recurrence against the step-by-step one, both languages, and
user text escaped."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from viz.alignment import (
    alignment_lines_caption,
    alignment_lines_figure,
    alignment_matrix_caption,
    alignment_matrix_figure,
    alignment_pairs,
    forget_gate_caption,
    forget_gate_figure,
    label_angle,
    merge_pieces,
    ssru_contributions,
    ssru_contributions_caption,
    ssru_contributions_figure,
    ssru_contributions_per_channel,
    word_alignment,
)
from viz.theme import text_width

HANGUL = re.compile("[\uac00-\ud7a3]")
SOURCE = ["▁the", "▁European", "▁Econom", "ic", "▁Area", "</s>"]
TARGET = ["▁o", "▁Espaço", "▁Econ", "ómico", "▁Europeu", "</s>"]


def _rows(shape, seed=0):
    a = np.random.default_rng(seed).random(shape)
    return (a / a.sum(-1, keepdims=True)).astype(np.float32)


# ---- pieces -> words -------------------------------------------------------------------------------------------------
def test_merge_pieces_groups_words():
    assert merge_pieces(["▁European", "▁Econom", "ic", "▁Area"]) == [
        ("European", [0]), ("Economic", [1, 2]), ("Area", [3])]


def test_merge_pieces_punctuation_and_specials():
    tokens = ["▁the", "▁Area", ".", "▁(", "Econom", "ic", ")", ",", "</s>"]
    assert merge_pieces(tokens) == [("the", [0]), ("Area", [1]), (".", [2]), ("(", [3]), ("Economic", [4, 5]),
                                    (")", [6]), (",", [7]), ("</s>", [8])]
    assert merge_pieces(tokens, drop_special=True)[-1] == (",", [7])
    # flags from the tokenizer win over the name: a decoder start "</s>" first, a "<unk>" the caller calls normal
    assert merge_pieces(["</s>", "▁o", "<unk>"], [True, False, False]) == [("</s>", [0]), ("o<unk>", [1, 2])]
    assert merge_pieces(["</s>", "▁o", "<unk>"]) == [("</s>", [0]), ("o", [1]), ("<unk>", [2])]
    # a bare "▁" joins the piece after it, even punctuation
    assert merge_pieces(["▁", "«", "▁Olá", "»"]) == [("«", [0, 1]), ("Olá", [2]), ("»", [3])]
    # a first piece without "▁" is still a word; indices cover every kept piece exactly once
    groups = merge_pieces(["ic", "▁a", "b", "</s>"], drop_special=True)
    assert groups == [("ic", [0]), ("ab", [1, 2])]
    with pytest.raises(ValueError):
        merge_pieces(["▁a"], [True, False])


# ---- word alignment ------------------------------------------------------------------------------------------------
def test_word_alignment_sums_source_pieces_and_averages_target_pieces():
    w = _rows((len(TARGET), len(SOURCE)), seed=1)
    src, tgt = merge_pieces(SOURCE), merge_pieces(TARGET)
    m = word_alignment(w, tgt, src)
    assert m.shape == (len(tgt), len(src)) == (5, 5)
    np.testing.assert_allclose(m.sum(1), 1.0, atol=1e-6)  # every source piece in a group: mass conserved
    # "Económico" (target pieces 2, 3) x "Economic" (source pieces 2, 3): mean over rows of the sum over columns
    np.testing.assert_allclose(m[2, 2], (w[2, 2] + w[2, 3] + w[3, 2] + w[3, 3]) / 2, rtol=1e-6)
    np.testing.assert_allclose(m[1, 1], w[1, 1], rtol=1e-6)
    # the total mass is the mean-weighted mass of the pieces: each target word's row is a distribution
    dropped = word_alignment(w, tgt, merge_pieces(SOURCE, drop_special=True))
    np.testing.assert_allclose(dropped.sum(1), [1 - w[0, 5], 1 - w[1, 5], 1 - (w[2, 5] + w[3, 5]) / 2,
                                                1 - w[4, 5], 1 - w[5, 5]], rtol=1e-5)
    assert (dropped.sum(1) <= 1 + 1e-6).all()
    # plain index lists work as groups too
    np.testing.assert_allclose(word_alignment(w, [g[1] for g in tgt], [g[1] for g in src]), m)
    with pytest.raises(ValueError):
        word_alignment(w, [[0, 9]], src)


# ---- the lines -------------------------------------------------------------------------------------------------------
def _segments(fig) -> list[tuple[float, float]]:
    """(x on the source row, x on the target row) of every drawn line."""
    out = []
    for tr in fig.data:
        if tr.mode != "lines":
            continue
        xs, ys = list(tr.x), list(tr.y)
        for k in range(0, len(xs), 3):
            assert ys[k] == 1.0 and ys[k + 1] == 0.0 and xs[k + 2] is None  # from the source row down to the target
            out.append((xs[k], xs[k + 1]))
    return out


def test_permutation_gives_crossing_lines_between_the_right_words():
    source = ["▁the", "▁European", "▁Economic", "▁Area"]
    target = ["▁o", "▁Espaço", "▁Económico", "▁Europeu"]
    perm = [0, 3, 2, 1]  # o<-the, Espaço<-Area, Económico<-Economic, Europeu<-European
    w = np.eye(4, dtype=np.float32)[perm]
    fig = alignment_lines_figure(source, target, w, merge=True)
    src_x, tgt_x = list(fig.layout.xaxis2.tickvals), list(fig.layout.xaxis.tickvals)
    assert list(fig.layout.xaxis2.ticktext) == ["the", "European", "Economic", "Area"]
    assert list(fig.layout.xaxis.ticktext) == ["o", "Espaço", "Económico", "Europeu"]
    assert fig.layout.xaxis2.side == "top" and fig.layout.xaxis.side == "bottom"
    pairs = {(src_x.index(a), tgt_x.index(b)) for a, b in _segments(fig)}
    assert pairs == {(perm[t], t) for t in range(4)}
    crossing = [(p, q) for p in pairs for q in pairs if p[0] < q[0] and p[1] > q[1]]
    assert crossing  # "European ... Area" -> "Espaço ... Europeu" cross
    # the identity draws parallel lines that never cross
    ident = alignment_lines_figure(source, target, np.eye(4, dtype=np.float32))
    assert all(a == b for a, b in _segments(ident))


def test_lines_threshold_argmax_width_and_opacity():
    m = np.array([[0.6, 0.3, 0.1], [0.15, 0.1, 0.05]])  # row 2 has no pair over 0.2: its argmax is drawn dotted
    assert alignment_pairs(m, 0.2) == [(0, 0, 0.6, True), (0, 1, 0.3, True), (1, 0, 0.15, False)]
    fig = alignment_lines_figure(["▁a", "▁b", "▁c"], ["▁x", "▁y"], m, threshold=0.2)
    lines = [tr for tr in fig.data if tr.mode == "lines"]
    dotted = [tr for tr in lines if tr.line.dash == "dot"]
    assert len(dotted) == 1 and len(dotted[0].x) == 3
    solid = sorted((tr for tr in lines if tr.line.dash == "solid"), key=lambda tr: tr.line.width)
    assert len(solid) == 2 and solid[0].line.width < solid[1].line.width  # 0.3 thinner than 0.6
    alpha = [float(tr.line.color.rsplit(",", 1)[1].rstrip(")")) for tr in solid]
    assert alpha[0] < alpha[1]


def test_forty_word_sentence_labels_turn_instead_of_overlapping():
    words = [f"▁{w}" for w in ("internationalisation", "Económico", "Europeu", "Espaço") * 10]
    w = _rows((40, 40), seed=3)
    fig = alignment_lines_figure(words, words, w)
    slot = (1140 - 40) / 40
    assert fig.layout.xaxis.tickangle in (-60, -90) and fig.layout.xaxis2.tickangle in (-60, -90)
    assert len(fig.layout.xaxis.tickvals) == 40  # every word is labelled, none dropped
    # turned labels: neighbouring slanted lines at least a line height apart; margins leave room for the widest
    assert slot * np.sin(np.radians(-fig.layout.xaxis.tickangle)) >= 1.3 * 12
    widest = max(text_width(x, 12) for x in fig.layout.xaxis.ticktext)
    assert fig.layout.margin.b >= widest * np.sin(np.radians(60)) and fig.layout.margin.t >= widest * 0.86
    # a short sentence keeps its labels level
    assert label_angle(["a", "b"], 200, 12) == 0 and label_angle(["x" * 30] * 2, 10, 12) == -90


# ---- the SSRU --------------------------------------------------------------------------------------------------------
def test_ssru_unrolled_equals_the_recurrence():
    rng = np.random.default_rng(7)
    T, d = 9, 5
    f = 1 / (1 + np.exp(-rng.normal(size=(T, d))))  # σ(W_f x_t + b_f)
    z = rng.normal(size=(T, d))  # W x_t
    c, direct = np.zeros(d), []
    for t in range(T):
        c = f[t] * c + (1 - f[t]) * z[t]
        direct.append(c.copy())
    w = ssru_contributions_per_channel(f)
    unrolled = np.einsum("tjc,jc->tc", w, z)
    np.testing.assert_allclose(unrolled, np.array(direct), rtol=1e-10, atol=1e-12)
    assert np.all(w[np.triu_indices(T, k=1)] == 0)  # nothing from the future
    np.testing.assert_allclose(w.sum(1), 1 - np.cumprod(f, axis=0), rtol=1e-10)  # rows: 1 − ∏_{k≤t} f_k
    mean = ssru_contributions(f)
    assert mean.shape == (T, T)
    np.testing.assert_allclose(mean, w.mean(2), rtol=1e-6)
    assert (mean.sum(1) <= 1 + 1e-6).all()
    np.testing.assert_allclose(np.diag(mean), (1 - f).mean(1), rtol=1e-6)  # position t's own input: 1 − f_t
    # a gate of 0 forgets everything (only its own input), a gate of 1 ignores its input
    assert np.allclose(ssru_contributions(np.zeros((3, 2))), np.eye(3))
    assert np.allclose(ssru_contributions(np.ones((3, 2))), 0)


def test_forget_gate_figure_heatmap_and_mean_line():
    g = np.random.default_rng(2).random((6, 16)).astype(np.float32)
    fig = forget_gate_figure(TARGET, g, lang="en")
    heat, line = fig.data
    z = np.asarray(heat.z, dtype=float)
    assert z.shape == (16, 6)  # channels x positions
    order = [int(c) for c in heat.y]
    assert sorted(order) == list(range(16))
    np.testing.assert_allclose(z, g[:, order].T, rtol=1e-6)
    means = g.mean(0)[order]
    assert all(means[i] >= means[i + 1] for i in range(15))  # sorted by mean gate
    np.testing.assert_allclose(np.asarray(line.y, dtype=float), g.mean(1), rtol=1e-6)
    assert line.xaxis == "x2" and fig.layout.xaxis.matches == "x2"
    assert "⊙" in fig.layout.title.text
    with pytest.raises(ValueError):
        forget_gate_figure(TARGET[:3], g)


def test_contributions_figure_is_lower_triangular_and_not_attention():
    g = np.random.default_rng(4).random((6, 8))
    fig = ssru_contributions_figure(TARGET, g, lang="en")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[np.triu_indices(6, k=1)]).all() and np.isfinite(z[np.tril_indices(6)]).all()
    np.testing.assert_allclose(z[np.tril_indices(6)], ssru_contributions(g)[np.tril_indices(6)], rtol=1e-6)
    assert "not attention" in fig.layout.title.text


# ---- languages, escaping ---------------------------------------------------------------------------------------------
def _figures(lang, source=SOURCE, target=TARGET):
    w = _rows((len(target), len(source)), seed=5)
    g = np.random.default_rng(6).random((len(target), 12))
    return [alignment_matrix_figure(source, target, w, lang=lang),
            alignment_matrix_figure(source, target, w, lang=lang, merge=False, drop_special=True),
            alignment_lines_figure(source, target, w, lang=lang, lecture=True),
            forget_gate_figure(target, g, lang=lang),
            ssru_contributions_figure(target, g, lang=lang, lecture=True)]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_figures_build_in_both_languages(lang):
    figs = _figures(lang)
    for fig in figs:
        title = fig.layout.title.text
        assert title
        assert bool(HANGUL.search(title)) == (lang == "ko"), title
        hover = json.dumps([tr.hovertemplate or tr.hovertext for tr in fig.data if tr.hoverinfo != "skip"],
                           ensure_ascii=False)
        assert bool(HANGUL.search(hover)) == (lang == "ko"), hover
    for caption in (alignment_matrix_caption(lang), alignment_lines_caption(lang, 0.25), forget_gate_caption(lang),
                    ssru_contributions_caption(lang)):
        assert bool(HANGUL.search(caption)) == (lang == "ko")
    assert "0.25" in alignment_lines_caption(lang, 0.25)
    matrix = figs[0]
    assert list(matrix.data[0].x) == ["the", "European", "Economic", "Area", "&lt;/s&gt;"]
    assert matrix.data[0].customdata[0][2][1] == " (▁Econom · ic)"  # the hover names the pieces of a merged word
    assert list(figs[1].data[0].x) == ["▁the", "▁European", "▁Econom", "ic", "▁Area"]  # pieces, "</s>" dropped


def test_tokens_reach_the_figures_escaped():
    source = ["▁<script>alert(1)</script>", "▁<b>bold</b>", "</s>"]
    target = ["▁<img src=x onerror=alert(1)>", "ok", "</s>"]
    for fig in _figures("en", source, target) + _figures("ko", source, target):
        text = fig.to_json()
        assert "<script" not in text and "<img" not in text and "<b>bold" not in text
        assert "&lt;script&gt;" in text or "&lt;img" in text
