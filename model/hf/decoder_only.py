"""A loaded decoder-only model (GPT-2): its trace holds the causal self-attention of the prompt, plus
the next-token distribution and greedy continuation, step by step.

Notation: L layers, H heads, N prompt length, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..loaded import LoadedModel
from ..noinit import no_random_init
from ..tokenizer import check_text
from ..trace import AttentionTrace
from .checkpoint import Checkpoint, load_state
from .configs import Fields, set_activation
from .folder import Folder
from .gpt2 import GPT2, DecoderOnlyOutput, gpt2_config, gpt2_state
from .tokenizer import load_tokenizer


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().float().cpu().numpy()


def _stack(per_layer: list[torch.Tensor]) -> np.ndarray:
    """L x (1, h, n, n) -> (L, h, n, n) float32 numpy."""
    return _np(torch.stack([a[0] for a in per_layer]))


@dataclass(frozen=True)
class TokenChoice:
    token: str
    id: int
    prob: float


@dataclass(frozen=True)
class Step:
    """One greedy step: the chosen token (argmax), its probability and the top alternatives."""

    position: int  # index of the new token in the whole sequence
    choice: TokenChoice
    top: list[TokenChoice]


class DecoderOnlyModel(LoadedModel):
    kind = "decoder"
    main_block = "decoder_self"
    module: GPT2

    def n_layers(self, block: str = "decoder_self") -> int:
        return self.config.n_encoder_layers  # its one causal stack

    def layer_modules(self, block: str = "decoder_self"):
        return self.module.blocks.layers

    @property
    def source_embedding(self):
        return self.module.embed

    def encode_prompt(self, text: str):
        """The prompt's Encoded (tokens, ids, words); an InputError when the text is empty or has no tokens."""
        check_text(text)
        enc = self.tokenizer.encode(text)
        if not enc.ids:
            raise InputError("The text has no tokens (only spaces or control characters): type a sentence.",
                             key="no_tokens")
        return enc

    def _encode(self, text: str) -> list[int]:
        return self.encode_prompt(text).ids

    def forward_ids(self, ids: list[int], **kw) -> DecoderOnlyOutput:
        with torch.inference_mode():
            return self.module(self._ids(ids), **kw)

    def _top(self, logits: torch.Tensor, k: int) -> list[TokenChoice]:
        """logits (V,) -> the k most probable next tokens."""
        probs = logits.float().softmax(-1)
        p, i = probs.topk(max(1, min(k, probs.shape[0])))
        return [TokenChoice(self.tokenizer.id_to_token(int(j)) or f"[{int(j)}]", int(j), float(q)) for q, j in zip(p, i)]

    def next_token_distribution(self, text: str, top_k: int = 10) -> list[TokenChoice]:
        """The top_k most probable tokens after `text`, with their probabilities."""
        out = self.forward_ids(self._encode(text), last_only=True)
        return self._top(out.logits[0, -1], top_k)

    def greedy_continue(self, text: str, n_new: int = 8, top_k: int = 5, *,
                        ablations: dict | None = None, prefix: tuple[int, ...] = ()) -> list[Step]:
        """Append the argmax token n_new times (never past the model's positions); each step lists its top_k.
        ablations: {("decoder_self", layer): HeadAblation}, applied inside every step's forward. prefix: token ids
        already chosen after the text (earlier steps), so that a continuation can grow one step at a time."""
        ids = [*self._encode(text), *prefix]
        steps = []
        for _ in range(max(0, min(n_new, self.config.max_positions - len(ids)))):
            top = self._top(self.forward_ids(ids, last_only=True, ablations=ablations).logits[0, -1], top_k)
            steps.append(Step(len(ids), top[0], top))
            ids = [*ids, top[0].id]
        return steps

    def trace(self, text: str, *, intermediates: bool = False, ablations: dict | None = None,
              top_k: int = 5, **kw) -> AttentionTrace:
        """ablations: {("decoder_self", layer): HeadAblation}, applied inside the forward."""
        enc = self.encode_prompt(text)
        out = self.forward_ids(enc.ids, hidden=intermediates, ablations=ablations, last_only=True)
        n = len(enc.ids)
        nxt = self._top(out.logits[0, -1], top_k)
        return AttentionTrace(
            model=self.name, text=text,
            source_tokens=enc.tokens, source_ids=enc.ids, source_special=enc.special,
            source_word_ids=enc.word_ids, source_offsets=enc.offsets,
            encoder_attention=None,
            decoder_self_attention=_stack(out.stack.self_attention),  # (L, H, N, N), causal
            masks={"decoder_self": np.tril(np.ones((n, n), dtype=bool))},
            truncated=enc.truncated, n_tokens_untruncated=enc.n_tokens_untruncated,
            decoder_hidden_states=_np(torch.stack([h[0] for h in out.stack.hidden_states])) if intermediates else None,
            meta={**self._meta(), **kw, "next_tokens": [c.token for c in nxt],
                  "next_probs": [c.prob for c in nxt]},
        )


def load_decoder(folder: Folder, device: torch.device, name: str) -> DecoderOnlyModel:
    f = Fields(folder.config, folder.model_type, str(folder.path))
    config, act, tie = gpt2_config(f)
    ck = Checkpoint(folder.weight_files, anchor="wte.weight")
    state = gpt2_state(ck, config, tie)
    with no_random_init():  # load_state is strict: every parameter is overwritten
        module = GPT2(config, tie)
    set_activation(module, act)
    load_state(module, state)
    tok = load_tokenizer(folder.path, config.max_positions, config.vocab_size)
    desc = (f"gpt2 from {folder.path}: decoder-only, {config.n_encoder_layers} layers x {config.n_heads} heads, "
            f"d_model {config.d_model}, d_k {config.d_k}, causal self-attention.")
    return DecoderOnlyModel(name, module, tok, device, trained=True, description=desc)
