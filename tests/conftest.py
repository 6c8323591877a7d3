"""Shared fixtures: the heavy models are loaded once per test session, on CPU."""

import os

import pytest

os.environ.setdefault("HEADLIGHT_DEVICE", "cpu")

DEFAULT_TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="session")
def minilm():
    from model import load_model

    return load_model("minilm-l6", "cpu")


@pytest.fixture(scope="session")
def paper_base():
    from model import load_model

    return load_model("paper-base", "cpu")
