"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Both start from the same per-layer graph: with the residual connection, layer l mixes its input as
    A'_l = 0.5 * mean_h(A_l) + 0.5 * I, rows renormalised to sum to 1              (n, n), row = output position.

- Rollout multiplies these:  R_l = A'_l @ R_{l-1}  (R_0 = A'_0). R_{L-1}[t, j] is the share of output token t that
  comes from input token j, if every path through the layers mixes linearly (analysis.metrics.rollout, the one
  the explorer uses, re-exported here).
- Flow treats the layers as a network: nodes are the tokens at every layer boundary (L + 1 layers of n nodes), the
  edge from input position j of layer l to output position i has capacity A'_l[i, j], and the flow from input j to
  output t at the last layer is the maximum flow from node (0, j) to node (L, t). Unlike rollout it is limited by
  the narrowest cut, so it does not multiply small weights into ever smaller ones.

The max-flow is Dinic's algorithm on the dense layered graph (numpy BFS for the level graph, an iterative
depth-first blocking flow with current-arc pointers). Only nodes that can carry flow from (0, j) to (L, t) are kept:
the other inputs and the other outputs of the last layer are dead ends. Measured on the 2-core CPU with MiniLM's
attention (6 layers), one output token against every input: see FLOW_MAX_TOKENS.

Pure numpy and Python: no Streamlit, no plotly, no graph libraries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from model.errors import InputError

from .frozen import readonly
from .metrics import residual_attention, rollout  # the explorer's rollout: one formula, one implementation

# Longest input attention flow accepts: it solves one max-flow per input token, and the time grows faster than n^3
# and depends on the attention. Measured on the 2-core CPU (one thread, MiniLM's 6 layers, every input token to one
# output token; three texts, three output tokens each; the machine shared, load 3-6): 64 tokens 1.0-2.3 s (0.7 s on
# a quiet machine), 80 tokens 1.8-7 s, 96 tokens 7-10 s, 128 tokens 10-24 s. Beyond 80 the page says to shorten the
# text or use rollout.
FLOW_MAX_TOKENS = 80
EPS = 1e-9  # residual capacities below this count as saturated (weights are float32: ~1e-7 relative)


def _frozen(a: np.ndarray, dtype=np.float32) -> np.ndarray:
    return readonly(np.array(a, dtype=dtype))


# ---- max-flow -----------------------------------------------------------------------------------------------------
def max_flow(capacity: np.ndarray, source: int, sink: int) -> float:
    """Dinic's maximum flow on a dense capacity matrix (V, V), capacity[u, v] >= 0 for the edge u -> v."""
    cap = np.array(capacity, dtype=np.float64)
    if cap.ndim != 2 or cap.shape[0] != cap.shape[1]:
        raise ValueError(f"capacity must be a square matrix, got shape {cap.shape}")
    if np.any(cap < 0):
        raise ValueError("capacities must be >= 0")
    if source == sink:
        raise ValueError("source and sink must differ")
    res = cap  # residual capacities: res[u, v] = cap[u, v] - f[u, v] + f[v, u]
    n_nodes = cap.shape[0]
    total = 0.0
    while True:
        # BFS level graph on edges with residual capacity
        level = np.full(n_nodes, -1, dtype=np.int64)
        level[source] = 0
        frontier = np.array([source])
        depth = 0
        while frontier.size and level[sink] < 0:
            depth += 1
            reach = (res[frontier] > EPS).any(axis=0) & (level < 0)
            frontier = np.flatnonzero(reach)
            level[frontier] = depth
        if level[sink] < 0:
            return total
        # admissible arcs (level + 1, residual > EPS), in row-major order: the arcs of node u are
        # first[u] .. first[u + 1] - 1; nodes beyond the sink's level are useless
        adm = (res > EPS) & (level[None, :] == level[:, None] + 1) & (level[:, None] >= 0)
        adm[:, level > level[sink]] = False
        tails, heads = np.nonzero(adm)
        first = np.searchsorted(tails, np.arange(n_nodes + 1)).tolist()
        arc_cap = res[tails, heads].tolist()  # Python floats: the depth-first search is scalar code
        pushed, arc_flow = _blocking_flow(arc_cap, heads.tolist(), first, source, sink)
        used = np.flatnonzero(np.asarray(arc_flow) > 0)
        res[tails[used], heads[used]] -= np.asarray(arc_flow)[used]  # each (u, v) pair occurs once per phase
        res[heads[used], tails[used]] += np.asarray(arc_flow)[used]
        total += pushed


def _blocking_flow(arc_cap: list[float], heads: list[int], first: list[int], source: int,
                   sink: int) -> tuple[float, list[float]]:
    """Augment along admissible arcs until no path is left (iterative DFS with current-arc pointers). Arcs of a
    level graph never run backwards, so reverse residuals are applied by the caller after the phase.
    Returns (flow pushed, flow on each arc); `arc_cap` is consumed."""
    arc_flow = [0.0] * len(arc_cap)
    ptr = first[:-1]  # current arc of each node
    pushed = 0.0
    nodes = [source]  # the current path as nodes ...
    path: list[int] = []  # ... and as arcs
    while nodes:
        u = nodes[-1]
        if u == sink:
            f = min(arc_cap[e] for e in path)
            cut = len(path)
            for i, e in enumerate(path):
                arc_cap[e] -= f
                arc_flow[e] += f
                if cut == len(path) and arc_cap[e] <= EPS:
                    cut = i  # retreat to the tail of the first saturated arc
            pushed += f
            del path[cut:]
            del nodes[cut + 1:]
            continue
        e, end = ptr[u], first[u + 1]
        while e < end and arc_cap[e] <= EPS:
            e += 1
        ptr[u] = e
        if e < end:
            path.append(e)
            nodes.append(heads[e])
        else:  # dead end: retreat and advance the parent's pointer
            nodes.pop()
            if path:
                ptr[nodes[-1]] += 1
                path.pop()
    return pushed, arc_flow


def layered_capacity(a: np.ndarray, source: int, sink: int) -> tuple[np.ndarray, int, int]:
    """The flow network of (L, n, n) residual attention, reduced to the nodes that can carry flow from input
    `source` to output `sink`: [input source] + (L - 1) x n hidden nodes + [output sink]. Returns (capacity, s, t)."""
    n_layers, n, _ = a.shape
    if n_layers == 1:
        cap = np.zeros((2, 2))
        cap[0, 1] = a[0, sink, source]
        return cap, 0, 1
    n_nodes = 2 + (n_layers - 1) * n
    cap = np.zeros((n_nodes, n_nodes))
    hid = lambda layer, i: 1 + (layer - 1) * n + i  # node of position i at layer boundary layer (1 .. L-1)  # noqa: E731
    cap[0, hid(1, 0):hid(1, 0) + n] = a[0][:, source]  # input source -> every output of layer 0
    for layer in range(1, n_layers - 1):  # boundary layer -> boundary layer + 1: capacity A'_layer[i, j] on j -> i
        cap[hid(layer, 0):hid(layer, 0) + n, hid(layer + 1, 0):hid(layer + 1, 0) + n] = a[layer].T
    last = hid(n_layers - 1, 0)
    cap[last:last + n, n_nodes - 1] = a[n_layers - 1][sink]  # every input of the last layer -> output sink
    return cap, 0, n_nodes - 1


def attention_flow(att: np.ndarray, token: int, *, max_tokens: int = FLOW_MAX_TOKENS,
                   progress: Callable[[float], None] | None = None) -> np.ndarray:
    """(L, H, n, n) -> (n,): the maximum flow from every input token to output `token` after the last layer."""
    a = residual_attention(att)
    n = a.shape[-1]
    if n > max_tokens:
        raise InputError(f"Attention flow is limited to {max_tokens} tokens (this input has {n}): it solves one "
                         "max-flow problem per token and would take too long. Shorten the text, or use rollout.",
                         key="flow_too_long", limit=max_tokens, n=n)
    if not 0 <= token < n:
        raise InputError(f"token index {token} is out of range 0..{n - 1}", key="token_outside", token=token, last=n - 1)
    out = np.zeros(n, dtype=np.float64)
    for j in range(n):
        cap, s, t = layered_capacity(a, j, token)
        out[j] = max_flow(cap, s, t)
        if progress is not None:
            progress((j + 1) / n)
    return out


@dataclass(frozen=True)
class FlowResult:
    """Rollout and flow for one output token after the last layer; arrays are read-only."""

    tokens: tuple[str, ...]
    token: int  # the output position
    rollout: np.ndarray  # (n,) R_{L-1}[token, :], sums to 1
    flow: np.ndarray  # (n,) max-flow from each input to the output token (each <= 1)
    rollout_matrix: np.ndarray  # (L, n, n) rollout up to every layer

    def rows(self) -> list[dict]:
        return [{"position": j, "token": t, "rollout": round(float(self.rollout[j]), 4),
                 "flow": round(float(self.flow[j]), 4)} for j, t in enumerate(self.tokens)]


def flow_and_rollout(att: np.ndarray, tokens: list[str], token: int, *, max_tokens: int = FLOW_MAX_TOKENS,
                     progress: Callable[[float], None] | None = None) -> FlowResult:
    """Rollout and attention flow to output `token` from an (L, H, n, n) self-attention stack (e.g. a trace's
    encoder_attention)."""
    if len(tokens) != np.asarray(att).shape[-1]:
        raise ValueError(f"{len(tokens)} tokens for attention over {np.asarray(att).shape[-1]} positions")
    flow = attention_flow(att, token, max_tokens=max_tokens, progress=progress)
    roll = rollout(att)
    return FlowResult(tuple(tokens), int(token), _frozen(roll[-1, token]), _frozen(flow), _frozen(roll))

