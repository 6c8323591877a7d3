"""Mask lab computations: the padded batch recomputed from the model's own modules equals the model's attention,
blocked keys get weight exactly 0, rows sum to 1, the decoder uses padding AND look-ahead, and figures draw
blocked cells as NaN (grey), never as a huge negative colour."""

import numpy as np
import pytest
import torch

from analysis import masks as am
from model.masks import causal_mask
from viz import masks as vm

PAIR = ["this is my car", "that is not"]


@pytest.fixture(scope="module")
def run(minilm):
    return am.padded_run(minilm, PAIR)


def module_attention(minilm, run) -> np.ndarray:
    """(L, b, h, n, n): the model's own forward (its module, with the padding as attention_mask) on the run's ids:
    an independent path from analysis.masks' embedding + encoder call."""
    with torch.inference_mode():
        out = minilm.module.encode(torch.as_tensor(run.ids), keep=torch.as_tensor(run.mask))
    return torch.stack(out.self_attention).numpy()


def test_padded_run_tokens_and_mask(run, minilm):
    assert run.tokens[0] == ["[CLS]", "this", "is", "my", "car", "[SEP]"]
    assert run.tokens[1] == ["[CLS]", "that", "is", "not", "[SEP]", "[PAD]"]
    np.testing.assert_array_equal(run.mask, [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]])
    np.testing.assert_allclose(run.attention, module_attention(minilm, run), atol=1e-6)


@pytest.mark.parametrize("layer,head,row", [(0, 0, 1), (3, 7, 1), (5, 11, 0)])
def test_stages_reproduce_the_models_padded_attention(run, minilm, layer, head, row):
    st = am.padded_stages(run, layer, head, row)
    ref = module_attention(minilm, run)[layer, row, head]  # (n, n)
    np.testing.assert_allclose(st["weights"], ref, atol=1e-5)
    np.testing.assert_allclose(st["scaled"], st["scores"] / np.sqrt(32), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(st["weights"].sum(axis=1), 1.0, atol=1e-5)
    blocked = ~st["mask"]
    assert blocked.sum() == (6 * 1 if row == 1 else 0)
    assert np.all(st["weights"][blocked] == 0.0)  # exactly 0, not just small
    assert np.all(np.isneginf(st["masked"][blocked])) and np.all(np.isfinite(st["masked"][~blocked]))
    checks = am.stage_checks(st)
    assert checks["max_row_sum_error"] < 1e-5 and checks["max_blocked_weight"] == 0.0


def test_padded_stages_check_ranges(run, minilm):
    with pytest.raises(ValueError):
        am.padded_stages(run, 6, 0, 0)
    with pytest.raises(ValueError):
        am.padded_stages(run, 0, 12, 0)


def test_padded_batch_through_an_encoder_decoders_encoder(paper_base):
    r = am.padded_run(paper_base, ["I am sam", "I"])
    st = am.padded_stages(r, 2, 3, 1)
    assert r.tokens[1][-1] == "[PAD]"
    np.testing.assert_allclose(st["weights"], r.attention[2, 1, 3], atol=1e-5)
    assert np.all(st["weights"][:, ~r.mask[1]] == 0.0)


def test_decoder_run_uses_padding_and_look_ahead(paper_base):
    dec = am.decoder_run(paper_base, "I am sam", "I am sam", n_pad=2)
    T = len(dec.tokens)
    assert dec.tokens[0] == "[CLS]" and dec.tokens[-2:] == ["[PAD]", "[PAD]"]
    expected = causal_mask(T).numpy() & (dec.ids != 0)[None, :]
    np.testing.assert_array_equal(dec.mask, expected)
    for layer, head in [(0, 0), (5, 7)]:
        st = am.decoder_stages(dec, layer, head)
        np.testing.assert_allclose(st["weights"], dec.attention[layer, head], atol=1e-5)
        assert np.all(st["weights"][~dec.mask] == 0.0)
        assert np.all(np.triu(st["weights"], 1) == 0.0)  # never attends to a later position
        np.testing.assert_allclose(st["weights"].sum(1), 1.0, atol=1e-5)


def test_decoder_run_matches_the_models_own_forward(paper_base):
    """The recorded decoder attention is what Transformer.forward gives for the same padded target."""
    dec = am.decoder_run(paper_base, "this is my car", "that is not", n_pad=1)
    src = paper_base.encode_source("this is my car").ids
    with torch.inference_mode():
        out = paper_base.module(torch.tensor([src]), torch.tensor([dec.ids.tolist()]))
    np.testing.assert_allclose(dec.attention, torch.stack(out.decoder.self_attention)[:, 0].numpy(), atol=1e-6)


def test_example_masks_i_am_sam_pad():
    ex = am.example_masks(["I", "am", "sam", "<pad>"])
    np.testing.assert_array_equal(ex["causal"], np.tril(np.ones((4, 4), bool)))
    np.testing.assert_array_equal(ex["padding"], np.array([[1, 1, 1, 0]] * 4, bool))
    np.testing.assert_array_equal(ex["combined"], [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]])


def test_stage_figures_show_blocked_cells_as_nan_and_row_sums(run, minilm):
    st = am.padded_stages(run, 1, 2, 1)
    toks = run.tokens[1]
    figs = vm.stage_figures(st, toks, toks, title="L1 H2")
    masked_z = np.asarray(figs["masked"].data[0].z, dtype=float)
    assert np.isnan(masked_z[:, -1]).all() and np.isfinite(masked_z[:, :-1]).all()
    assert np.nanmin(masked_z) > -1e3  # no -1e38 / -inf colour
    assert len(figs["masked"].data) == 2  # the ✕ markers on blocked cells
    w = np.asarray(figs["weights"].data[0].z, dtype=float)
    assert list(figs["weights"].data[0].x)[-1] == "Σ row"
    np.testing.assert_allclose(w[:, -1], 1.0, atol=1e-5)
    assert np.all(w[:, -2] == 0.0)  # the [PAD] column


def test_mask_figures_label_tokens(run):
    fig = vm.mask_heatmap(causal_mask(3).numpy(), ["I", "am", "sam"], ["I", "am", "sam"], title="causal")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), np.tril(np.ones((3, 3))))
    assert list(fig.data[0].x) == ["I", "am", "sam"]
    b = vm.batch_mask_heatmap(run.tokens, run.mask)
    assert b.data[0].text[1][-1] == "[PAD]" and np.asarray(b.data[0].z)[1, -1] == 0
