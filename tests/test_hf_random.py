"""Random local-folder configurations against transformers (tests/hf_random_configs.py), the first seeds: each one
agrees to the parity tolerances or is refused by name; none disagrees. The script runs any number of seeds."""

from __future__ import annotations

import pytest
from hf_random_configs import run

SEEDS = range(24)  # every family at least once (seed -> family is fixed by the script)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_configuration_agrees_or_is_refused(seed, tmp_path):
    fam, overrides, result = run(seed, tmp_path / "model")
    assert result == "ok" or result.startswith("REFUSED:"), (seed, fam, overrides, result)
