"""Logit lens (seq2seq-tiny): every decoder layer's output through the final linear layer and softmax."""


from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.errors import InputError

from ..frozen import ro, to_numpy


# ---- logit lens ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogitLens:
    """Top-k next tokens read from every decoder layer's output at one decoding step."""

    step: int
    prefix: tuple[str, ...]  # decoder input up to the step ([<bos>, y1 .. y_step])
    answer: str  # what the model emits at this step (the last layer's argmax)
    layers: tuple[int, ...]  # the decoder layers read, 0 ..
    top_tokens: tuple[tuple[str, ...], ...]  # (L, k)
    top_probs: np.ndarray  # (L, k)
    answer_prob: np.ndarray  # (L,) probability of the final answer at each layer
    answer_rank: np.ndarray  # (L,) its rank (0 = top)

    @property
    def first_layer_with_answer(self) -> int | None:
        hits = np.flatnonzero(self.answer_rank == 0)
        return int(hits[0]) if hits.size else None

    def rows(self) -> list[dict]:
        out = []
        for la in self.layers:
            row = {"layer": la, "p_answer": round(float(self.answer_prob[la]), 4),
                   "answer_rank": int(self.answer_rank[la]) + 1}
            for r, (t, p) in enumerate(zip(self.top_tokens[la], self.top_probs[la]), start=1):
                row[f"#{r}"] = f"{t} ({p:.2f})"
            out.append(row)
        return out


def logit_lens(model, text: str, *, step: int = 0, k: int = 5, task: str | None = None,
               edits: tuple = ()) -> LogitLens:
    """Greedy-decode, then read step `step` (0 = the first generated token) from every decoder layer's output
    through the model's final linear layer (`generator`) and softmax."""
    if model.kind == "decoder":
        return _decoder_only_lens(model, text, k=k, edits=edits)
    if model.kind != "encoder-decoder":
        raise InputError(f"{model.name} has no decoder: the logit lens reads a decoder's layers.", key="lens_no_decoder",
                         model=model.name)
    kw = {"task": task} if task is not None else {}
    tr = model.trace(text, edits=edits, **kw)
    dec_in = tr.target_ids
    if not 0 <= step < len(dec_in):
        raise InputError(f"step {step} is outside the decoding (steps 0 to {len(dec_in) - 1}).", key="step_outside",
                         step=step, last=len(dec_in) - 1)
    src = torch.tensor([tr.source_ids], dtype=torch.long, device=model.device)
    tgt = torch.tensor([dec_in[: step + 1]], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        out = model.module(src, tgt, record=True, edits=edits)
        states = torch.stack([h[0, step] for h in out.decoder.hidden_states[1:]])  # (L, d) each layer's output
        probs = model.module.output(states).float().softmax(-1)  # (L, V)
        final = int(out.logits[0, step].argmax())
        p, idx = probs.topk(min(k, probs.shape[-1]), dim=-1)
        rank = (probs > probs[:, final : final + 1]).sum(-1)
    tok = lambda i: model.token_texts([i], "#{id}")[0]  # noqa: E731
    return LogitLens(
        step, tuple(tok(i) for i in dec_in[: step + 1]), tok(final),
        tuple(range(states.shape[0])),
        tuple(tuple(tok(i) for i in row) for row in idx.tolist()), ro(to_numpy(p)),
        ro(to_numpy(probs[:, final])), ro(rank.cpu().numpy(), np.int64),
    )


def _decoder_only_lens(model, text: str, *, k: int, edits: tuple) -> LogitLens:
    """GPT-2 (nostalgebraist's logit lens): every layer's output at the last position of `text` through the model's
    own final norm and output matrix; the last layer's reading is the model's next-token distribution."""
    enc = model.encode_prompt(text)
    ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        out = model.module(ids, hidden=True, edits=edits, last_only=True)
        states = torch.stack([h[0, -1] for h in out.decoder.hidden_states[1:]])  # (L, d) each layer's output
        probs = model.module.output(states).float().softmax(-1)  # (L, V)
        final = int(out.logits[0, -1].argmax())
        p, idx = probs.topk(min(k, probs.shape[-1]), dim=-1)
        rank = (probs > probs[:, final : final + 1]).sum(-1)
    tok = lambda i: model.token_texts([i], "#{id}")[0]  # noqa: E731
    return LogitLens(
        len(enc.ids) - 1, tuple(enc.tokens), tok(final),
        tuple(range(states.shape[0])),
        tuple(tuple(tok(i) for i in row) for row in idx.tolist()), ro(to_numpy(p)),
        ro(to_numpy(probs[:, final])), ro(rank.cpu().numpy(), np.int64),
    )
