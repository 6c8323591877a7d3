"""The last step of an encoder-decoder (Vaswani et al. 2017, 3.4): the final linear layer and Softmax over the
vocabulary, read from the model's own forward on a trace's decoder input (teacher forcing), and checked against the
output layer applied to the last decoder layer's output (analysis.stages.sublayer_steps(...)["output"]).

Shapes: T target length, d d_model, V vocabulary, k the top-k kept per position.
"""

from __future__ import annotations

import numpy as np
import torch

from model.run import Run
from model.trace import AttentionTrace

from .frozen import freeze


def output_distribution(loaded, trace: AttentionTrace, last_hidden: np.ndarray, k: int = 5) -> dict:
    """The model's own logits on the trace's source and decoder input, as a frozen dict:
    top_probs (T, k) and top_tokens (T lists of k strings): the top-k Softmax probabilities per position;
    sums (T,): each row's probability sum; vocab: V; W: the output layer's shape (d, V);
    diff: the largest |logits - output(last_hidden)|, the output layer applied to `last_hidden` (T, d), the last
    decoder layer's output (0 up to float error when the stages and the forward agree)."""
    module = loaded.module
    logits = loaded.run(Run(trace.source_ids, target=trace.target_ids)).logits[0].float()  # (T, V): (1, N), (1, T)
    with torch.inference_mode():
        again = module.output(torch.tensor(np.array(last_hidden), device=loaded.device)).float()  # (T, V)
        probs = logits.softmax(-1)
        top_p, top_i = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (T, k)
    tok = loaded.token_texts
    return freeze({"top_probs": top_p.cpu().numpy(), "top_tokens": [tok(row) for row in top_i.tolist()],
                   "sums": probs.sum(-1).cpu().numpy(), "vocab": int(logits.shape[-1]),
                   "W": tuple(module.generator.weight.T.shape),
                   "diff": float((logits - again).abs().max())})
