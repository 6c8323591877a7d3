"""Head atlas (analysis.atlas): the committed probe battery, the per-label scores on hand-made attention, the MiniLM
atlas (known heads), export and the CLI."""

import csv
import io
import json

import numpy as np
import pytest

from analysis import atlas as AT
from analysis.heads import encoder_input, locate


def test_battery_has_50_labelled_pairs_found_in_minilm_tokens(minilm):
    probes = AT.load_probes()
    assert len(probes) >= 50 and len({p.sentence for p in probes}) == len(probes)
    for p in probes:
        inp = encoder_input(minilm, p.sentence)
        pron = locate(inp, p.pronoun, what="pronoun", sentence=p.sentence)  # exactly once, or InputError
        ante = locate(inp, p.antecedent, what="antecedent", sentence=p.sentence)
        assert not set(pron) & set(ante)
        assert p.distractor.lower() in p.sentence.lower()


def _scores(att, tokens, special, coref=None):
    return AT.sentence_scores(np.asarray(att, dtype=np.float32)[None, None], tuple(tokens), tuple(special), coref)


def test_scores_on_hand_made_attention():
    toks = ["[CLS]", "the", "cat", ",", "the", "dog", "[SEP]"]
    spec = [True, False, False, False, False, False, True]
    n = len(toks)
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1.0
    s = _scores(prev, toks, spec)
    assert s["prev"][0, 0] == pytest.approx(1.0) and s["next"][0, 0] == 0.0 and s["self"][0, 0] == 0.0
    assert s["broad"][0, 0] == pytest.approx(0.0, abs=1e-6)
    uniform = np.full((n, n), 1 / n)
    s = _scores(uniform, toks, spec)
    assert s["broad"][0, 0] == pytest.approx(1.0, abs=1e-5) and s["sink"][0, 0] == pytest.approx(2 / n)
    assert s["punct"][0, 0] == pytest.approx(1 / n) and np.isnan(s["coref"][0, 0])
    same = np.zeros((n, n))
    same[:, 0] = 1.0
    same[1, 4] = same[4, 1] = 1.0  # "the" -> the other "the"
    same[1, 0] = same[4, 0] = 0.0
    s = _scores(same, toks, spec)
    assert s["same_word"][0, 0] == pytest.approx(1.0) and s["sink"][0, 0] == pytest.approx(3 / 5)
    coref = np.zeros((n, n))
    coref[:, 6] = 1.0
    coref[5] = [0.5, 0, 0.3, 0, 0.1, 0.1, 0]  # from "dog": most on [CLS] (ignored), then "cat"
    s = _scores(coref, toks, spec, coref=((5,), (2,)))
    assert s["coref"][0, 0] == 1.0 and s["coref_mass"][0, 0] == pytest.approx(0.3 / 0.4)


def test_top_label_rule():
    z = lambda v: np.array([[v]], dtype=np.float32)  # noqa: E731
    base = {k: z(0.0) for k in AT.LABELS}
    assert AT.top_labels({**base, "prev": z(0.9), "sink": z(0.95)})[0][0] == "prev"  # a specialist beats the sink
    assert AT.top_labels({**base, "coref": z(0.4), "sink": z(0.6)})[0][0] == "sink"  # coref needs half the pairs
    assert AT.top_labels({**base, "broad": z(0.8)})[0][0] == "broad"
    assert AT.top_labels({**base, "broad": z(0.3)})[0][0] == "mixed"


@pytest.fixture(scope="module")
def atlas(minilm):
    seen = []
    at = AT.build_atlas(minilm, progress=seen.append)
    assert seen[-1] == 1.0 and len(seen) == len(at.sentences)
    return at


def test_minilm_atlas_finds_known_heads(atlas):
    assert atlas.shape == (6, 12) and atlas.n_coref == len(atlas.sentences)
    assert atlas.top_label[0][2] == "prev" and atlas.scores["prev"][0, 2] > 0.95  # a previous-token head
    assert atlas.top_label[3][1] == "coref" and atlas.scores["coref"][3, 1] > 0.6  # the minimal pair's head
    assert all(t in AT.TOP_LABELS for row in atlas.top_label for t in row)
    assert atlas.top_label_index().shape == (6, 12)
    for arr in [*atlas.scores.values(), *atlas.per_sentence.values()]:
        assert not arr.flags.writeable
    assert atlas.seconds < 30
    ex = atlas.examples(3, 1)
    assert len(ex) == 3 and all(e["score"] == 1.0 for e in ex)


def test_atlas_export(atlas, tmp_path):
    rows = list(csv.DictReader(io.StringIO(atlas.to_csv())))
    assert len(rows) == 72 and rows[0]["top_label"] == atlas.top_label[0][0]
    data = json.loads(atlas.save(tmp_path / "a.json").read_text())
    assert data["shape"] == [6, 12] and data["top_label"][3][1] == "coref" and len(data["examples"]["3,1"]) == 3
    assert atlas.save(tmp_path / "a.csv").read_text().startswith("layer,head,top_label")
    with pytest.raises(ValueError):
        atlas.save(tmp_path / "a.txt")


def test_cli(tmp_path, capsys):
    out = tmp_path / "atlas.csv"
    assert AT.main(["--model", "minilm-l6", "--out", str(out)]) == 0
    assert "layer 3:" in capsys.readouterr().out and out.read_text().count("\n") == 73
    assert AT.main(["--model", "no-such-model"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_seq2seq_tiny_encoder_atlas(seq2seq_tiny):
    m = seq2seq_tiny
    at = AT.build_atlas(m, AT.load_probes()[:8], task="reverse")
    assert at.shape == (m.config.n_encoder_layers, m.config.n_heads)
    assert 0 <= at.n_coref <= 8


def test_atlas_grid_cells_in_the_interface_language(atlas):
    """The grid draws each head's top label in its cell: the short code in English, Korean words in Korean."""
    import re

    from viz.heads import atlas_grid

    en = atlas_grid(atlas, lang="en").data[0]
    ko = atlas_grid(atlas, lang="ko").data[0]
    assert en.text[0][2] == "prev" and en.text[3][1] == "coref"
    assert ko.text[0][2] == "이전" and ko.text[3][1] == "상호 참조"
    hangul = re.compile("[\uac00-\ud7a3]")
    assert all(hangul.search(c) for row in ko.text for c in row)
    assert all(hangul.search(h.split("</b>")[0]) for row in ko.customdata for h in row)


def test_korean_probes_for_a_model_that_reads_korean():
    """multilingual-e5-small's atlas runs the English and the committed Korean battery; MiniLM's the English only.
    Every Korean probe names words that occur once, and most labelled pairs are found by the multilingual model."""
    from analysis.atlas import PROBES_KO_PATH, build_atlas, default_probes, load_probes
    from model import load_model

    ko = load_probes(PROBES_KO_PATH)
    assert len(ko) >= 30 and all(any("\uac00" <= c <= "\ud7a3" for c in p.sentence) for p in ko)
    for p in ko:
        assert all(p.sentence.split().count(w) == 1 for w in (p.pronoun, p.antecedent))
    e5 = load_model("multilingual-e5-small", "cpu")
    assert len(default_probes(e5)) == len(load_probes()) + len(ko)
    assert len(default_probes(load_model("minilm-l6", "cpu"))) == len(load_probes())
    atlas = build_atlas(e5, ko)
    assert atlas.shape == (12, 12) and atlas.n_coref >= 0.9 * len(ko)
