"""What the cause views share: which model they apply to, the answer tokens (target and foil), the prompt's ids.

A target or foil is a string (" Paris"); its token is the FIRST token of the string's encoding without special tokens
(the model's byte-level BPE makes " Paris" one token "ĠParis"). A string of several tokens is not an error: its first
token stands for it, and `AnswerToken.n_tokens` says how many it had, so the views and the command line can say so.
An empty string, or one with no tokens, is an InputError.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError

MAX_CAUSE_TOKENS = 64  # the longest prompt the attribution and patching views run (bounded work; the CLI too)


@dataclass(frozen=True)
class AnswerToken:
    text: str  # as typed (" Paris")
    id: int  # its first token's id
    token: str  # that token ("ĠParis")
    n_tokens: int  # how many tokens the string has (1: the token is the whole string)


def answer_token(loaded, text: str) -> AnswerToken:
    """The token that stands for `text` as a next token (its first; see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("The target or foil is empty: type a word, e.g. \" Paris\".", key="cause_empty_answer")
    enc = loaded.tokenizer.encode(text, add_special_tokens=False)
    return AnswerToken(text, int(enc.ids[0]), enc.tokens[0], len(enc.ids))


def check_decoder_only(loaded) -> None:
    """Attribution and patching read the next-token logits of a decoder-only language model."""
    if loaded.kind != "decoder":
        raise InputError(f"{loaded.name} is not a decoder-only language model: direct logit attribution and "
                         "activation patching need one (e.g. smollm2-135m).", key="cause_decoder_only",
                         model=loaded.name)


def check_attributable(loaded) -> None:
    """Direct logit attribution needs the residual stream to be a plain sum of its parts: a pre-LN stack whose
    sublayers' outputs are added as they are (Gemma's post-norms normalise each sublayer's output first, so a head's
    part of it is not linear: refused, by the config's declaration)."""
    check_decoder_only(loaded)
    cfg = loaded.config
    if cfg.norm_placement != "pre" or cfg.post_norms:
        raise InputError(f"{loaded.name} normalises each sublayer's output before adding it to the residual stream: "
                         "its logit is not a sum of the heads' parts, so direct logit attribution does not apply "
                         "(activation patching does).", key="cause_not_additive", model=loaded.name)


def prompt_ids(loaded, text: str, limit: int = MAX_CAUSE_TOKENS) -> tuple[list[int], list[str]]:
    """(ids, tokens) of a prompt, at most `limit` tokens (an InputError names the count otherwise)."""
    enc = loaded.encode_prompt(text)
    if len(enc.ids) > limit:
        raise InputError(f"The prompt has {len(enc.ids)} tokens; these views run at most {limit}.",
                         key="cause_too_long", n=len(enc.ids), limit=limit)
    return list(enc.ids), list(enc.tokens)


def ro(a, dtype=np.float32) -> np.ndarray:
    """A read-only copy of `a` (a tensor or an array) as `dtype`: results here are shared, never changed."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().to(torch.float64 if dtype == np.float64 else torch.float32).numpy()
    out = np.array(a, dtype=dtype)
    out.setflags(write=False)
    return out
