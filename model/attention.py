"""Scaled dot-product and multi-head attention that *return* every stage.

Vaswani et al. 2017, eq. (1):  Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
Multi-head (section 3.2.2): head_i = Attention(X W_Q^i, X W_K^i, X W_V^i),
MultiHead = Concat(head_1..head_h) W_O.
Grouped-query attention (Ainslie et al. 2023): g = h / h_kv query heads share each key/value head; h_kv = h is the
paper's multi-head attention.
Rotary positions (RoPE, Su et al. 2021), as Llama and its kin use them: each head's q and k are rotated by their
position before Q K^T, pair (j, j + k/2) by the angle pos * theta^(-2j / k), so the score depends on the positions'
difference only. Where the config says so (Qwen3, Gemma 3), each head's q and k are RMS-normalised before they turn
(`qk_norm`); a local layer (Gemma 3's sliding window) turns them with its own base (`rope_theta_local`); and the
scores are divided by sqrt(attn_scalar) instead of sqrt(d_k) (Gemma's query_pre_attn_scalar).

Notation in shape comments (x-transformers style):
    b batch, h heads, g kv heads, n query length, m key length, d d_model, k d_k (d / h, or the config's head_dim)

Weights are returned, never kept on a module: one cached model serves every user of the app, so any state on a
module would be a race. The fused ``F.scaled_dot_product_attention`` is deliberately not used: it returns no
weights, and every path here may be drawn. This one function is what the model runs and what the step-by-step view
and the mask lab show (they read the stages of the model's own forward, see ``record``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .norms import make_norm


@dataclass
class AttentionStages:
    """Every matrix of the lecture's walk-through, all (b, h, n, m) but `output`."""

    scaled: torch.Tensor  # Q K^T / sqrt(scalar)
    masked: torch.Tensor  # scaled, blocked cells = -inf (what the softmax sees)
    weights: torch.Tensor  # softmax(masked): rows sum to 1, blocked cells exactly 0
    output: torch.Tensor  # (b, h, n, k) weights @ V
    scalar: float  # the number under the square root: d_k (the paper), or the model's own (Gemma 3: 256)

    @property
    def scores(self) -> torch.Tensor:
        """Q K^T, before the scaling (made from `scaled` when asked for: the forward never needs it)."""
        return self.scaled * math.sqrt(self.scalar)


@dataclass(frozen=True)
class MaskBias:
    """A boolean mask as the scores use it, made once per stack for all its layers: `add` is 0 where a query may
    attend and -inf where it is blocked (the mask's shape), `every_row` whether every query row may attend to some
    key. Adding `add` gives the same scores as filling the blocked cells with -inf (a finite score plus 0 is itself,
    up to the sign of a zero), in one pass instead of a copy and a fill with a broadcast mask (2 x 0.3 ms per layer
    of SmolLM2 at 128 tokens, 5 % of its forward)."""

    add: torch.Tensor
    every_row: bool

    @classmethod
    def of(cls, mask: torch.Tensor | None, dtype: torch.dtype = torch.float32) -> MaskBias | None:
        if mask is None:
            return None
        add = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
        # On an accelerator the flag is not read back: that would wait for the device once per stack call, i.e. once
        # per decoding step and stack beside the loop's own stop test. There the blocked cells are always filled
        # with 0, which changes no weight (exp(-inf) is already exactly 0 where a row has a key it may attend).
        every_row = bool(mask.any(-1).all()) if mask.device.type == "cpu" else False
        return cls(add, every_row)


def scaled_dot_product_attention(
    q: torch.Tensor,  # (b, h, n, k)
    k: torch.Tensor,  # (b, h, m, k)
    v: torch.Tensor,  # (b, h, m, k)
    mask: torch.Tensor | None = None,  # bool, True = may attend, broadcasts to (b, h, n, m)
    dropout: float = 0.0,  # on the weights, training only
    bias: MaskBias | None = None,  # MaskBias.of(mask), when the caller made it once for many layers
    scalar: float | None = None,  # divide the scores by sqrt(scalar); None: sqrt(d_k)
) -> AttentionStages:
    scalar = q.shape[-1] if scalar is None else scalar
    # Q K^T / sqrt(d_k); dividing Q first gives the same product with one (n x k) division instead of an (n x m) one
    scaled = (q / math.sqrt(scalar)) @ k.transpose(-2, -1)  # (b, h, n, m)
    if mask is not None and bias is None:
        bias = MaskBias.of(mask, scaled.dtype)
    masked = scaled if mask is None else scaled + bias.add.to(scaled.dtype)  # blocked cells -inf
    weights = torch.softmax(masked, dim=-1)
    if mask is not None and not bias.every_row:
        # blocked keys get exactly 0 (exp(-inf) already is, where a row has a key it may attend); a row whose keys
        # are all blocked (softmax of all -inf is NaN) attends nowhere
        weights = weights.masked_fill(~mask, 0.0)
    if dropout > 0.0:
        weights = F.dropout(weights, dropout, training=True)
    output = weights @ v  # (b, h, n, k)
    return AttentionStages(scaled, masked, weights, output, scalar)


@dataclass
class AttentionResult:
    output: torch.Tensor  # (b, n, d) after W_O
    weights: torch.Tensor  # (b, h, n, m)
    record: dict | None = None  # on request: q, k, v (b, h, *, k), stages, heads (b, h, n, k), z (b, n, h*k)
    heads: torch.Tensor | None = None  # (b, h, n, k) each head's output Z_i after any ablation (model/run.py keeps it)


class Rotary(nn.Module):
    """RoPE in Hugging Face's layout (the halves of each head rotate together: x * cos + rotate_half(x) * sin), its
    cos / sin tables computed as transformers computes them (float32), kept as non-persistent buffers. `scaling`:
    linear scaling, every angle divided by it (transformers' "linear" rope_type)."""

    def __init__(self, d_k: int, theta: float, max_positions: int, scaling: float = 1.0):
        super().__init__()
        self.d_k, self.theta, self.scaling = d_k, theta, scaling
        cos, sin = self.tables(max_positions)
        self.register_buffer("cos", cos, persistent=False)  # (n, k)
        self.register_buffer("sin", sin, persistent=False)

    def inv_freq(self) -> torch.Tensor:
        """(k/2,) the angle per position of each pair of dimensions."""
        inv = 1.0 / (self.theta ** (torch.arange(0, self.d_k, 2, dtype=torch.float) / self.d_k))
        return inv if self.scaling == 1.0 else inv / self.scaling

    def tables(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = torch.arange(n, dtype=torch.float)[:, None] * self.inv_freq()  # (n, k/2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (n, k)
        return emb.cos(), emb.sin()

    @staticmethod
    def rotate_half(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x (b, h, n, k) at positions start..start+n-1 -> rotated (b, h, n, k)."""
        end = start + x.shape[-2]
        cos, sin = (self.cos, self.sin) if end <= self.cos.shape[0] else (t.to(x) for t in self.tables(end))
        return x * cos[start:end] + self.rotate_half(x) * sin[start:end]


class MultiHeadAttention(nn.Module):
    """h query heads in parallel over h_kv key/value heads. W_Q, W_K, W_V are stored stacked in one linear layer,
    [W_Q; W_K; W_V] in PyTorch's (out, in) layout ((h + 2 h_kv) k rows), so a self-attention projects with one
    matmul."""

    def __init__(self, config: TransformerConfig, *, cross: bool = False, local: bool = False):
        """local: a sliding-window layer (its own RoPE base, no RoPE scaling; the window is in its mask)."""
        super().__init__()
        self.n_heads, self.n_kv_heads = config.n_heads, config.kv_heads
        self.d_model, self.d_k = config.d_model, config.d_k
        self.d_q, self.d_kv = self.n_heads * self.d_k, self.n_kv_heads * self.d_k  # rows of W_Q and of W_K / W_V
        self.dropout = config.dropout
        self.scalar = config.attn_scalar  # None: sqrt(d_k)
        self.in_proj = nn.Linear(config.d_model, self.d_q + 2 * self.d_kv, bias=config.has_qkv_bias)
        self.out_proj = nn.Linear(self.d_q, config.d_model, bias=config.bias)  # W_O
        # Qwen3 / Gemma 3: each head's q and k RMS-normalised over its d_k before RoPE (one γ for every head)
        self.q_norm = make_norm(config, self.d_k) if config.qk_norm else None
        self.k_norm = make_norm(config, self.d_k) if config.qk_norm else None
        # a self-attention's queries and keys turn with their positions (a cross-attention's never do)
        theta = config.rope_theta_local if local and config.rope_theta_local else config.rope_theta
        self.rotary = Rotary(self.d_k, theta, config.max_positions, 1.0 if local else config.rope_scaling) \
            if config.positional == "rotary" and not cross else None

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """(b, n, heads * k) -> (b, heads, n, k)"""
        b, n, _ = t.shape
        return t.view(b, n, -1, self.d_k).transpose(1, 2)

    def shared(self, t: torch.Tensor) -> torch.Tensor:
        """(b, g, m, k) key/value heads -> (b, h, m, k): query head i reads kv head i // (h / g)."""
        group = self.n_heads // self.n_kv_heads
        return t if group == 1 else t.repeat_interleave(group, dim=1)

    def forward(
        self,
        x: torch.Tensor,  # (b, n, d) queries come from here
        memory: torch.Tensor | None = None,  # (b, m, d) keys/values; None = self-attention
        mask: torch.Tensor | None = None,  # bool, broadcasts to (b, h, n, m)
        *,
        record: bool = False,
        ablation=None,
        mask_bias: MaskBias | None = None,  # MaskBias.of(mask), made once by the stack
        cache: dict | None = None,
    ) -> AttentionResult:
        """cache (incremental decoding, Transformer.greedy_decode): x holds only the new positions; a self-attention
        appends their keys and values to the cached ones (rotated at their own positions), a cross-attention
        projects the encoder output once. The dict is filled in place."""
        dq, dkv = self.d_q, self.d_kv
        w, bias = self.in_proj.weight, self.in_proj.bias
        start = 0
        norm_k = self.k_norm if self.k_norm is not None else (lambda t: t)
        if memory is None:  # self-attention: Q, K and V in one matmul with the stacked [W_Q; W_K; W_V]
            q, k, v = F.linear(x, w, bias).split((dq, dkv, dkv), dim=-1)  # (b, n, h*k), 2 x (b, n, g*k)
            k_in, v = self.split_heads(k), self.split_heads(v)  # (b, g, n, k)
            k = norm_k(k_in)  # each kv head's vectors RMS-normalised (qk_norm)
            if cache is not None:
                start = cache["k"].shape[2] if "k" in cache else 0
        else:  # cross-attention: queries from x, keys and values from the encoder output
            q = F.linear(x, w[:dq], None if bias is None else bias[:dq])  # (b, n, h*k) = X W_Q
            if cache is not None and "k" in cache:
                k_in = k = cache["k"]
                v = cache["v"]
            else:
                k, v = F.linear(memory, w[dq:], None if bias is None else bias[dq:]).split(dkv, dim=-1)  # (b, m, g*k)
                k_in, v = self.split_heads(k), self.split_heads(v)  # (b, g, m, k)
                k = norm_k(k_in)
                if cache is not None:
                    cache.update(k=k, v=v)
        q_in = self.split_heads(q)  # (b, h, n, k): the projections (before any norm or rotation)
        q = q_in if self.q_norm is None else self.q_norm(q_in)
        q_normed, k_normed = q, k
        if self.rotary is not None:
            q, k = self.rotary(q, start), self.rotary(k, start)  # turned by their positions
        if memory is None and cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)  # (b, g, start + n, k)
            cache.update(k=k, v=v)
        k, v = self.shared(k), self.shared(v)  # (b, h, m, k)
        stages = scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0, mask_bias,
                                              self.scalar)
        # ablation: any callable z -> z (model/run.py HeadEdits: zero, mean or set one head's Z_i)
        heads = stages.output if ablation is None else ablation(stages.output)  # (b, h, n, k)
        z = heads.transpose(1, 2).flatten(2)  # (b, n, h*k): Concat(head_1..head_h)
        output = self.out_proj(z)  # (b, n, d): Concat(...) W_O + b_O
        rec = None
        if record:  # q, k: what the scores used (after RoPE); q_proj, k_proj: the projections before it
            rec = {"q": q, "k": k, "v": v, "stages": stages, "heads": heads, "z": z, "q_proj": q_in,
                   "k_proj": k if self.rotary is None and self.q_norm is None else self.shared(k_in)}
            if self.q_norm is not None:  # q_norm, k_norm: RMSNorm(q_proj), RMSNorm(k_proj), what RoPE turned
                rec.update(q_norm=q_normed, k_norm=k if self.rotary is None else self.shared(k_normed))
        return AttentionResult(output, stages.weights, rec, heads)

    def projection_matrices(self) -> dict[str, torch.Tensor]:
        """W_Q (d, h*k), W_K, W_V (d, g*k), W_O (h*k, d) in the lecture's x @ W convention, and their biases (zeros
        where the model has none). Query head i uses columns i*k:(i+1)*k of W_Q and rows of W_O; its key and value
        columns are those of kv head i // (h / g) (`head_projections`)."""
        dq, dkv = self.d_q, self.d_kv
        w, b = self.in_proj.weight, self.in_proj.bias
        if b is None:
            b = torch.zeros(w.shape[0], dtype=w.dtype, device=w.device)
        b_o = self.out_proj.bias if self.out_proj.bias is not None else torch.zeros(self.d_model, dtype=w.dtype,
                                                                                     device=w.device)
        return {
            "W_Q": w[:dq].T, "W_K": w[dq: dq + dkv].T, "W_V": w[dq + dkv:].T, "W_O": self.out_proj.weight.T,
            "b_Q": b[:dq], "b_K": b[dq: dq + dkv], "b_V": b[dq + dkv:], "b_O": b_o,
        }

    def head_projections(self, head: int) -> dict[str, torch.Tensor]:
        """One query head's W_Q, W_K, W_V (d, k) and b_Q, b_K, b_V (k,)."""
        p = self.projection_matrices()
        q = slice(head * self.d_k, (head + 1) * self.d_k)
        kv_head = head // (self.n_heads // self.n_kv_heads)
        kv = slice(kv_head * self.d_k, (kv_head + 1) * self.d_k)
        return {"W_Q": p["W_Q"][:, q], "W_K": p["W_K"][:, kv], "W_V": p["W_V"][:, kv],
                "b_Q": p["b_Q"][q], "b_K": p["b_K"][kv], "b_V": p["b_V"][kv]}


def record_wanted(record: bool | Iterable[int], layer: int) -> bool:
    """record=True: every layer; a collection of layer indices: those only."""
    return bool(record) and (record is True or layer in record)
