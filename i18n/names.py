"""Names shown for things the model has: a head ("Layer 2 · Head 6" / "레이어 2 · 헤드 6"), and an activation
function ("relu" -> "ReLU"). One function each, so every page, figure and export names them alike.

    head_name(2, 6, "ko")                          # "레이어 2 · 헤드 6"
    head_name(1, 2, "ko", block="cross")           # "인코더-디코더 어텐션 · 레이어 1 · 헤드 2"
    head_name(2, 6, "ko", compact=True)            # "L2·H6": only where space demands (a grid's axis of all heads)
    head_name(2, 4, "en", kv=kv_head(4, 9, 3))      # "Layer 2 · Head 4 (KV 1)": a query head and the key/value head
                                                   # it shares (grouped-query attention)
    activation_name("gelu_new")                    # "GELU (tanh)"

Heads are counted from 0, as in the URL and the sidebar.
"""

from __future__ import annotations

from .catalog import t


def kv_head(head: int, n_heads: int, n_kv_heads: int | None) -> int | None:
    """The key/value head a query head shares under grouped-query attention (n_heads // n_kv_heads query heads per
    key/value head); None when every query head has its own (n_kv_heads None or n_heads)."""
    if not n_kv_heads or n_kv_heads >= n_heads:
        return None
    return head // (n_heads // n_kv_heads)


def head_name(layer: int, head: int, lang: str = "en", *, block: str | None = None, compact: bool = False,
              kv: int | None = None) -> str:
    """One head's name in the interface language; `block`: "decoder_self" or "cross" prefix the block (the
    encoder's, or a model's only, heads need none); `compact`: the short form "L2·H6" for crowded axes; `kv`: the
    key/value head it shares (kv_head), appended as " (KV 1)"."""
    name = t("names.head_compact" if compact else "widgets.layer_head", lang, layer=layer, head=head)
    if kv is not None:
        name += " " + t("names.kv", lang, kv=kv)
    if block in ("decoder_self", "cross"):
        name = t(f"names.block.{block}", lang) + " · " + name
    return name


# transformers' activation names -> how a lecture writes them
_ACTIVATIONS = {
    "relu": "ReLU", "gelu": "GELU", "gelu_python": "GELU", "gelu_new": "GELU (tanh)", "gelu_pytorch_tanh": "GELU (tanh)",
    "gelu_fast": "GELU (tanh)", "gelu_accurate": "GELU (tanh)", "quick_gelu": "QuickGELU", "gelu_10": "GELU",
    "silu": "SiLU/Swish", "swish": "SiLU/Swish", "mish": "Mish", "tanh": "tanh", "sigmoid": "sigmoid", "relu2": "ReLU²",
    "relu6": "ReLU6", "leaky_relu": "LeakyReLU", "hardswish": "HardSwish", "linear": "linear",
}


def activation_name(name: str, *, gated: bool = False) -> str:
    """An FFN non-linearity as it is written ("relu" -> "ReLU", "gelu" -> "GELU", "silu" -> "SiLU/Swish"); a gated
    FFN with SiLU is SwiGLU (GeGLU with GELU, ReGLU with ReLU)."""
    key = str(name).strip().lower()
    shown = _ACTIVATIONS.get(key, str(name))
    if gated:
        glu = {"silu": "SwiGLU", "swish": "SwiGLU", "relu": "ReGLU", "linear": "Bilinear"}.get(key)
        if glu is None and key.startswith("gelu"):
            glu = "GeGLU"
        shown = glu or f"{shown} (gated)"
    return shown
