"""What tests/hf_random_configs.py's random configurations are expected to give, read by tests/test_hf_random.py.

KNOWN_UNSUPPORTED names each option that Headlight refuses on purpose: the families it applies to, which drawn
configurations hit it, the refusal message, and why it is not supported. A configuration that hits none of them must
agree with transformers ("ok"); one that hits one must be refused with that message. Anything else fails.

FULL_RUN is the result of every seed the script was run on (0..659), per family, so the numbers can be checked:
    .venv/bin/python tests/hf_random_configs.py 0 660 > /tmp/random660.txt
    .venv/bin/python tests/hf_random_expected.py /tmp/random660.txt     (prints the same table from that output)
The table's family totals and refusal counts are also checked against the configurations themselves (cheap: the
script draws them without building a model) by tests/test_hf_random.py.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Unsupported:
    families: tuple[str, ...]
    hits: Callable[[dict], bool]  # does a configuration's config.json overrides use the option?
    message: str  # regex the refusal message must match (after the folder path)
    why: str


KNOWN_UNSUPPORTED: dict[str, Unsupported] = {
    "gpt2-scale_attn_weights=False": Unsupported(
        families=("gpt2",),
        hits=lambda ov: ov.get("scale_attn_weights") is False,
        message=r"gpt2 option scale_attn_weights=False is not supported; supported: True\.",
        why="GPT-2 without the 1/sqrt(d_k) scaling of Q K^T. model/attention.py always computes the paper's scaled "
            "dot product (softmax(Q K^T / sqrt(d_k)), and the figures show `scaled`), so an unscaled GPT-2 is refused "
            "by name in model/hf/gpt2.py (Fields.require) instead of being shown with the wrong weights."),
}


def expected_refusal(family: str, overrides: dict) -> str | None:
    """The name of the known-unsupported option this configuration uses, or None (then it must agree)."""
    hit = [name for name, u in KNOWN_UNSUPPORTED.items() if family in u.families and u.hits(overrides)]
    assert len(hit) <= 1, f"a configuration hits two known refusals: {hit}"
    return hit[0] if hit else None


def refusal_reason(result: str) -> str | None:
    """The KNOWN_UNSUPPORTED name a "REFUSED: <path>: <message>" result matches, or None."""
    if not result.startswith("REFUSED: "):
        return None
    for name, u in KNOWN_UNSUPPORTED.items():
        if re.fullmatch(rf"REFUSED: .+?: {u.message}", result):
            return name
    return None


# seeds that disagree with transformers (FAIL), with what was seen. Reported, not hidden; checked by a strict xfail.
KNOWN_FAILURES = {
    228: "marian, d_model 126, 7 encoder heads / 9 decoder heads, 1 + 3 layers, mish, scale_embedding=True: encoder "
         "attention differs by 1.39e-05 (tolerance 1e-05) at 2 of 1008 cells; decoder self / cross attention by up "
         "to 6.5e-05 / 1.1e-04 and logits by 2.9e-04 (tolerance 1e-04). Float32 rounding, not a different formula: "
         "run in float64 both agree to 3e-08; in float32 ours is 2.2e-05 from the float64 result on the encoder "
         "attention, transformers 8.5e-06.",
}

# seeds 0..659 (2026-11, transformers 5.23, torch CPU): per family, ok / refused by KNOWN_UNSUPPORTED name / FAIL.
# 660 seeds in 532 s on a shared 2-core machine (nice 10): ~0.35 s per encoder or GPT-2 seed, ~2 s per BART / Marian.
FULL_RUN_SEEDS = range(660)
FULL_RUN = {
    "bert": {"ok": 108, "refused": {}, "fail": 0},
    "roberta": {"ok": 104, "refused": {}, "fail": 0},
    "xlm-roberta": {"ok": 95, "refused": {}, "fail": 0},
    "distilbert": {"ok": 90, "refused": {}, "fail": 0},
    "gpt2": {"ok": 62, "refused": {"gpt2-scale_attn_weights=False": 29}, "fail": 0},
    "bart": {"ok": 84, "refused": {}, "fail": 0},
    "marian": {"ok": 87, "refused": {}, "fail": 1},  # seed 228 (KNOWN_FAILURES)
}

# CI: the first 48 seeds (~40 s on a busy 2-core machine): every family agrees on at least MIN_OK_PER_FAMILY of them
# (bert 6, roberta 9, xlm-roberta 6, distilbert 7, gpt2 6, bart 8, marian 4) and seeds 33 and 35 are refused.
CI_SEEDS = range(48)
MIN_OK_PER_FAMILY = 4


# Qwen3 and Gemma 3 (issue 38; tests/hf_random_configs.lm_configuration: each seed a folder and, where llama.cpp can
# read it so, an F32 GGUF file of the same weights), seeds 0..146 (2026-11-27, transformers 5.23, torch CPU, a shared
# 2-core machine at load 10-19: the 200 seeds asked for did not finish in the 83 minutes given): every one agreed,
# folder and file; 100 with a sliding window shorter than the texts, 67 with a head width that is not d_model / heads,
# 73 also as a GGUF file (qwen3 47, gemma3 26). No option was refused.
LM_FULL_RUN_SEEDS = range(147)
LM_FULL_RUN = {"qwen3": {"ok": 80, "fail": 0}, "gemma3": {"ok": 67, "fail": 0}}
# CI: the first 16 (~40 s): both families, windows shorter than the texts, odd widths, GGUF files of both
LM_CI_SEEDS = range(16)


def summarize(lines: list[str]) -> dict[str, dict]:
    """FULL_RUN's table from the script's output ("<seed> <family> ok|REFUSED: ...|FAIL ..." lines; a FAIL's
    message may continue over several lines, which are skipped). An unknown refusal counts as "refused: unknown"."""
    out: dict[str, dict] = {}
    for line in lines:
        m = re.match(r"^(\d+) (bert|roberta|xlm-roberta|distilbert|gpt2|bart|marian) (.*)$", line)
        if not m:
            continue
        row = out.setdefault(m[2], {"ok": 0, "refused": Counter(), "fail": 0})
        result = m[3]
        if result == "ok":
            row["ok"] += 1
        elif result.startswith("REFUSED: "):
            row["refused"][refusal_reason(result.split(" {")[0]) or "unknown"] += 1
        else:
            row["fail"] += 1
    return {f: {**r, "refused": dict(r["refused"])} for f, r in out.items()}


if __name__ == "__main__":
    for fam, row in summarize(open(sys.argv[1], encoding="utf-8").read().splitlines()).items():
        print(f"{fam:12} {row}")
