"""Sinusoidal positional encoding (Vaswani et al. 2017, 3.5) against its formula,
computed independently with python `math` loops:

    PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
"""

import math

import numpy as np
import pytest
import torch

from model.config import PRESETS
from model.embeddings import Embedding
from model.positional import SinusoidalPositionalEncoding, sinusoidal_table


def reference_table(n: int, d: int) -> np.ndarray:
    out = np.zeros((n, d), dtype=np.float64)
    for pos in range(n):
        for j in range(d):
            two_i = j - (j % 2)  # columns 2i and 2i+1 share the frequency of 2i
            angle = pos / (10000.0 ** (two_i / d))
            out[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return out


@pytest.mark.parametrize("n,d", [(50, 128), (20, 7), (10, 1), (3, 2), (64, 512), (30, 33)])
def test_table_equals_formula(n, d):
    pe = sinusoidal_table(n, d)
    assert pe.shape == (n, d)
    assert pe.dtype == torch.float32
    np.testing.assert_allclose(pe.numpy(), reference_table(n, d), atol=1e-6, rtol=0)


def test_first_rows_and_columns_by_hand():
    pe = sinusoidal_table(4, 6).numpy()
    # position 0: sin(0) = 0 in even columns, cos(0) = 1 in odd ones
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    # column 0 has frequency 1: sin(pos)
    np.testing.assert_allclose(pe[:, 0], np.sin(np.arange(4)), atol=1e-7)
    np.testing.assert_allclose(pe[:, 1], np.cos(np.arange(4)), atol=1e-7)


def test_odd_width_last_column_is_a_sine():
    d = 9
    pe = sinusoidal_table(40, d).numpy()
    angle = np.arange(40) / 10000.0 ** (8 / d)
    np.testing.assert_allclose(pe[:, -1], np.sin(angle), atol=1e-6)


def test_values_in_unit_interval_and_extend_to_long_inputs():
    pe = sinusoidal_table(5000, 64)
    assert float(pe.abs().max()) <= 1.0
    # the formula extends past the module's table: rows beyond max_positions still match it
    module = SinusoidalPositionalEncoding(d_model=16, max_positions=8)
    longer = module(20)
    assert longer.shape == (20, 16)
    np.testing.assert_allclose(longer.numpy(), reference_table(20, 16), atol=1e-6)
    assert torch.equal(longer[:8], module(8))


def test_encoding_is_a_function_of_position_only():
    a, b = sinusoidal_table(10, 32), sinusoidal_table(100, 32)
    assert torch.equal(a, b[:10])
    # distinct positions get distinct vectors
    assert torch.cdist(b, b).add(torch.eye(100) * 1e9).min() > 1e-3


def test_buffer_is_not_persistent():
    module = SinusoidalPositionalEncoding(d_model=12, max_positions=30)
    assert "table" in dict(module.named_buffers())
    assert module.state_dict() == {}
    emb = Embedding(PRESETS["tiny"])
    assert not any("position" in k for k in emb.state_dict())
    assert "token.weight" in emb.state_dict()


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_positions"):
        sinusoidal_table(-1, 8)
    with pytest.raises(ValueError):
        sinusoidal_table(4, 0)
    assert sinusoidal_table(0, 8).shape == (0, 8)


def test_paper_embedding_adds_scaled_tokens_and_pe():
    cfg = PRESETS["tiny"]
    torch.manual_seed(0)
    emb = Embedding(cfg).eval()
    ids = torch.tensor([[5, 6, 7, 8]])
    parts = emb.parts(ids)
    expected_x = emb.token.weight[ids] * math.sqrt(cfg.d_model)
    torch.testing.assert_close(parts["token"], expected_x, rtol=0, atol=0)
    np.testing.assert_allclose(parts["position"][0].numpy(), reference_table(4, cfg.d_model), atol=1e-6)
    torch.testing.assert_close(parts["sum"], parts["token"] + parts["position"], rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(emb(ids), parts["sum"])  # no norm, dropout off in eval


def test_loaded_models_position_tables(minilm, paper_base):
    pe = paper_base.position_table(50)
    assert pe.shape == (50, 512)
    np.testing.assert_allclose(pe, reference_table(50, 512), atol=1e-6)
    # MiniLM's positions are learned: the table is the embedding matrix rows
    learned = minilm.position_table(10)
    np.testing.assert_array_equal(learned, minilm.module.src_embed.position.weight[:10].detach().numpy())
    # longer than the model accepts: capped at max_positions
    assert minilm.position_table(10_000).shape == (512, 384)
