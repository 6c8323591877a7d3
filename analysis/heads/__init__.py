"""Head lab computations (a package by idea: pairs, surgery, norms, lens; common holds the encoder run): minimal pairs, head surgery and its effects, value-weighted attention norms, logit lens.

Everything runs the model's own forward (`model.module`, with head surgery passed as a run request's edits,
model/run.py `ablate`: the cached model is never modified) and returns frozen dataclasses whose numpy
arrays are read-only. No Streamlit, no plotly.

Notation: L layers, H heads, N source tokens, d d_model, k d_k; heads are counted from 0 ("Layer 3 · Head 1").

- Minimal pairs: two sentences that differ in a word or two. For a query token and two candidate keys, every
  head's preference  w(c1) - w(c2)  (the query's attention weight on candidate 1 minus on candidate 2) in A and in
  B; heads ranked by the change of that preference (B - A), and marked *flipped* when the preference changes sign
  with at least `flip_margin` on both sides (smaller preferences are noise: a head at -0.001 / +0.001 has no choice).
- Head surgery: zero a head's output Z_i, replace it by its mean over positions, or keep only the chosen heads of
  a layer (before Concat and W_O; b_O untouched). Effects on an encoder: cosine of every token's final hidden
  state before/after and of the mean-pooled sentence embedding (all-MiniLM-L6-v2's pooling); on seq2seq-tiny: the
  decoded output, whether it is still the task's exact answer, and the top-5 next-token probabilities at a step.
  `rank_heads_by_effect` ablates every head on its own, batched: one forward whose batch row r ablates head r.
- Value-weighted norms (Kobayashi et al. 2020, "Attention is not only a weight"): ||alpha_ij f_h(x_j)|| with
  f_h(x) = (x W_V^h + b_V^h) W_O^h, read from the values the forward recorded.
- Logit lens (seq2seq-tiny): at a decoding step, every decoder layer's output through the final linear layer
  and softmax (post-LN: each layer output is already normalised).
- Attention sinks and induction heads (circuits.py): each head's mean weight on the first token; on R random ids
  repeated twice, each head's weight on the token after the earlier copy (induction) and on the previous token.
"""

from .circuits import *  # noqa: F403
from .common import *  # noqa: F403
from .lens import *  # noqa: F403
from .norms import *  # noqa: F403
from .pairs import *  # noqa: F403
from .surgery import *  # noqa: F403
