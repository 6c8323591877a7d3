"""Random local-folder configurations against transformers (tests/hf_random_configs.py), the CI seeds: a configuration
that uses an option Headlight does not support (tests/hf_random_expected.py, KNOWN_UNSUPPORTED, each with its reason)
must be refused with that option's message; every other one must agree to the parity tolerances. An unlisted refusal,
a disagreement or a skip fails. The CI seeds give every family at least MIN_OK_PER_FAMILY agreeing configurations.

The full run (seeds 0..659, `python tests/hf_random_configs.py 0 660`) is summarised in hf_random_expected.FULL_RUN,
whose totals are checked here against the configurations the script draws."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hf_random_configs import FAMILIES, LM_FAMILIES, configuration, lm_configuration, lm_gguf_readable, lm_run, run
from hf_random_expected import (
    CI_SEEDS,
    FULL_RUN,
    FULL_RUN_SEEDS,
    KNOWN_FAILURES,
    KNOWN_UNSUPPORTED,
    LM_CI_SEEDS,
    LM_FULL_RUN,
    LM_FULL_RUN_SEEDS,
    MIN_OK_PER_FAMILY,
    expected_refusal,
    refusal_reason,
)


def _check(seed, folder):
    fam, overrides, result = run(seed, folder)
    expected = expected_refusal(fam, overrides)
    if expected is None:
        assert result == "ok", (seed, fam, overrides, result)
    else:
        assert result.startswith("REFUSED: "), (seed, fam, overrides, f"expected refusal {expected!r}", result)
        assert refusal_reason(result) == expected, (seed, fam, overrides, KNOWN_UNSUPPORTED[expected].message, result)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_configuration_agrees_or_is_refused_by_name(seed, tmp_path):
    assert seed not in KNOWN_FAILURES
    _check(seed, tmp_path / "model")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=why))
                                  for s, why in KNOWN_FAILURES.items()])
def test_known_disagreement(seed, tmp_path):
    """A seed of the full run that disagrees: it fails until it is fixed (then delete it from KNOWN_FAILURES and
    FULL_RUN's fail count)."""
    _check(seed, tmp_path / "model")


def test_ci_seeds_cover_every_family_and_every_refusal():
    """Over the CI seeds, each family has at least MIN_OK_PER_FAMILY configurations expected to agree (the test
    above makes each of them agree) and every known refusal is met at least once."""
    ok, refused = Counter(), Counter()
    for seed in CI_SEEDS:
        fam, ov = configuration(seed)
        reason = expected_refusal(fam, ov)
        if reason is None:
            ok[fam] += 1
        else:
            refused[reason] += 1
    assert {f: ok[f] for f in FAMILIES if ok[f] < MIN_OK_PER_FAMILY} == {}, dict(ok)
    assert set(refused) == set(KNOWN_UNSUPPORTED), dict(refused)


def test_known_refusals_are_named_precisely():
    """Each listed refusal pattern matches its own message only: not a different option, value or family."""
    good = "REFUSED: /tmp/x/m: gpt2 option scale_attn_weights=False is not supported; supported: True."
    assert refusal_reason(good) == "gpt2-scale_attn_weights=False"
    for other in ("REFUSED: /tmp/x/m: gpt2 option reorder_and_upcast_attn=True is not supported; supported: False.",
                  "REFUSED: /tmp/x/m: gpt2 option scale_attn_weights=None is not supported; supported: True.",
                  "REFUSED: /tmp/x/m: bart option scale_attn_weights=False is not supported; supported: True.",
                  good + " and more", "FAIL AssertionError: " + good, "ok"):
        assert refusal_reason(other) is None, other
    for name, u in KNOWN_UNSUPPORTED.items():
        assert u.families and set(u.families) <= set(FAMILIES) and len(u.why) > 40, name
        re.compile(u.message)


def test_full_run_table_matches_the_configurations():
    """FULL_RUN's rows add up to the seeds the script draws for each family, its refusals to the configurations that
    use a known-unsupported option, its failures to KNOWN_FAILURES; the CI seeds agree with it."""
    drawn, refusals, fails = Counter(), Counter(), Counter()
    for seed in FULL_RUN_SEEDS:
        fam, ov = configuration(seed)
        drawn[fam] += 1
        if (reason := expected_refusal(fam, ov)) is not None:
            refusals[fam, reason] += 1
        if seed in KNOWN_FAILURES:
            fails[fam] += 1
            assert reason is None and fam in KNOWN_FAILURES[seed]
    assert set(FULL_RUN) == set(FAMILIES)
    for fam, row in FULL_RUN.items():
        assert row["ok"] + sum(row["refused"].values()) + row["fail"] == drawn[fam], fam
        assert row["refused"] == {r: n for (f, r), n in refusals.items() if f == fam}, fam
        assert row["fail"] == fails[fam], fam
    assert sum(drawn.values()) == len(FULL_RUN_SEEDS) and set(CI_SEEDS) <= set(FULL_RUN_SEEDS)


# ---- Qwen3 and Gemma 3 (issue 38): folders and GGUF files ---------------------------------------------------------------
@pytest.mark.parametrize("seed", LM_CI_SEEDS)
def test_random_language_model_agrees(seed, tmp_path):
    fam, overrides, result = lm_run(seed, tmp_path / "model")
    assert result == "ok", (seed, fam, overrides, result)


def test_lm_ci_seeds_cover_both_families_windows_gguf_files_and_grouped_queries():
    """The CI seeds hold each family, sliding windows shorter than the texts, head widths that are not d_model / heads,
    tied and untied tables, several grouped-query ratios and GGUF files of both families."""
    drawn = [lm_configuration(s) for s in LM_CI_SEEDS]
    assert {f for f, _ in drawn} == set(LM_FAMILIES)
    assert any(ov.get("sliding_window") and (f == "gemma3" or ov.get("use_sliding_window")) for f, ov in drawn)
    assert any(ov["head_dim"] * ov["num_attention_heads"] != ov["hidden_size"] for _, ov in drawn)
    assert {ov["tie_word_embeddings"] for _, ov in drawn} == {True, False}
    assert len({ov["num_attention_heads"] // ov["num_key_value_heads"] for _, ov in drawn}) >= 3
    assert {f for f, ov in drawn if lm_gguf_readable(f, ov)} == set(LM_FAMILIES)


def test_lm_full_run_table_matches_the_configurations():
    drawn = Counter(lm_configuration(s)[0] for s in LM_FULL_RUN_SEEDS)
    assert {f: r["ok"] + r["fail"] for f, r in LM_FULL_RUN.items()} == dict(drawn)
    assert set(LM_CI_SEEDS) <= set(LM_FULL_RUN_SEEDS)
