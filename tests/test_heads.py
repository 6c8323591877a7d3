"""Head lab (analysis.heads, viz.heads): minimal pairs, head surgery checked against an independent computation of the
layer, value-weighted norms against explicit per-pair loops, seq2seq-tiny effects and logit lens."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis import heads as H
from model.errors import InputError
from model.run import HeadOutput, ablate, plans_for

A, B = H.PRESET_A, H.PRESET_B


@pytest.fixture(scope="module")
def pair(minilm):
    return H.minimal_pair(minilm, A, B)


# ---- minimal pairs ----------------------------------------------------------------------------------------------------
def test_preset_ranks_layer3_head1_first_and_flags_only_layer4_head0(pair):
    assert pair.ranking[0] == (3, 1)
    assert pair.pref_a[3, 1] == pytest.approx(0.61, abs=0.01)  # +0.61 with "tired"
    assert pair.pref_b[3, 1] == pytest.approx(0.145, abs=0.01)  # +0.15 with "wide" (0.1447 here)
    assert pair.pref_a[4, 0] == pytest.approx(0.04, abs=0.01) and pair.pref_b[4, 0] == pytest.approx(-0.12, abs=0.01)
    assert [tuple(x) for x in np.argwhere(pair.flipped)] == [(4, 0)]
    rows = pair.rows()
    assert (rows[0]["layer"], rows[0]["head"]) == (3, 1) and not rows[0]["flipped"]
    assert [(r["layer"], r["head"]) for r in rows if r["flipped"]] == [(4, 0)]
    assert len(rows) == 72 and [r["rank"] for r in rows] == list(range(1, 73))


def test_pair_weights_are_the_model_attention(pair, minilm):
    ta, tb = minilm.trace(A), minilm.trace(B)
    q, c1, c2 = (ta.source_tokens.index(w) for w in ("it", "animal", "street"))
    np.testing.assert_array_equal(pair.w1_a, ta.encoder_attention[:, :, q, c1])
    np.testing.assert_array_equal(pair.w2_b, tb.encoder_attention[:, :, q, c2])
    np.testing.assert_allclose(pair.change, (pair.w1_b - pair.w2_b) - (pair.w1_a - pair.w2_a))


def test_results_are_frozen_and_read_only(pair):
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.text_a = "x"
    for arr in (pair.attention_a, pair.w1_a, pair.delta(3, 1).delta):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 1


def test_query_by_position_or_pair_of_positions_gives_the_same(minilm, pair):
    by_index = H.minimal_pair(minilm, A, B, 10)
    by_pair = H.minimal_pair(minilm, A, B, (10, 10), ((2, 2), (8, 8)))
    np.testing.assert_array_equal(by_index.change, pair.change)
    np.testing.assert_array_equal(by_pair.change, pair.change)


@pytest.mark.parametrize("args, message", [
    ((A, ""), "second sentence is empty"),
    ((A, "   "), "second sentence is empty"),
    (("", B), "first sentence is empty"),
    ((A, B, "the"), "occurs 2 times"),
    ((A, B, "she"), "is not a token"),
    ((A, B, "it", ("dog", "street")), "first candidate 'dog' is not"),
    ((A, B, "it", ("animal", "animal")), "same token"),
    ((A, B, 99), "outside sentence A"),
    ((A, B, "it", ("animal",)), "exactly two"),
])
def test_hostile_pairs_get_clear_messages(minilm, args, message):
    with pytest.raises(InputError, match=message):
        H.minimal_pair(minilm, *args)


def test_query_occurring_twice_is_resolved_by_its_position(minilm):
    text = "the dog saw the cat and the cat saw it"
    with pytest.raises(InputError, match=r"positions 5, 8"):
        H.minimal_pair(minilm, text, text.replace("dog", "fox"), "cat", ("dog", "it"))
    mp = H.minimal_pair(minilm, text, text.replace("dog", "fox"), 8, (2, 3))  # the second "cat"; "dog"->"fox"
    assert mp.query == ((8,), (8,)) and mp.labels[0] == "cat" and mp.candidates[0] == ((2,), (2,))


def test_alignment_of_different_lengths_and_the_delta_map(minilm):
    a, b = "the dog saw the cat and it ran", "the dog saw the big cat and it ran"
    al = H.align_tokens(["[CLS]", *a.split(), "[SEP]"], ["[CLS]", *b.split(), "[SEP]"])
    assert al.labels[5] == "big (B only)" and al.columns[5] == (None, 5) and al.changed_b == (5,)
    assert al.to_b(5) == 6  # "cat"
    swap = H.align_tokens(["a", "tired", "b"], ["a", "wide", "b"])
    assert swap.labels == ["a", "tired→wide", "b"] and swap.same == (True, False, True)
    mp = H.minimal_pair(minilm, a, b, "it", ("dog", "cat"))
    d = mp.delta(3, 1)
    assert d.delta.shape == (11, 11) and d.changed[5]
    assert np.isnan(d.delta[5]).all() and np.isnan(d.delta[:, 5]).all()
    i, j = 8, 2  # "it" -> "dog": B positions 8 -> 2, A positions 7 -> 2
    assert d.delta[i, j] == pytest.approx(mp.attention_b[3, 1, 8, 2] - mp.attention_a[3, 1, 7, 2], abs=1e-7)


def test_multi_piece_word_as_candidate(minilm):
    mp = H.minimal_pair(minilm, A, B, "it", ("didn't", "street"))
    assert mp.candidates[0][0] == (3, 4, 5)  # didn ' t: attention to a word is the sum over its pieces
    np.testing.assert_allclose(mp.w1_a, mp.attention_a[:, :, 10, 3:6].sum(-1), rtol=1e-6)


# ---- head surgery -----------------------------------------------------------------------------------------------------
def _ids(minilm, text=A):
    enc = minilm.tokenizer.encode(text)
    return torch.tensor([enc.ids]), torch.tensor([enc.type_ids])


def test_ablating_nothing_is_bit_identical(minilm):
    ids, tt = _ids(minilm)
    with torch.inference_mode():
        ref = minilm.module.encode(ids, tt)
        empty = minilm.module.encode(ids, tt, plan=plans_for(minilm.module, ablate(2, (), "zero"))["encoder"])
        none = minilm.module.encode(ids, tt, plan=plans_for(minilm.module, ())["encoder"])
    assert torch.equal(ref.hidden, empty.hidden) and torch.equal(ref.hidden, none.hidden)
    assert all(torch.equal(a, b) for a, b in zip(ref.self_attention, empty.self_attention))
    eff = H.encoder_effect(minilm, A, [])
    assert np.abs(eff.token_cosine - 1.0).max() < 1e-12 and eff.sentence_cosine == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(eff.attention_before, minilm.trace(A).encoder_attention)
    np.testing.assert_array_equal(eff.attention_after, eff.attention_before)


def _layer_norm(x, norm):
    g, b = norm.weight.detach().double().numpy(), norm.bias.detach().double().numpy()
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + norm.eps) * g + b


def _rest_of_layer(layer, x, attn_out):
    """Add & Norm, FFN (exact GELU), Add & Norm by hand in float64 from the module's weights."""
    y1 = _layer_norm(x + attn_out, layer.norm1)
    w1, b1 = layer.ffn.linear1.weight.detach().double().numpy(), layer.ffn.linear1.bias.detach().double().numpy()
    w2, b2 = layer.ffn.linear2.weight.detach().double().numpy(), layer.ffn.linear2.bias.detach().double().numpy()
    pre = y1 @ w1.T + b1
    act = 0.5 * pre * (1.0 + np.vectorize(math.erf)(pre / math.sqrt(2.0)))
    return _layer_norm(y1 + act @ w2.T + b2, layer.norm2)


def _run(minilm, edits, record):
    ids, tt = _ids(minilm)
    with torch.inference_mode():
        return minilm.module.encode(ids, tt, record=record, plan=plans_for(minilm.module, edits or ())["encoder"])


@pytest.mark.parametrize("layer", [0, 3])
def test_zero_all_heads_equals_layer_with_attention_output_bias_only(minilm, layer):
    n_heads = minilm.config.n_heads
    ref = _run(minilm, None, True)
    out = _run(minilm, ablate(layer, range(n_heads), "zero"), True)
    x = out.hidden_states[layer][0].double().numpy()
    np.testing.assert_array_equal(x, ref.hidden_states[layer][0].double().numpy())  # earlier layers untouched
    mod = minilm.module.encoder.layers[layer]
    b_o = mod.self_attn.projection_matrices()["b_O"].detach().double().numpy()
    expected = _rest_of_layer(mod, x, b_o[None, :])
    np.testing.assert_allclose(out.hidden_states[layer + 1][0].double().numpy(), expected, atol=1e-5, rtol=0)


def _attention_by_hand(mha, x, mean_head=None):
    """Multi-head self-attention by hand (float64): per-head softmax(QK^T/sqrt(k))V; head `mean_head` replaced by its
    mean over positions; then Concat W_O + b_O."""
    p = {k: v.detach().double().numpy() for k, v in mha.projection_matrices().items()}
    n, d = x.shape
    h = mha.n_heads
    k = d // h
    q, kk, v = x @ p["W_Q"] + p["b_Q"], x @ p["W_K"] + p["b_K"], x @ p["W_V"] + p["b_V"]
    heads = []
    for i in range(h):
        sl = slice(i * k, (i + 1) * k)
        s = q[:, sl] @ kk[:, sl].T / math.sqrt(k)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        z = w @ v[:, sl]
        if i == mean_head:
            z = np.repeat(z.mean(0, keepdims=True), n, axis=0)
        heads.append(z)
    return np.concatenate(heads, axis=1) @ p["W_O"] + p["b_O"]


def test_mean_ablation_of_one_head_equals_independent_computation(minilm):
    layer, head = 2, 5
    out = _run(minilm, ablate(layer, (head,), "mean"), True)
    mod = minilm.module.encoder.layers[layer]
    x = out.hidden_states[layer][0].double().numpy()
    expected = _rest_of_layer(mod, x, _attention_by_hand(mod.self_attn, x, mean_head=head))
    np.testing.assert_allclose(out.hidden_states[layer + 1][0].double().numpy(), expected, atol=1e-5, rtol=0)
    # and the unablated layer by the same hand computation, so the check above is not vacuous
    ref = _run(minilm, None, True)
    x0 = ref.hidden_states[layer][0].double().numpy()
    np.testing.assert_allclose(ref.hidden_states[layer + 1][0].double().numpy(),
                               _rest_of_layer(mod, x0, _attention_by_hand(mod.self_attn, x0)), atol=1e-5, rtol=0)
    assert np.abs(expected - ref.hidden_states[layer + 1][0].double().numpy()).max() > 1e-3


def test_heads_round_trip_through_text():
    heads = [(3, 1), (4, 0), ("cross", 1, 2)]
    assert H.heads_to_text(heads) == "3.1,4.0,cross:1.2"
    assert H.heads_from_text("3.1, 4.0,cross:1.2,3.1") == heads
    assert H.heads_from_text("") == []
    for bad in ("3", "a.b", "x:1.2", "3.1.2", "<script>"):
        with pytest.raises(InputError):
            H.heads_from_text(bad)


def test_ablations_for_groups_heads_per_layer(minilm, seq2seq_tiny):
    ab = H.ablations_for(minilm, [(3, 1), (4, 0), (3, 7)], "keep")  # MiniLM: 12 heads a layer
    assert [(e.layer, e.head, e.op, e.block) for e in ab] == (
        [(3, h, "zero", None) for h in range(12) if h not in (1, 7)] + [(4, h, "zero", None) for h in range(1, 12)])
    cross = H.ablations_for(seq2seq_tiny, [("cross", 1, 2), (0, 3)], "mean", rows=(4,))
    assert [(e.layer, e.head, e.op, e.block, e.rows) for e in cross] == [
        (1, 2, "mean", "cross", (4,)), (0, 3, "mean", None, (4,))]  # (block, layer) order: cross before encoder
    with pytest.raises(InputError):
        H.ablations_for(minilm, [(0, 0)], "explode")


def test_encoder_effect_changes_only_later_layers(minilm):
    eff = H.encoder_effect(minilm, A, [(3, 1), (4, 0)])
    assert eff.first_changed_layer == 4  # layer 3's own maps are computed before its heads' outputs are dropped
    np.testing.assert_array_equal(eff.attention_after[:4], eff.attention_before[:4])
    assert eff.token_cosine.shape == (14,) and 0 < eff.sentence_cosine < 1
    with pytest.raises(InputError, match="no Layer 6"):
        H.encoder_effect(minilm, A, [(6, 0)])
    with pytest.raises(InputError, match="no 'cross' attention"):
        H.encoder_effect(minilm, A, [("cross", 0, 0)])
    base = H.encoder_run(minilm, A)
    cached = H.encoder_effect(minilm, A, [(3, 1), (4, 0)], baseline=base)
    np.testing.assert_array_equal(cached.token_cosine, eff.token_cosine)
    with pytest.raises(ValueError):
        H.encoder_effect(minilm, B, [(3, 1)], baseline=base)


@pytest.mark.parametrize("mode", ["zero", "mean", "keep"])
def test_rank_all_batched_matches_single_runs(minilm, mode):
    seen = []
    grid = H.rank_heads_by_effect(minilm, A, mode, progress=seen.append, chunk=40)
    assert grid.sentence_change.shape == (6, 12) and seen[-1] == 1.0 and len(seen) == 2
    for layer, head in [(0, 0), (3, 1), (5, 11)]:
        single = H.encoder_effect(minilm, A, [(layer, head)], mode)
        assert grid.sentence_change[layer, head] == pytest.approx(single.sentence_change, abs=1e-5)
        assert grid.token_change[layer, head] == pytest.approx(float(single.token_change.mean()), abs=1e-5)
    rows = grid.rows()
    assert rows[0]["sentence_change"] >= rows[-1]["sentence_change"]


def test_per_row_ablations_equal_each_run_alone(minilm):
    """rank-all's batch: row r carries its own ablation (edits with rows=(r,)); each row is bit for bit the run of
    that ablation alone, and an unedited row the normal run."""
    inp = H.encoder_input(minilm, A)
    cases = [ablate(1, (3,), "mean"), (), ablate(4, (0, 3), "zero"), ablate(2, (5,), "keep", n_heads=12)]
    edits = tuple(HeadOutput(e.layer, e.head, e.op, rows=(r,)) for r, c in enumerate(cases) for e in c)
    both = H.run_encoder(minilm, inp, batch=len(cases), edits=edits).hidden
    for r, c in enumerate(cases):
        alone = H.run_encoder(minilm, inp, edits=c).hidden[0]
        assert torch.equal(both[r], alone)
    assert not torch.equal(both[0], both[1])


# ---- value-weighted norms -------------------------------------------------------------------------------------------
def test_value_norms_match_explicit_loops(minilm):
    vn = H.value_norms(minilm, A)
    ref = _run(minilm, None, True)
    layer, head = 3, 1
    mha = minilm.module.encoder.layers[layer].self_attn
    p = {k: v.detach().double().numpy() for k, v in mha.projection_matrices().items()}
    x = ref.hidden_states[layer][0].double().numpy()
    k = minilm.config.d_k
    sl = slice(head * k, (head + 1) * k)
    alpha = ref.self_attention[layer][0, head].double().numpy()
    n = x.shape[0]
    for i in range(n):
        for j in range(n):
            f = (x[j] @ p["W_V"][:, sl] + p["b_V"][sl]) @ p["W_O"][sl, :]
            assert vn.norms[layer, head, i, j] == pytest.approx(np.linalg.norm(alpha[i, j] * f), rel=1e-4, abs=1e-6)
    np.testing.assert_array_equal(vn.weights, minilm.trace(A).encoder_attention)


def test_value_vectors_sum_to_the_sublayer_output(minilm):
    """Kobayashi et al.'s decomposition: sum over heads and keys of alpha_ij f_h(x_j), plus b_O, is the attention
    sublayer's output."""
    ids, tt = _ids(minilm)
    with torch.inference_mode():
        out = minilm.module.encode(ids, tt, record={1})
        rec = out.records[1]
        mha = minilm.module.encoder.layers[1].self_attn
        fx = H.head_value_vectors(mha, rec["self"].record["v"])  # (1, H, N, d)
        total = torch.einsum("bhij,bhjd->bid", rec["self"].weights, fx) + mha.out_proj.bias
    torch.testing.assert_close(total, rec["layer"]["attn_out"], atol=1e-5, rtol=1e-5)


def test_specials_take_more_weight_than_norm(minilm):
    vn = H.value_norms(minilm, A)
    w, s = vn.special_weight_share, vn.special_norm_share
    assert w.shape == (6, 12) and ((0 <= s) & (s <= 1)).all()
    assert (w > s).mean() > 0.8  # large weights, small norms: the point of Kobayashi et al.
    np.testing.assert_allclose(vn.norm_share.sum(-1), 1.0, rtol=1e-5)


# ---- seq2seq-tiny -----------------------------------------------------------------------------------------------------
def test_decoder_effect_without_heads_changes_nothing(seq2seq_tiny):
    text = "the cat sat on the mat"
    d = H.decoder_effect(seq2seq_tiny, text, [], task="reverse", step=1)
    assert d.output_before == d.output_after and d.top_before == d.top_after
    from model.data import apply_task

    words = seq2seq_tiny.encode_source(text, task="reverse").tokens[1:-1]
    assert d.expected == (*apply_task("reverse", words), "<eos>")
    assert d.exact_before == (d.output_before == d.expected)
    assert len(d.top_before) == 5 and sum(p for _, p in d.top_before) <= 1.0 + 1e-6


def test_decoder_effect_with_cross_attention_ablated(seq2seq_tiny):
    heads = [("cross", la, h) for la in range(seq2seq_tiny.config.n_decoder_layers) for h in range(seq2seq_tiny.config.n_heads)]
    d = H.decoder_effect(seq2seq_tiny, "the cat sat on the mat", heads, task="copy", step=0)
    assert d.top_before != d.top_after  # without any cross-attention the decoder cannot see the source
    assert d.exact_after is False
    rows = {r["token"]: r for r in d.top_rows()}
    assert set(rows) == {t for t, _ in d.top_before} | {t for t, _ in d.top_after}
    for t, p in d.top_after:
        assert rows[t]["after"] == pytest.approx(p, abs=1e-4)


def test_logit_lens_last_layer_is_the_model_output(seq2seq_tiny):
    text = "the cat sat on the mat"
    tr = seq2seq_tiny.trace(text, task="copy")
    for step in range(min(3, len(tr.target_ids))):
        lens = H.logit_lens(seq2seq_tiny, text, task="copy", step=step)
        assert lens.top_probs.shape == (seq2seq_tiny.config.n_decoder_layers, 5)
        assert lens.top_tokens[-1][0] == lens.answer == tr.meta["generated_tokens"][step]
        assert lens.answer_rank[-1] == 0
        assert (np.diff(lens.top_probs, axis=1) <= 1e-7).all()
    with pytest.raises(InputError):
        H.logit_lens(seq2seq_tiny, text, task="copy", step=99)


def test_seq2seq_encoder_surgery_and_pairs(seq2seq_tiny):
    eff = H.encoder_effect(seq2seq_tiny, "the cat sat on the mat", [(0, 1)], task="copy")
    assert eff.tokens[0] == "<copy>" and eff.sentence_cosine < 1.0
    grid = H.rank_heads_by_effect(seq2seq_tiny, "the cat sat on the mat", task="copy")
    assert grid.sentence_change.shape == (seq2seq_tiny.config.n_encoder_layers, seq2seq_tiny.config.n_heads)
    mp = H.minimal_pair(seq2seq_tiny, "the cat sat on the mat", "the cat sat on the rug", "sat", ("cat", "on"), task="copy")
    assert mp.change.shape == grid.sentence_change.shape


# ---- figures ----------------------------------------------------------------------------------------------------------
def test_figures_build_and_escape_user_text(minilm, pair):
    from analysis import flow as F
    from viz import heads as V

    figs = [V.change_grid(pair), V.delta_heatmap(pair.delta(3, 1))]
    hostile = "<b>bold</b> and <script>alert(1)</script> it was tired"
    vn = H.value_norms(minilm, hostile)
    figs += [*V.value_norm_heatmaps(vn, 3, 1), V.special_share_scatter(vn)]
    tr = minilm.trace(hostile)
    figs.append(V.flow_bars(F.flow_and_rollout(tr.encoder_attention, tr.source_tokens, 3)))
    eff = H.encoder_effect(minilm, hostile, [(3, 1)])
    figs += [V.token_change_bars(eff), *V.before_after_heatmaps(eff, 4, 0)]
    figs.append(V.effect_grid(H.rank_heads_by_effect(minilm, A), chosen=[(3, 1)]))
    for f in figs:
        js = f.to_json()
        assert "<script>" not in js and "<b>bold" not in js
    grid = figs[0]  # the flipped head carries the mark and a dotted outline
    marks = [(la, h) for la, row in enumerate(grid.data[0].text) for h, t in enumerate(row) if t]
    assert marks == [(4, 0)] and grid.data[0].text[4][0].startswith(V.FLIP_MARK)
    assert [(s.x0, s.y0) for s in grid.layout.shapes] == [(-0.5, 3.5)]
    from ui.heads import ranked_table  # the page's table: headers and head names in the interface language
    table = ranked_table(pair, "en")
    assert table[0]["Head"] == "Layer 3 · Head 1"
    assert [r["Head"] for r in table if r["Flipped"]] == ["Layer 4 · Head 0"]
    ko = ranked_table(pair, "ko")
    assert ko[0]["헤드"] == "레이어 3 · 헤드 1" and "A: w(it)" not in ko[0]


def test_seq2seq_figures(seq2seq_tiny):
    """The logit lens heatmap and the before / after bars draw exactly the analysis' numbers."""
    from viz import heads as V

    lens = H.logit_lens(seq2seq_tiny, "the cat sat", task="copy")
    fig = V.logit_lens_heatmap(lens)
    (heat,) = fig.data
    np.testing.assert_array_equal(np.asarray(heat.z, dtype=np.float32), np.asarray(lens.top_probs, np.float32))
    assert [list(r) for r in heat.text] == [list(r) for r in lens.top_tokens]
    assert len(heat.y) == len(lens.layers) == seq2seq_tiny.config.n_decoder_layers
    deff = H.decoder_effect(seq2seq_tiny, "the cat sat", [("cross", 1, 0)], task="copy")
    before, after = V.top_k_bars(deff).data
    rows = deff.top_rows()
    assert list(before.y) == [r["before"] for r in rows] and list(after.y) == [r["after"] for r in rows]
    assert len(rows) >= 1 and all(0.0 <= r["before"] <= 1.0 and 0.0 <= r["after"] <= 1.0 for r in rows)
