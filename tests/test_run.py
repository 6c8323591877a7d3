"""The one run request (model/run.py) through the one forward: each edit against its formula written out by hand (head
surgery, a hand-made forward) bit for bit where the same operations run, Resume against a run from the
embeddings, the typed records against the stack's own outputs, and its errors."""

from __future__ import annotations

import pytest
import torch

from model.config import preset
from model.run import HeadOutput, Keep, Residual, Resume, Run, ablate, compile_plans
from model.transformer import DecodeCache, Transformer


@pytest.fixture(scope="module")
def gpt():
    """A small random decoder-only pre-LN model (GPT-2's shape) and a random encoder-decoder."""
    torch.manual_seed(0)
    cfg = preset("tiny").replace(n_encoder_layers=0, n_decoder_layers=3, n_heads=4, d_model=32, d_ff=48,
                                 norm_placement="pre", positional="learned", scale_embeddings=False, mask_pad="none")
    m = Transformer(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m


IDS = torch.tensor([[5, 9, 2, 33, 7, 1, 40]])


def run(m, **kw):
    with torch.inference_mode():
        return m.run(Run(IDS, **kw))


def test_a_plain_request_is_the_forward_bit_for_bit(gpt):
    with torch.inference_mode():
        ref = gpt(IDS)
    rec = run(gpt, keep=Keep(heads=True, sublayers=True, hidden=True))
    assert torch.equal(rec.logits, ref.logits)
    for i, w in enumerate(ref.decoder.self_attention):
        assert torch.equal(rec.main.layers[i].attention, w)
    assert torch.equal(rec.main.hidden, ref.decoder.hidden) and torch.equal(rec.main.final, ref.decoder.final)
    assert len(rec.main.hidden_states) == 4 and rec.encoder is None and rec.main is rec.decoder
    # the typed record: the layer's input, its sublayers' outputs and the next layer's input add up
    la = rec.main.layers
    for i in range(2):
        torch.testing.assert_close(la[i].resid_pre + la[i].attn_out + la[i].mlp_out, la[i + 1].resid_pre,
                                   rtol=0, atol=1e-6)
    # Z W_O + b_O is the attention sublayer's output
    attn = gpt.decoder.layers[1].self_attn
    z = la[1].heads.transpose(1, 2).flatten(2)  # (1, n, h*k)
    torch.testing.assert_close(attn.out_proj(z), la[1].attn_out, rtol=0, atol=0)
    last = run(gpt, keep=Keep(logits="last"))
    assert last.logits.shape == (1, 1, 64)  # the one row's product (the same numbers up to the GEMM's blocking)
    torch.testing.assert_close(last.logits[0, 0], ref.logits[0, -1], rtol=0, atol=1e-6)
    assert run(gpt, keep=Keep(logits="none")).logits is None


def _surgery_by_hand(z: torch.Tensor, heads: tuple[int, ...], mode: str) -> torch.Tensor:
    """z (b, h, n, k) with the chosen heads zeroed, replaced by their mean over positions, or every other head zeroed
    ("keep"): the formula of head surgery, written out."""
    chosen = torch.zeros(z.shape[1], dtype=torch.bool)
    chosen[list(heads)] = True
    if mode == "keep":
        chosen = ~chosen
    repl = z.mean(dim=2, keepdim=True).expand_as(z) if mode == "mean" else torch.zeros_like(z)
    return torch.where(chosen[None, :, None, None], repl, z)


@pytest.mark.parametrize("mode", ["zero", "mean", "keep"])
def test_ablate_is_head_surgery_written_out(gpt, mode):
    """run.ablate's edits give layer 1 exactly the hand-made Z, and the logits of that Z set head by head; the
    forward's `edits` keyword is the same request."""
    heads = (0, 2)
    base = run(gpt, keep=Keep(heads=True)).main.layers[1].heads  # (1, h, n, k) layer 1's Z, unedited
    want = _surgery_by_hand(base, heads, mode)
    edits = ablate(1, heads, mode, n_heads=4)
    rec = run(gpt, edits=edits, keep=Keep(heads=True))
    assert torch.equal(rec.main.layers[1].heads, want)
    assert torch.equal(rec.main.layers[0].heads, run(gpt, keep=Keep(heads=True)).main.layers[0].heads)
    by_hand = run(gpt, edits=tuple(HeadOutput(1, h, "set", want[0, h]) for h in range(4)))
    assert torch.equal(rec.logits, by_hand.logits)
    with torch.inference_mode():
        assert torch.equal(gpt(IDS, edits=edits).logits, rec.logits)
    assert not torch.equal(rec.logits, run(gpt).logits)  # the edit changed something
    assert [(e.layer, e.head, e.op) for e in edits] == (
        [(1, 1, "zero"), (1, 3, "zero")] if mode == "keep" else [(1, 0, mode), (1, 2, mode)])


def test_ablate_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="unknown ablation"):
        ablate(0, (1,), "explode")
    with pytest.raises(ValueError, match="n_heads"):
        ablate(0, (1,), "keep")
    assert ablate(2, (), "zero") == ()  # nothing chosen: nothing changed
    assert [e.head for e in ablate(2, (), "keep", n_heads=3)] == [0, 1, 2]  # keep none: every head zeroed


def test_set_per_row_positions_and_layers(gpt):
    """One batch, a different patch in each row: row r equals a run of that patch alone."""
    donor = run(gpt, keep=Keep(heads=True)).main.layers  # the same ids: setting Z to its own value changes nothing
    other = torch.randn(3, 8)  # (positions, k)
    edits = (HeadOutput(0, 1, "set", other, positions=(1, 4, 6), rows=(0,)), HeadOutput(2, 3, "zero", rows=(1,)),
             HeadOutput(1, 0, "set", donor[1].heads[0, 0], rows=(2,)))
    with torch.inference_mode():
        rec = gpt.run(Run(IDS.expand(3, -1), edits=edits))
        one = [gpt.run(Run(IDS, edits=(HeadOutput(0, 1, "set", other, positions=(1, 4, 6)),))),
               gpt.run(Run(IDS, edits=(HeadOutput(2, 3, "zero"),))), gpt.run(Run(IDS))]
    for r in range(3):
        torch.testing.assert_close(rec.logits[r], one[r].logits[0], rtol=0, atol=1e-6)
    # the untouched positions before the first edited one keep their numbers; position 1 onwards change
    base = run(gpt).logits
    assert torch.equal(rec.logits[0, 0], base[0, 0]) and not torch.allclose(rec.logits[0, 1], base[0, 1])


def test_residual_edit_and_resume(gpt):
    """A Residual edit at layer 2 of position 3 equals setting it by hand; Resume from a run's resid_pre gives that
    run's logits (the layers below are not run)."""
    base = run(gpt, keep=Keep(sublayers=True))
    value = torch.randn(1, 32)
    rec = run(gpt, edits=(Residual(2, value, positions=(3,)),))
    x = base.main.layers[2].resid_pre.clone()
    x[0, 3] = value
    ref = run(gpt, edits=(Resume(2, x),))
    torch.testing.assert_close(rec.logits, ref.logits, rtol=0, atol=0)
    again = run(gpt, edits=(Resume(1, base.main.layers[1].resid_pre),), keep=Keep(heads=True))
    assert torch.equal(again.logits, base.logits)
    assert sorted(again.main.layers) == [1, 2]  # layer 0 was not run
    # a Residual at n_layers sets the stack's output (before the final norm)
    out = run(gpt, edits=(Residual(3, torch.zeros(7, 32)),))
    assert torch.equal(out.main.hidden, torch.zeros(1, 7, 32))


def test_upto_and_cache(gpt):
    rec = run(gpt, upto=1)
    assert rec.logits is None and rec.main.final is None and sorted(rec.main.layers) == [0, 1]
    full = run(gpt)
    cache = DecodeCache(3)
    with torch.inference_mode():
        first = gpt.run(Run(IDS[:, :4], cache=cache, keep=Keep(logits="last")))
        rest = [gpt.run(Run(IDS[:, i:i + 1], cache=cache, keep=Keep(logits="last"))) for i in range(4, 7)]
    torch.testing.assert_close(first.logits[0, 0], full.logits[0, 3], rtol=0, atol=1e-5)
    for i, r in zip(range(4, 7), rest):
        torch.testing.assert_close(r.logits[0, 0], full.logits[0, i], rtol=0, atol=1e-5)
        torch.testing.assert_close(r.main.layers[2].attention[0, :, 0], full.main.layers[2].attention[0, :, i, : i + 1],
                                   rtol=0, atol=1e-6)
    assert cache.start == 7 and cache.layers[0]["self"]["k"].shape == (1, 4, 7, 8)


def test_the_older_keywords_still_work_beside_a_plan(gpt):
    with torch.inference_mode():
        out = gpt(IDS, record=True, hidden=True)
    assert set(out.decoder.records) == {0, 1, 2} and out.decoder.kept == {}
    rec = run(gpt, keep=Keep(detail=frozenset({1})))
    assert rec.main.layers[1].detail["layer"]["ffn_out"].shape == (1, 7, 32)
    assert rec.main.layers[0].detail is None


def test_errors(gpt):
    with pytest.raises(ValueError, match="unknown head op"):
        HeadOutput(0, 0, "swap")
    with pytest.raises(ValueError, match="op='set'"):
        HeadOutput(0, 0, "set")
    with pytest.raises(ValueError, match="op='set'"):
        HeadOutput(0, 0, "zero", value=torch.zeros(1))
    with pytest.raises(ValueError, match="layer 3 out of range 0..2"):
        run(gpt, edits=(HeadOutput(3, 0),))
    with pytest.raises(ValueError, match="head 4 out of range"):
        run(gpt, edits=(HeadOutput(0, 4),))
    with pytest.raises(ValueError, match="no encoder"):
        compile_plans((HeadOutput(0, 0, block="encoder"),), Keep(), "decoder_self", {"decoder": 3})
    with pytest.raises(ValueError, match="one Resume"):
        run(gpt, edits=(Resume(0, torch.zeros(1, 7, 32)), Resume(1, torch.zeros(1, 7, 32))))
