"""Direct logit attribution (DLA): which parts of a pre-LN language model write the answer into the residual stream.

In a pre-LN stack the residual stream at the last position is a sum of parts (Elhage et al. 2021, "A Mathematical
Framework for Transformer Circuits"):

    r = embed + sum_layers (sum_heads Z_h W_O^h + b_O) + sum_layers MLP_out

and the logit of token t is  W_U[t] . Norm(r) + b_U[t]. The final norm is not linear, but with its scale taken from
the REAL final residual r it is applied linearly to each part:

    RMSNorm:   Norm(r) = gamma * r * s,                s = 1 / sqrt(mean(r^2) + eps)   (Gemma: gamma = 1 + γ)
    LayerNorm: Norm(r) = gamma * (r - mean(r)) * s + beta,   s = 1 / sqrt(var(r) + eps)

so a part c contributes  s * (gamma * u) . c  (LayerNorm: c centred first), with u = W_U[target] - W_U[foil] (or
W_U[target] alone without a foil). The parts sum to the real logit (difference) at the last position up to float
rounding; what belongs to no part is named: `attn_bias` (each layer's b_O) and `bias` (the final norm's beta and the
output projection's bias b_U). SmolLM2 has no biases: both are 0.

What it can say: how much each head's output, as written, pushes the target's logit above the foil's at the end.
What it cannot: it reads only the direct path (a head whose output is read by later heads or MLPs, and only then
reaches the logits, gets no credit; a head may also write a part that a later part cancels), and the scale s is the
final residual's as a whole, so a part is not what the logit would be with that part alone. Activation patching
(patching.py) asks the causal question instead.

Notation: L layers, H heads, k d_k, d d_model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..norms import norm_scale
from ..run import Keep, Run
from .common import AnswerToken, answer_token, check_attributable, prompt_ids, ro


@dataclass(frozen=True)
class Attribution:
    model: str
    text: str
    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    target: AnswerToken
    foil: AnswerToken | None  # None: the target's logit alone
    head: np.ndarray  # (L, H) each head's part
    mlp: np.ndarray  # (L,) each Feed Forward's part
    attn_bias: np.ndarray  # (L,) each attention's output bias b_O (0 without biases)
    embed: float  # the embeddings' part (token and position embeddings, as the stack reads them)
    bias: float  # the final norm's beta and the output bias b_U (0 without biases)
    total: float  # the real logit (difference) at the last position, from the model's own logits
    scale: float  # s: 1 / rms (RMSNorm) or 1 / std (LayerNorm) of the real final residual
    predicted: AnswerToken  # the model's own next token (argmax)

    @property
    def parts_sum(self) -> float:
        """Every part and the named remainders: equals `total` up to float rounding."""
        return float(self.head.sum(dtype=np.float64) + self.mlp.sum(dtype=np.float64)
                     + self.attn_bias.sum(dtype=np.float64) + self.embed + self.bias)

    @property
    def error(self) -> float:
        return self.total - self.parts_sum

    def top_heads(self, k: int = 10) -> list[tuple[int, int, float]]:
        """The k heads of largest |part|, as (layer, head, part)."""
        flat = np.abs(self.head).ravel()
        H = self.head.shape[1]
        return [(int(i // H), int(i % H), float(self.head.ravel()[i])) for i in np.argsort(-flat, kind="stable")[:k]]


def direction(module, target: int, foil: int | None) -> tuple[torch.Tensor, float]:
    """(u (d,), its output bias) for the target minus the foil (or the target alone)."""
    w, b = module.generator.weight, module.generator.bias
    u = w[target] - (w[foil] if foil is not None else 0.0)
    bu = 0.0 if b is None else float(b[target] - (b[foil] if foil is not None else 0.0))
    return u.double(), bu


def read_out(norm, r: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """The final norm made linear at the real residual r (d,): (w (d,), s, beta . u) such that a part c contributes
    w . c (LayerNorm: w is centred, which centres c)."""
    r = r.double()
    gamma = norm_scale(norm).double() if norm.weight is not None else torch.ones_like(r)  # Gemma's: 1 + γ
    if isinstance(norm, torch.nn.RMSNorm):
        eps = norm.eps if norm.eps is not None else torch.finfo(torch.float32).eps
        s = 1.0 / torch.sqrt((r * r).mean() + eps)
        return gamma * u * s, float(s), 0.0
    s = 1.0 / torch.sqrt(r.var(unbiased=False) + norm.eps)
    gu = gamma * u
    beta = 0.0 if norm.bias is None else float(norm.bias.double() @ u)
    return (gu - gu.mean()) * s, float(s), beta


def attribute(loaded, text: str, target: str | None = None, foil: str | None = None) -> Attribution:
    """DLA at the last position of `text` for `target` (None: the model's own next token) minus `foil` (None: the
    target's logit alone)."""
    check_attributable(loaded)
    ids, tokens = prompt_ids(loaded, text)
    module, cfg = loaded.module, loaded.config
    rec = loaded.run(Run(ids, keep=Keep(heads=True, sublayers=True, logits="last")))
    logits = rec.logits[0, -1]
    top = int(torch.argmax(logits))
    predicted = AnswerToken(loaded.tokenizer.id_to_token(top) or f"[{top}]", top,
                            loaded.tokenizer.id_to_token(top) or f"[{top}]", 1)
    tgt = predicted if target is None else answer_token(loaded, target)
    fl = None if foil is None else answer_token(loaded, foil)
    total = float(logits[tgt.id].double() - (logits[fl.id].double() if fl is not None else 0.0))
    with torch.inference_mode():
        u, b_u = direction(module, tgt.id, None if fl is None else fl.id)
        dec = rec.decoder
        w, s, beta = read_out(module.decoder.final_norm, dec.hidden[0, -1], u)
        L, H, k = cfg.n_decoder_layers, cfg.n_heads, cfg.d_k
        head, mlp, attn_bias = np.zeros((L, H)), np.zeros(L), np.zeros(L)
        for i, layer in enumerate(module.decoder.layers):
            lr = dec.layers[i]
            attn = layer.self_attn
            wo = (w @ attn.out_proj.weight.double()).view(H, k)  # (H, k): w read back through each head's W_O
            head[i] = (lr.heads[0, :, -1].double() * wo).sum(-1).numpy()  # (H,)
            if attn.out_proj.bias is not None:
                attn_bias[i] = float(attn.out_proj.bias.double() @ w)
            mlp[i] = float(lr.mlp_out[0, -1].double() @ w)
        embed = float(dec.layers[0].resid_pre[0, -1].double() @ w)
    return (Attribution(loaded.name, text, tuple(ids), tuple(tokens), tgt, fl, ro(head, np.float64),
                              ro(mlp, np.float64), ro(attn_bias, np.float64), embed, beta + b_u, total, s, predicted))
