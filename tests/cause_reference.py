"""An independent computation of direct logit attribution and activation patching on transformers' own llama-family
modules (tests only), with PyTorch hooks: the per-head outputs are the input of each layer's `o_proj` (Concat of the
heads, (1, n, H * k)), the MLPs' outputs are `mlp`'s, the embeddings `embed_tokens`', the final residual the input of
`model.norm`. Nothing here uses the project's run request or its records."""

from __future__ import annotations

import torch


def _k(ref) -> int:
    c = ref.config
    return getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads


@torch.no_grad()
def dla(ref, ids: list[int], target: int, foil: int | None) -> dict:
    """{"head" (L, H), "mlp" (L,), "embed", "total"} in float64, read with hooks."""
    base = ref.model
    kept: dict = {"z": {}, "mlp": {}}
    hooks = [base.embed_tokens.register_forward_hook(lambda m, a, out: kept.__setitem__("embed", out)),
             base.norm.register_forward_pre_hook(lambda m, a: kept.__setitem__("final", a[0]))]
    for i, layer in enumerate(base.layers):
        hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(
            lambda m, a, i=i: kept["z"].__setitem__(i, a[0])))
        hooks.append(layer.mlp.register_forward_hook(lambda m, a, out, i=i: kept["mlp"].__setitem__(i, out)))
    try:
        logits = ref(input_ids=torch.tensor([ids])).logits[0, -1].double()
    finally:
        for h in hooks:
            h.remove()
    w_u = ref.lm_head.weight.double()
    u = w_u[target] - (w_u[foil] if foil is not None else 0.0)
    r = kept["final"][0, -1].double()
    s = 1.0 / torch.sqrt((r * r).mean() + base.norm.variance_epsilon)
    w = base.norm.weight.double() * u * s
    L, H, k = len(base.layers), ref.config.num_attention_heads, _k(ref)
    head = torch.zeros(L, H, dtype=torch.float64)
    mlp = torch.zeros(L, dtype=torch.float64)
    for i, layer in enumerate(base.layers):
        wo = layer.self_attn.o_proj.weight.double()  # (d, H * k)
        z = kept["z"][i][0, -1].double()  # (H * k,)
        for h in range(H):
            head[i, h] = (wo[:, h * k:(h + 1) * k] @ z[h * k:(h + 1) * k]) @ w
        mlp[i] = kept["mlp"][i][0, -1].double() @ w
    total = logits[target] - (logits[foil] if foil is not None else 0.0)
    return {"head": head.numpy(), "mlp": mlp.numpy(), "embed": float(kept["embed"][0, -1].double() @ w),
            "total": float(total)}


@torch.no_grad()
def _diff(ref, ids, target, foil) -> float:
    last = ref(input_ids=torch.tensor([ids])).logits[0, -1].double()
    return float(last[target] - last[foil])


_CLEAN: list = []  # [(model, clean ids, its clean run)]: the model itself is kept, so its id is never reused


@torch.no_grad()
def _clean_run(ref, clean: list[int]) -> dict:
    """The clean run, read once per model and prompt: each layer's o_proj input (1, n, H * k) through a hook, and
    the residual stream entering each decoder layer (transformers' hidden_states: [embeddings, ...])."""
    if _CLEAN and _CLEAN[0][0] is ref and _CLEAN[0][1] == tuple(clean):
        return _CLEAN[0][2]
    z: dict = {}
    hooks = [layer.self_attn.o_proj.register_forward_pre_hook(lambda m, a, i=i: z.__setitem__(i, a[0].clone()))
             for i, layer in enumerate(ref.model.layers)]
    try:
        states = ref(input_ids=torch.tensor([clean]), output_hidden_states=True).hidden_states
    finally:
        for h in hooks:
            h.remove()
    _CLEAN[:] = [(ref, tuple(clean), {"z": z, "states": [s.clone() for s in states]})]  # one prompt at a time
    return _CLEAN[0][2]


@torch.no_grad()
def patch_head(ref, clean: list[int], corrupt: list[int], target: int, foil: int, layer: int, head: int) -> float:
    """The corrupted run's target - foil logit with head `head` of `layer`'s output (the o_proj input's slice) from
    the clean run at every position."""
    o_proj = ref.model.layers[layer].self_attn.o_proj
    k = _k(ref)
    kept = _clean_run(ref, clean)["z"][layer]

    def put(m, a):
        z = a[0].clone()
        z[..., head * k:(head + 1) * k] = kept[..., head * k:(head + 1) * k]
        return (z,)

    h = o_proj.register_forward_pre_hook(put)
    try:
        return _diff(ref, corrupt, target, foil)
    finally:
        h.remove()


@torch.no_grad()
def patch_residual(ref, clean: list[int], corrupt: list[int], target: int, foil: int, layer: int, pos: int) -> float:
    """The corrupted run with the residual stream entering decoder layer `layer` at `pos` from the clean run."""
    value = _clean_run(ref, clean)["states"][layer][0, pos].clone()

    def put(m, a, kw):
        x = a[0].clone()
        x[0, pos] = value
        return (x, *a[1:]), kw

    h = ref.model.layers[layer].register_forward_pre_hook(put, with_kwargs=True)
    try:
        return _diff(ref, corrupt, target, foil)
    finally:
        h.remove()
