"""Every stage of one attention head, read from the model's own forward (never recomputed beside it).

The model's layers record, on request, every intermediate of the layer they run (model/layers.py,
model/attention.py): Q, K, V, QKᵀ, ÷√d_k, the masked scores, the softmax weights, each head's output Z_i, their
concatenation, W_O's output, and the Add & Norm and Feed Forward sublayers. This module runs the model once on the
trace's tokens with `record={layer}` and slices one head out of that record, so the step-by-step view and the mask
lab show exactly the numbers the model computed.

    Q = X W_Q,  K = X W_K (or memory W_K),  V = X W_V (or memory W_V)
    (Qwen3, Gemma 3: Q = RMSNorm(X W_Q) and K = RMSNorm(X W_K) per head before RoPE)
    scores = Q K^T;  scaled = scores / sqrt(d_k) (Gemma: / sqrt(query_pre_attn_scalar));  masked (blocked = -inf)
    A = softmax(masked);  Z_i = A V;  MultiHead = Concat(Z_1..Z_h) W_O

Shapes: n query length, m key length, d d_model, k d_k, f d_ff.
"""

from __future__ import annotations

import torch

from model.blocks import Block
from model.norms import norm_scale
from model.run import Keep, Run
from model.trace import BLOCKS, AttentionTrace

from .frozen import freeze, to_numpy

_KIND = {"encoder": "self", "decoder_self": "self", "cross": "cross"}


def layer_record(loaded, trace: AttentionTrace, block: Block, layer: int) -> dict:
    """Run the model on the trace's token ids, recording `layer` of the block's stack; returns that layer's record
    {"self"/"cross": AttentionResult with .record, "layer": sublayer dict} (torch tensors, batch of 1)."""
    if block not in BLOCKS:
        raise ValueError(f"unknown block {block!r}; blocks: {', '.join(BLOCKS)}")
    if block not in loaded_blocks(loaded):
        raise ValueError(f"{loaded.name} has no {block!r} attention")
    n_layers = loaded.n_layers(block)
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} out of range 0..{n_layers - 1}")
    keep = Keep(detail=frozenset({layer}), logits="none")
    # upto=layer: the layers above the recorded one are not run (Step by step on layer 0 ran all six of MiniLM's)
    if loaded.config.kind == "encoder-decoder" and block != "encoder":
        rec = loaded.run(Run(trace.source_ids, target=trace.target_ids, keep=keep, upto=layer)).decoder  # (1, T)
    else:  # the trace's own token types (a pair's segment B is 1), where the model reads them
        types = trace.source_type_ids if len(trace.source_type_ids) == len(trace.source_ids) else None
        rec = loaded.run(Run(trace.source_ids, type_ids=loaded.type_ids(types), keep=keep, upto=layer)).main
    return rec.layers[layer].detail


def loaded_blocks(loaded) -> tuple[str, ...]:
    """The attention blocks a model has: ("encoder",), ("decoder_self",) or all three."""
    kind = loaded.config.kind
    return BLOCKS if kind == "encoder-decoder" else ("encoder",) if kind == "encoder" else ("decoder_self",)


def attention_steps(loaded, trace: AttentionTrace, block: Block = "encoder", layer: int = 0,
                    head: int = 0) -> dict:
    """Every stage of one head, as numpy arrays keyed by name (read-only):
    X (n, d), memory (m, d) for cross-attention, W_Q/W_K/W_V (d, k), b_Q/b_K/b_V (k,), Q (n, k), K/V (m, k),
    scores/scaled/masked/weights (n, m), mask (n, m) bool, Z (n, k) this head, Z_all (n, h*k) = Concat(heads),
    W_O (h*k, d), output (n, d) = Z_all W_O + b_O, scalar () the number whose square root divides the scores (d_k,
    or Gemma's query_pre_attn_scalar); bias_QKV and bias_O (0-d bool): whether the model has the biases b_Q, b_K, b_V
    and b_O (where it has none, b_* are zeros and a formula leaves "+ b" out); a model with rotary positions adds
    Q_proj (n, k) = X W_Q and K_proj (m, k), the projections before RoPE turns them into Q and K, and rope_theta /
    rope_scaling (), the layer's own (a sliding-window layer's base may differ); with RMSNorm on q and k (qk_norm),
    Q_norm / K_norm (n, k) = RMSNorm(X W_Q), RMSNorm(X W_K), what RoPE turns, and gamma_q / gamma_k (k,) their
    scales; a sliding-window layer adds window (), how many positions a query sees (its mask is the band)."""
    n_heads = loaded.n_heads(block)
    if not 0 <= head < n_heads:
        raise ValueError(f"head {head} out of range 0..{n_heads - 1}")
    rec = layer_record(loaded, trace, block, layer)
    kind = _KIND[block]
    att = rec[kind]
    r = att.record
    st = r["stages"]
    layer_mod = loaded.layer_modules(block)[layer]
    mha = layer_mod.cross_attn if kind == "cross" else layer_mod.self_attn
    P = mha.head_projections(head)
    # the query input, as the sublayer read it: the layer input (post-LN), its norm (pre-LN), or (cross-attention)
    # the state after the masked self-attention sublayer
    x = rec["layer"]["cross_in" if kind == "cross" else "attn_in"]
    n, m = st.scores.shape[-2:]
    mask = torch.isfinite(st.masked[0, head]) if st.masked is not st.scaled else torch.ones(n, m, dtype=torch.bool)
    out = {
        "X": x[0], **P,
        "Q": r["q"][0, head], "K": r["k"][0, head], "V": r["v"][0, head],
        "scores": st.scores[0, head], "scaled": st.scaled[0, head], "mask": mask,
        "masked": st.masked[0, head] if st.masked is not st.scaled else None, "weights": st.weights[0, head],
        "Z": r["heads"][0, head],
        "Z_all": r["z"][0], "W_O": mha.projection_matrices()["W_O"], "output": att.output[0],
        # which biases the model has: read from its own projections, never from its name
        "bias_QKV": torch.tensor(mha.in_proj.bias is not None), "bias_O": torch.tensor(mha.out_proj.bias is not None),
        "scalar": torch.tensor(float(st.scalar)),
    }
    if kind == "self" and loaded.config.is_local(layer) and block != "encoder":  # the sliding window's band
        out["window"] = torch.tensor(loaded.config.sliding_window)
    if kind == "cross":
        out["memory"] = rec["layer"]["memory"][0]
    if mha.rotary is not None or mha.q_norm is not None:  # the projections before RoPE / the norm (Q, K: after)
        out["Q_proj"], out["K_proj"] = r["q_proj"][0, head], r["k_proj"][0, head]
    if mha.rotary is not None:  # the layer's own base (a local layer's may differ) and scaling
        out["rope_theta"] = torch.tensor(float(mha.rotary.theta))
        out["rope_scaling"] = torch.tensor(float(mha.rotary.scaling))
    if mha.q_norm is not None:  # RMSNorm on each head's q and k, before RoPE
        out.update(Q_norm=r["q_norm"][0, head], K_norm=r["k_norm"][0, head], gamma_q=norm_scale(mha.q_norm),
                   gamma_k=norm_scale(mha.k_norm))
    arrays: dict = {}
    for k, v in out.items():  # no mask: the masked scores are the scaled ones (one array, not two copies)
        arrays[k] = to_numpy(v) if v is not None else arrays["scaled"]
    return freeze(arrays)


def sublayer_steps(loaded, trace: AttentionTrace, block: Block = "encoder", layer: int = 0) -> dict:
    """The rest of the layer after multi-head attention, from the model's own forward: each norm's input (post-LN:
    the residual sum), each token's mean and variance (RMSNorm: its mean square, "ms_<norm>", and no beta), the
    normalised result, gamma and beta of every norm (post-norms too: "post_norm1_in" is the attention's output,
    "post_norm1" what the residual adds), the Feed
    Forward hidden layer before and after its activation, and the layer output. Keys follow model/layers.py ("x",
    "attn_out", "norm1_in", "norm1", "ffn_pre", "ffn_act", "out", ...), plus "gamma_<norm>", "beta_<norm>",
    "mean_<norm>", "var_<norm>", "eps_<norm>", "output" (the layer output), "W_1", "b_1", "W_2", "b_2" (zeros where
    the model has none: "bias_1", "bias_2", 0-d bool, say whether it has them); a gated FFN
    (SwiGLU) adds "W_gate", "ffn_gate" = x W_gate, and "ffn_hidden" = act(ffn_gate) * ffn_pre ("ffn_act" is then
    act(ffn_gate))."""
    rec = layer_record(loaded, trace, block, layer)["layer"]
    mod = loaded.layer_modules(block)[layer]
    out = {k: v[0] for k, v in rec.items()}
    for name in [*mod.norms, *mod.post_norms]:
        s = rec[f"{name}_in"][0]  # (n, d)
        norm = getattr(mod, name)
        bias = getattr(norm, "bias", None)
        eps = norm.eps if norm.eps is not None else torch.finfo(s.dtype).eps  # nn.RMSNorm's default
        # gamma: the factor each dimension is multiplied by (Gemma: 1 + γ as stored)
        out.update({f"gamma_{name}": norm_scale(norm), f"eps_{name}": torch.tensor(eps)})
        if getattr(norm, "offset", 0.0):  # Gemma: the scale is offset + γ (gamma_<norm> above is that sum)
            out[f"offset_{name}"] = torch.tensor(float(norm.offset))
        if isinstance(norm, torch.nn.RMSNorm):  # y = gamma * s / sqrt(mean(s^2) + eps): no mean taken out, no beta
            out[f"ms_{name}"] = s.pow(2).mean(-1)
        else:
            out.update({f"mean_{name}": s.mean(-1), f"var_{name}": s.var(-1, unbiased=False),
                        f"beta_{name}": bias if bias is not None else torch.zeros_like(norm.weight)})
    out["output"] = out["out"]  # (n, d): what the layer returns
    ffn = mod.ffn
    zeros = torch.zeros(ffn.linear1.weight.shape[0])
    if ffn.gate is not None:  # gated (SwiGLU): hidden = act(x W_gate) * (x W_1 + b_1); recorded as ffn_gate, ffn_hidden
        out["W_gate"] = ffn.gate.weight.T
    out.update({"W_1": ffn.linear1.weight.T, "b_1": ffn.linear1.bias if ffn.linear1.bias is not None else zeros,
                "W_2": ffn.linear2.weight.T,
                "b_2": ffn.linear2.bias if ffn.linear2.bias is not None else torch.zeros(ffn.linear2.weight.shape[0]),
                "bias_1": torch.tensor(ffn.linear1.bias is not None), "bias_2": torch.tensor(ffn.linear2.bias is not None)})
    return freeze({k: to_numpy(v) for k, v in out.items()})
