"""How a model's positions enter, read from its config without loading it (ModelSpec.read_config): the PE lab offers
every model with learned positions from this, never from a list of names."""

import pytest
from hf_support import make_encoder, make_gpt2

from model import REGISTRY
from model.hf.specs import folder_spec


@pytest.mark.parametrize("name,positional", [("minilm-l6", "learned"), ("multilingual-e5-small", "learned"),
                                             ("smollm2-135m", "rotary"), ("paper-base", "sinusoidal"),
                                             ("seq2seq-tiny", "sinusoidal")])
def test_built_in_models_config_without_loading(name, positional):
    assert REGISTRY[name].read_config().positional == positional


def test_local_folders_config_and_a_broken_folder(tmp_path):
    _, bert = make_encoder("bert", tmp_path / "bert")
    _, gpt2 = make_gpt2(tmp_path / "gpt2")
    assert folder_spec(bert).read_config().positional == "learned"
    assert folder_spec(gpt2).read_config().positional == "learned"
    broken = tmp_path / "broken"
    broken.mkdir()
    assert folder_spec(broken).read_config() is None  # loading it says why; the lab just does not offer it
