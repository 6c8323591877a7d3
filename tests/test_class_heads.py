"""analysis/class_heads.py: the class's head ranking, checked against a direct reading of model.trace's attention."""

from __future__ import annotations

import numpy as np

from analysis.class_heads import ClassSentence, HeadRanking, most_attended, rank_heads

SENTENCES = [  # (text, query word, referent word)
    ("The animal didn't cross the street because it was tired", "it", "animal"),
    ("The trophy didn't fit in the suitcase because it was too big", "it", "trophy"),
    ("Mary called John because she needed help", "she", "mary"),
    ("The dog chased the cat until it was exhausted", "it", "dog"),
]


def _sentences(loaded) -> list[ClassSentence]:
    out = []
    for text, q, r in SENTENCES:
        toks = loaded.trace(text).source_tokens
        out.append(ClassSentence(text, toks.index(q), toks.index(r)))
    return out


def _direct(loaded, sentences) -> np.ndarray:
    """For every head, the share of sentences where the query's row, special tokens left out, peaks at the referent."""
    grid = None
    for s in sentences:
        tr = loaded.trace(s.text)
        att = tr.encoder_attention
        L, H = att.shape[:2]
        hit = np.zeros((L, H))
        for la in range(L):
            for h in range(H):
                row = att[la, h, s.query].astype(np.float64).copy()
                row[np.array(tr.source_special)] = -1
                hit[la, h] = int(row.argmax()) == s.referent
        grid = hit if grid is None else grid + hit
    return grid / len(sentences)


def test_ranking_matches_a_direct_computation(minilm):
    sents = _sentences(minilm)
    assert minilm.trace(sents[0].text).source_tokens[sents[0].query] == "it"
    res = rank_heads(minilm, sents)
    assert isinstance(res, HeadRanking) and res.used == 4 and res.skipped == 0
    assert res.agreement.shape == (minilm.n_layers(), minilm.n_heads()) == (6, 12)
    np.testing.assert_allclose(res.agreement, _direct(minilm, sents))
    np.testing.assert_array_equal(res.hits, np.round(res.agreement * 4).astype(int))
    la, h = res.best
    assert res.agreement[la, h] == np.nanmax(res.agreement) > 0
    rows = res.rows()
    assert len(rows) == 72 and (rows[0]["layer"], rows[0]["head"]) == res.best
    assert [r["agreement"] for r in rows] == sorted((r["agreement"] for r in rows), reverse=True)
    assert not res.agreement.flags.writeable


def test_specials_are_ignored_and_bad_indices_skipped(minilm):
    s = _sentences(minilm)[0]
    tr = minilm.trace(s.text)
    peaks = most_attended(tr.encoder_attention, s.query, tr.source_special)
    assert not any(tr.source_special[int(k)] for k in peaks.ravel())
    n = len(tr.source_tokens)
    bad = [ClassSentence(s.text, n + 3, 1), ClassSentence(s.text, 0, 2), ClassSentence(s.text, 4, 4)]  # out, [CLS], same
    res = rank_heads(minilm, [s, *bad])
    assert res.used == 1 and res.skipped == 3
    assert set(np.unique(res.agreement)) <= {0.0, 1.0}


def test_no_sentences_no_best(minilm):
    res = rank_heads(minilm, [])
    assert res.used == 0 and res.best is None and res.agreement.shape == (6, 12)
    assert np.isnan(res.agreement).all()

