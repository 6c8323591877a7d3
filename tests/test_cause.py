"""Generation replay, direct logit attribution and activation patching (model/cause/) against transformers on the
same weights: a tiny random llama folder (6 query heads on 2 key/value heads) and SmolLM2-135M on its installed GGUF
(transformers reading the same file). Greedy generation equals transformers' `generate`; every step's attention row
equals the full forward over the final sequence (<= 1e-5); DLA and patching equal an independent computation with
hooks on transformers' modules (tests/cause_reference.py) within 1e-4; the parts sum to the logit difference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cause_reference import dla, patch_head, patch_residual
from gguf_support import make_llama
from hf_support import make_gpt2

from model.cause.attribution import attribute
from model.cause.generation import Sampling, choose, generate, sampling_distribution
from model.cause.patching import patch
from model.errors import InputError
from model.hf.load import load_local

CPU = torch.device("cpu")
ATOL_ATT, ATOL = 1e-5, 1e-4
CLEAN, CORRUPT, TARGET, FOIL = "The cat sat on the", "The dog sat on the", " mat", " park"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    ref, path, _ = make_llama(tmp_path_factory.mktemp("llama") / "llama", "llama")
    ref.config._attn_implementation = "eager"
    return load_local(CPU, path), ref


def hf_generate(ref, ids: list[int], n: int) -> list[int]:
    t = torch.tensor([ids])
    with torch.no_grad():
        out = ref.generate(t, max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1, pad_token_id=0,
                           attention_mask=torch.ones_like(t))
    return out[0].tolist()


def check_rows(ours, ref, g) -> None:
    """Every step's row equals the row of one full forward over the final sequence (ours and transformers')."""
    ids, P = g.ids, len(g.prompt_ids)
    with torch.inference_mode():
        att = torch.stack(ours.module(torch.tensor([ids])).decoder.self_attention)[:, 0].numpy()  # (L, H, n, n)
        hf = torch.stack(ref(input_ids=torch.tensor([ids]), output_attentions=True).attentions)[:, 0].numpy()
    rows = g.step_rows()
    N = len(g.steps)
    assert rows.shape == (N, att.shape[0], att.shape[1], P + N)
    for k in range(N):
        q = P + k - 1  # the query that produced generated token k
        np.testing.assert_allclose(rows[k, :, :, : q + 1], att[:, :, q, : q + 1], rtol=0, atol=ATOL_ATT)
        np.testing.assert_allclose(rows[k, :, :, : q + 1], hf[:, :, q, : q + 1], rtol=0, atol=ATOL_ATT)
        assert not rows[k, :, :, q + 1:].any()  # zeros past the keys it could see
        np.testing.assert_array_equal(g.steps[k].sink, rows[k, :, :, 0])


# ---- generation ---------------------------------------------------------------------------------------------------
def test_greedy_replay_equals_transformers_generate_and_the_full_forward(tiny):
    ours, ref = tiny
    g = generate(ours, "The animal didn't cross the street", 12)
    assert g.ids == hf_generate(ref, list(g.prompt_ids), 12)
    check_rows(ours, ref, g)
    cfg = ours.config
    L, G, k, P = cfg.n_decoder_layers, cfg.kv_heads, cfg.d_k, len(g.prompt_ids)
    assert g.kv_group == [0, 0, 0, 1, 1, 1]  # 6 query heads on 2 key/value heads
    d, h, f, V = cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.vocab_size

    def per(n, mm):  # one layer: Q, K, V; QK^T and x V; W_O; the gated Feed Forward's three matrices
        return n * d * (h + 2 * G) * k + 2 * n * h * mm * k + n * h * k * d + 3 * n * d * f

    for j, s in enumerate(g.steps):
        m = P + j  # keys after this step
        assert s.position == m and s.n_fed == (P if j == 0 else 1)
        assert s.cache_bytes == 2 * L * G * m * k * 4  # float32 keys and values
        assert s.k_new.shape == s.v_new.shape == (L, G, s.n_fed, k)
        assert s.macs_cached == L * per(s.n_fed, m) + d * V and s.macs_full == L * per(m, m) + d * V
        assert s.drawn_prob == 1.0 and s.top[0].id == s.choice.id and s.choice.prob == pytest.approx(s.top[0].prob)
    # the keys appended at step j are the cache's rows: the full forward's keys of those positions (after RoPE)
    with torch.inference_mode():
        rec = ours.module(torch.tensor([g.ids[:-1]]), record=True)
    k_full = rec.decoder.records[1]["self"].record["k"][0]  # (H, n, k): shared kv heads repeated
    np.testing.assert_allclose(g.steps[3].k_new[1, :, 0], k_full[::3, P + 2].numpy(), rtol=0, atol=1e-5)


def test_sampling_is_the_documented_distribution_and_seeded():
    logits = torch.tensor([2.0, 1.0, 0.5, 0.5, -1.0, 3.0])
    p = sampling_distribution(logits, Sampling(1.0))
    np.testing.assert_allclose(p.numpy(), torch.softmax(logits.double(), -1).numpy(), rtol=0, atol=1e-12)
    p = sampling_distribution(logits, Sampling(2.0, top_k=3))  # the three largest (3.0, 2.0, 1.0) at T = 2
    want = torch.zeros(6, dtype=torch.float64)
    want[[5, 0, 1]] = torch.softmax(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64) / 2, -1)
    np.testing.assert_allclose(p.numpy(), want.numpy(), rtol=0, atol=1e-12)
    p = sampling_distribution(logits, Sampling(1.0, top_k=4))  # ties at the 4th value are kept: 5 tokens
    assert int((p > 0).sum()) == 5
    full = torch.softmax(logits.double(), -1)  # 0.61, 0.22, 0.08, 0.05, 0.05, 0.01 (ids 5, 0, 1, 2, 3, 4)
    p = sampling_distribution(logits, Sampling(1.0, top_p=0.8))  # 0.61 < 0.8, 0.61 + 0.22 >= 0.8: two tokens
    assert set(torch.nonzero(p).flatten().tolist()) == {5, 0}
    np.testing.assert_allclose(p[[5, 0]].numpy(), (full[[5, 0]] / full[[5, 0]].sum()).numpy(), rtol=0, atol=1e-12)
    assert choose(logits, Sampling(), None) == (5, 1.0)
    draws = [choose(logits, Sampling(1.0, seed=3), torch.Generator().manual_seed(3))[0] for _ in range(3)]
    assert len(set(draws)) == 1
    with pytest.raises(InputError):
        Sampling(-1.0)
    with pytest.raises(InputError):
        Sampling(1.0, top_p=0.0)


def test_sampled_replay_is_reproducible_and_top_k_1_is_greedy(tiny):
    ours, ref = tiny
    a = generate(ours, CLEAN, 8, Sampling(1.5, seed=7))
    b = generate(ours, CLEAN, 8, Sampling(1.5, seed=7))
    c = generate(ours, CLEAN, 8, Sampling(1.5, seed=8))
    assert a.ids == b.ids and a.ids != c.ids
    assert all(0 < s.drawn_prob <= 1 for s in a.steps)
    assert generate(ours, CLEAN, 8, Sampling(1.0, top_k=1)).ids == generate(ours, CLEAN, 8).ids
    check_rows(ours, ref, a)  # a sampled text is read the same way


# ---- attribution --------------------------------------------------------------------------------------------------
def test_dla_equals_hooks_on_transformers_and_sums_to_the_logit_difference(tiny):
    ours, ref = tiny
    for target, foil in ((TARGET, FOIL), (TARGET, None)):
        a = attribute(ours, CLEAN, target, foil)
        want = dla(ref, list(a.ids), a.target.id, None if foil is None else a.foil.id)
        np.testing.assert_allclose(a.head, want["head"], rtol=0, atol=ATOL)
        np.testing.assert_allclose(a.mlp, want["mlp"], rtol=0, atol=ATOL)
        assert a.embed == pytest.approx(want["embed"], abs=ATOL) and a.total == pytest.approx(want["total"], abs=ATOL)
        assert a.bias == 0.0 and not a.attn_bias.any()  # a llama has no biases: nothing is left over
        assert abs(a.error) < 1e-5 and a.parts_sum == pytest.approx(a.total, abs=1e-5)
    assert a.foil is None and a.target.token == "Ġmat"
    own = attribute(ours, CLEAN)  # the model's own next token
    assert own.target.id == own.predicted.id


def test_dla_on_layernorm_with_biases_names_its_remainder(tmp_path):
    """GPT-2 (LayerNorm, biases everywhere): the parts plus the named remainders (each b_O, the final beta and the
    output bias) are the logit difference."""
    _, path = make_gpt2(tmp_path / "gpt2")
    m = load_local(CPU, path)
    a = attribute(m, CLEAN, " the", ".")  # two one-token answers of this small vocabulary
    assert a.bias != 0.0 and a.attn_bias.any() and a.total != 0.0
    assert abs(a.error) < 1e-5
    with torch.inference_mode():
        logits = m.module(torch.tensor([list(a.ids)])).logits[0, -1]
    assert a.total == pytest.approx(float(logits[a.target.id] - logits[a.foil.id]), abs=1e-5)


# ---- patching -------------------------------------------------------------------------------------------------------
def test_patching_equals_hooks_on_transformers(tiny):
    ours, ref = tiny
    p = patch(ours, CLEAN, CORRUPT, TARGET, FOIL)
    t, f = p.target.id, p.foil.id
    cid, xid = list(p.clean_ids), list(p.corrupt_ids)
    with torch.no_grad():
        for ids, diff in ((cid, p.clean_diff), (xid, p.corrupt_diff)):
            last = ref(input_ids=torch.tensor([ids])).logits[0, -1]
            assert diff == pytest.approx(float(last[t] - last[f]), abs=ATOL)
    L, H = p.head.shape
    want = np.array([[patch_head(ref, cid, xid, t, f, la, h) for h in range(H)] for la in range(L)])
    np.testing.assert_allclose(p.head, want, rtol=0, atol=ATOL)
    want = np.array([[patch_residual(ref, cid, xid, t, f, la, i) for i in range(len(cid))] for la in range(L)])
    np.testing.assert_allclose(p.residual, want, rtol=0, atol=ATOL)
    # position 0 ("The") is the same token in both prompts: patching it changes nothing
    np.testing.assert_allclose(p.residual[:, 0], p.corrupt_diff, rtol=0, atol=1e-5)
    norm = p.normalised(p.head)
    np.testing.assert_allclose(norm, (p.head - p.corrupt_diff) / (p.clean_diff - p.corrupt_diff), rtol=0, atol=1e-5)


def test_patching_bad_pairs(tiny):
    ours, _ = tiny
    with pytest.raises(InputError) as e:
        patch(ours, CLEAN, "The dog sat on the mat", TARGET, FOIL)
    assert e.value.key == "cause_lengths" and e.value.params == {"clean": 5, "corrupt": 6}
    with pytest.raises(InputError) as e:
        patch(ours, CLEAN, CORRUPT, " ", FOIL)
    assert e.value.key == "cause_empty_answer"
    p = patch(ours, CLEAN, CORRUPT, " Paris", " Rome", heads=False)
    assert p.head is None and p.target.n_tokens == 5 and p.target.token == "Ġ"  # its first token stands for it
    same = patch(ours, CLEAN, CLEAN, TARGET, FOIL, residual=False)
    assert np.isnan(same.normalised(same.head)).all()  # clean = corrupted: nothing to normalise by


def test_the_views_refuse_an_encoder(minilm):
    with pytest.raises(InputError) as e:
        attribute(minilm, CLEAN)
    assert e.value.key == "cause_decoder_only"
    with pytest.raises(InputError):
        generate(minilm, CLEAN, 3)


# ---- SmolLM2 --------------------------------------------------------------------------------------------------------
EIFFEL, COLOSSEUM = "The Eiffel Tower is located in the city of", "The Colosseum is located in the city of"


@pytest.fixture(scope="module")
def smollm2(smollm2_reference):
    from model import load_model

    return load_model("smollm2-135m", "cpu"), smollm2_reference[0]


@pytest.mark.slow
# one unit of work with test_llama's SmolLM2 test (tests/conftest.py SHARED): one reading of the GGUF per worker
def test_smollm2_generation_dla_and_patching_against_transformers(smollm2):
    ours, ref = smollm2
    g = generate(ours, "The capital of France is", 20)
    assert g.ids == hf_generate(ref, list(g.prompt_ids), 20)
    check_rows(ours, ref, g)
    assert g.n_heads == 9 and g.n_kv_heads == 3 and g.kv_group == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert g.steps[-1].cache_bytes == 2 * 30 * 3 * 64 * 4 * (len(g.prompt_ids) + 19)

    a = attribute(ours, EIFFEL, " Paris", " Rome")
    want = dla(ref, list(a.ids), a.target.id, a.foil.id)
    np.testing.assert_allclose(a.head, want["head"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(a.mlp, want["mlp"], rtol=0, atol=ATOL)
    assert a.embed == pytest.approx(want["embed"], abs=ATOL) and a.total == pytest.approx(want["total"], abs=ATOL)
    assert (a.target.token, a.foil.token) == ("ĠParis", "ĠRome") and abs(a.error) < 1e-4

    p = patch(ours, EIFFEL, COLOSSEUM, " Paris", " Rome")
    assert len(p.clean_ids) == len(p.corrupt_ids) == 10 and p.clean_diff > 0 > p.corrupt_diff
    t, f = p.target.id, p.foil.id
    cid, xid = list(p.clean_ids), list(p.corrupt_ids)
    cells = [(la, la % 9) for la in range(30)]  # every layer, every head index
    want = [patch_head(ref, cid, xid, t, f, la, h) for la, h in cells]
    np.testing.assert_allclose([p.head[c] for c in cells], want, rtol=0, atol=ATOL)
    cells = [(0, 2), (7, 3), (15, 9), (24, 9), (29, 9)]
    want = [patch_residual(ref, cid, xid, t, f, la, i) for la, i in cells]
    np.testing.assert_allclose([p.residual[c] for c in cells], want, rtol=0, atol=ATOL)


# ---- an encoder-decoder's decoder -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fixture", ["seq2seq_tiny", "bergamot_en_pt"])
def test_a_decoders_replay_equals_its_greedy_decoding_and_the_full_forward(fixture, request):
    """seq2seq-tiny (masked self-attention) and a translator (an SSRU, within its shortlist): the replay's tokens
    are the model's own greedy decoding, and every step's cross-attention row (and self-attention row) equals the
    teacher-forced forward over the final decoder input."""
    from model.cause.translation import generate_seq2seq, seq2seq_macs

    m = request.getfixturevalue(fixture)
    text = "The cat sat on the mat."
    src = m.encode_source(text).ids
    g = generate_seq2seq(m, text, 20)
    assert g.ids == m.decode_ids(src) and g.ids[-1] == m.eos_id
    dec_in = g.ids[:-1]  # [bos, y_0 .. y_{N-2}]: the inputs the steps fed
    with torch.inference_mode():
        out = m.module(torch.tensor([src]), torch.tensor([dec_in]))
    cross = torch.stack(out.decoder.cross_attention)[:, 0].numpy()  # (L, H, T, n_src)
    for k, s in enumerate(g.steps):
        np.testing.assert_allclose(s.cross, cross[:, :, k], rtol=0, atol=ATOL_ATT)
        if g.has_self_rows:
            self_att = torch.stack(out.decoder.self_attention)[:, 0].numpy()
            np.testing.assert_allclose(s.rows, self_att[:, :, k, : k + 1], rtol=0, atol=ATOL_ATT)
        assert s.macs_cached == seq2seq_macs(m.config, 1, k + 1, len(src), project_memory=k == 0)
    ssru = m.config.decoder_mixer == "ssru"
    assert g.has_self_rows == (not ssru) and g.shortlist == ssru
    sizes = [s.cache_bytes for s in g.steps]
    L, d = m.config.n_decoder_layers, m.config.d_model
    kv_src = 2 * L * len(src) * d * 4  # the cross-attention's keys and values of the source, float32
    if ssru:  # a memory of d numbers a layer: the cache does not grow
        assert sizes == [kv_src + L * d * 4] * len(sizes)
    else:
        assert sizes == [kv_src + 2 * L * (k + 1) * d * 4 for k in range(len(sizes))]


# ---- the newer families: Qwen3 (q/k norms) and Gemma 3 (sliding windows, post-norms, 1 + γ) ------------------------
@pytest.mark.parametrize("arch", ["qwen3", "gemma3"])
def test_qwen3_and_gemma3_replay_and_patching_against_transformers(tmp_path, arch):
    """Greedy replay equals transformers' generate and the full forward (Gemma 3's local layers see a window of 4
    through the cache too); head patching equals the hooks; DLA equals them on Qwen3, and Gemma 3, whose post-norms
    normalise each sublayer's output before the residual sum, is refused by its config."""
    ref, path, _ = make_llama(tmp_path / arch, arch)
    ref.config._attn_implementation = "eager"
    ours = load_local(CPU, path)
    g = generate(ours, "The animal didn't cross the street", 10)
    assert g.ids == hf_generate(ref, list(g.prompt_ids), 10)
    check_rows(ours, ref, g)
    p = patch(ours, CLEAN, CORRUPT, TARGET, FOIL, residual=False)
    cid, xid = list(p.clean_ids), list(p.corrupt_ids)
    want = np.array([[patch_head(ref, cid, xid, p.target.id, p.foil.id, la, h) for h in range(p.head.shape[1])]
                     for la in range(p.head.shape[0])])
    np.testing.assert_allclose(p.head, want, rtol=0, atol=ATOL)
    if arch == "gemma3":
        with pytest.raises(InputError) as e:
            attribute(ours, CLEAN, TARGET, FOIL)
        assert e.value.key == "cause_not_additive"
        return
    a = attribute(ours, CLEAN, TARGET, FOIL)
    want = dla(ref, list(a.ids), a.target.id, a.foil.id)
    np.testing.assert_allclose(a.head, want["head"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(a.mlp, want["mlp"], rtol=0, atol=ATOL)
    assert a.total == pytest.approx(want["total"], abs=ATOL) and abs(a.error) < 1e-5
