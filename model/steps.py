"""Step-by-step scaled dot-product attention for one layer and head, recomputed
from the layer's input (stored in the trace) and the model's own weights, so
the step-by-step view shows the model's numbers (a test checks they reproduce
the trace's attention and the layer output to 1e-5).

    Q = X W_Q,  K = X W_K (or memory W_K),  V = X W_V (or memory W_V)
    scores = Q K^T;  scaled = scores / sqrt(d_k);  masked (blocked = -inf)
    A = softmax(masked);  Z_i = A V;  MultiHead = Concat(Z_1..Z_h) W_O

Shapes: n query length, m key length, d d_model, k d_k.
"""

from __future__ import annotations

import numpy as np
import torch

from .attention import scaled_dot_product_attention
from .trace import AttentionTrace


def attention_steps(loaded, trace: AttentionTrace, block: str = "encoder", layer: int = 0,
                    head: int = 0) -> dict[str, np.ndarray]:
    """Every stage of one head, as float numpy arrays keyed by name:
    X (n, d), memory (m, d), W_Q/W_K/W_V (d, k), b_Q/b_K/b_V (k,), Q (n, k), K/V (m, k),
    scores/scaled/masked/weights (n, m), mask (n, m) bool, Z (n, k) this head,
    Z_all (n, d) = Concat(heads), W_O (d, d), output (n, d) = Z_all W_O + b_O.
    Needs a trace made with intermediates=True."""
    model = loaded.module
    cfg = loaded.config
    if not 0 <= head < cfg.n_heads:
        raise ValueError(f"head {head} out of range 0..{cfg.n_heads - 1}")
    with torch.inference_mode():
        if block == "encoder":
            if trace.encoder_hidden_states is None:
                raise ValueError("trace has no hidden states: make it with intermediates=True")
            layers = model.encoder.layers
            _check_layer(layer, len(layers))
            x = torch.as_tensor(trace.encoder_hidden_states[layer]).to(loaded.device)[None]  # (1, n, d)
            memory = None
            mask = _key_mask(trace, loaded.device)  # (1, n): a typed pad token is blocked as the model blocks it
            mha = layers[layer].self_attn
        else:
            if trace.decoder_hidden_states is None or trace.encoder_hidden_states is None:
                raise ValueError("trace has no decoder hidden states: make it with intermediates=True")
            layers = model.decoder.layers
            _check_layer(layer, len(layers))
            dl = layers[layer]
            x = torch.as_tensor(trace.decoder_hidden_states[layer]).to(loaded.device)[None]  # (1, n, d)
            t = x.shape[1]
            self_mask = trace.masks.get("decoder_self")  # (T, T) look-ahead AND padding, as the model used it
            if self_mask is None:
                self_mask = np.tril(np.ones((t, t), dtype=bool))
            self_mask = torch.as_tensor(np.asarray(self_mask, dtype=bool), device=loaded.device)
            if block == "decoder_self":
                memory, mask, mha = None, self_mask, dl.self_attn
            elif block == "cross":
                # the cross-attention query input is the decoder state after the masked self-attention sublayer
                a = dl.self_attn(x, mask=self_mask)
                x = dl.norm1(x + a.output)
                memory = torch.as_tensor(trace.encoder_hidden_states[-1]).to(loaded.device)[None]  # (1, m, d)
                mask, mha = _key_mask(trace, loaded.device), dl.cross_attn
            else:
                raise ValueError(f"unknown block {block!r}")
        P = mha.projection_matrices()
        k_ = cfg.d_k
        cols = slice(head * k_, (head + 1) * k_)
        src = x if memory is None else memory
        Q_all = x[0] @ P["W_Q"] + P["b_Q"]  # (n, d)
        K_all = src[0] @ P["W_K"] + P["b_K"]  # (m, d)
        V_all = src[0] @ P["W_V"] + P["b_V"]  # (m, d)
        split = lambda t: t.view(t.shape[0], cfg.n_heads, k_).transpose(0, 1)  # (n, d) -> (h, n, k)  # noqa: E731
        st = scaled_dot_product_attention(split(Q_all), split(K_all), split(V_all), mask, return_stages=True)
        Z_all = st.output.transpose(0, 1).reshape(x.shape[1], cfg.d_model)  # (n, d) Concat(head_1..head_h)
        output = Z_all @ P["W_O"] + P["b_O"]  # (n, d)
        n, m = x.shape[1], src.shape[1]
        full_mask = (mask if mask is not None else torch.ones(n, m, dtype=torch.bool, device=x.device)).expand(n, m)
        out = {
            "X": x[0], "memory": src[0] if memory is not None else None,
            "W_Q": P["W_Q"][:, cols], "W_K": P["W_K"][:, cols], "W_V": P["W_V"][:, cols],
            "b_Q": P["b_Q"][cols], "b_K": P["b_K"][cols], "b_V": P["b_V"][cols],
            "Q": Q_all[:, cols], "K": K_all[:, cols], "V": V_all[:, cols],
            "scores": st.scores[head], "scaled": st.scaled[head], "mask": full_mask,
            "masked": st.masked[head], "weights": st.weights[head], "Z": st.output[head],
            "Z_all": Z_all, "W_O": P["W_O"], "output": output,
        }
        return {k: v.detach().float().cpu().numpy() if v.dtype != torch.bool else v.cpu().numpy()
                for k, v in out.items() if v is not None}


def _key_mask(trace: AttentionTrace, device) -> torch.Tensor | None:
    """(1, m) keys of the source that may be attended (False for pad ids), or None when all may."""
    keep = trace.masks.get("source_padding")
    if keep is None or np.asarray(keep).all():
        return None
    return torch.as_tensor(np.asarray(keep, dtype=bool), device=device)[None]


def _check_layer(layer: int, n: int) -> None:
    if not 0 <= layer < n:
        raise ValueError(f"layer {layer} out of range 0..{n - 1}")
