"""model/noinit.py: loaders build their modules without drawing random weights, and only the loading thread skips."""

from __future__ import annotations

import threading

import torch
from torch import nn

from model.noinit import no_random_init


def test_init_functions_leave_the_tensor_inside_the_block():
    t = torch.full((4, 4), 7.0)
    with no_random_init():
        nn.init.normal_(t)
        nn.init.xavier_uniform_(t)
        nn.init.zeros_(t)
    assert torch.equal(t, torch.full((4, 4), 7.0))
    nn.init.zeros_(t)  # outside the block the functions work again
    assert torch.equal(t, torch.zeros(4, 4))


def test_another_thread_still_draws_its_random_weights():
    """A session building a random model while another loads one gets its seeded weights."""
    inside, done = threading.Event(), threading.Event()
    got: dict = {}

    def loader() -> None:
        with no_random_init():
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=loader)
    thread.start()
    assert inside.wait(10)
    try:
        torch.manual_seed(0)
        got["during"] = nn.Linear(8, 8).weight.detach().clone()
    finally:
        done.set()
        thread.join(10)
    torch.manual_seed(0)
    expected = nn.Linear(8, 8).weight.detach()
    assert torch.equal(got["during"], expected) and float(expected.abs().sum()) > 0


def test_random_models_are_unchanged_after_a_load():
    """paper-base (random weights from a fixed seed) is built outside the block: the same weights as always."""
    from model.loaders import minilm_source, paper_base_source
    from model.source import build

    before = build(paper_base_source(), torch.device("cpu")).module.state_dict()
    build(minilm_source(), torch.device("cpu"))
    after = build(paper_base_source(), torch.device("cpu")).module.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert float(before["src_embed.token.weight"].std()) > 0.01  # random, not left uninitialised or zero


def test_loaded_weights_are_the_files():
    """Nothing of the skipped initialisation survives a load: MiniLM's parameters equal the safetensors file."""
    from safetensors.torch import load_file

    from model.loaders import minilm_source
    from model.source import build
    from model.weights import minilm_dir

    module = build(minilm_source(), torch.device("cpu")).module
    ref = load_file(str(minilm_dir() / "model.safetensors"))
    ours = module.state_dict()
    assert torch.equal(ours["src_embed.token.weight"], ref["embeddings.word_embeddings.weight"])
    assert torch.equal(ours["encoder.layers.5.norm2.bias"], ref["encoder.layer.5.output.LayerNorm.bias"])
    assert all(torch.isfinite(v).all() for v in ours.values())


def test_one_place_builds_a_model_without_random_weights():
    """model/source.py's build is the only place a Transformer is made under no_random_init (and so loaded)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    uses = [str(p.relative_to(root)) for p in sorted((root / "model").rglob("*.py"))
            for line in p.read_text(encoding="utf-8").splitlines()
            if "no_random_init()" in line and not line.lstrip().startswith("def ")]
    assert uses == ["model/source.py"]
