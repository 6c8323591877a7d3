"""Activation patching (Meng et al. 2022, "Locating and Editing Factual Associations in GPT"; Wang et al. 2022,
"Interpretability in the Wild"): run a corrupted prompt, put back one piece of the clean run, and see how much of the
clean answer returns.

Both prompts must have the same number of tokens (position i of one is position i of the other). The measure is the
target-minus-foil logit difference at the last position:

    head grid (L, H):      the corrupted run with head h of layer l's output Z_h (before W_O) taken from the clean
                           run at every position;
    residual grid (L, n):  the corrupted run with the residual stream entering layer l (resid_pre) taken from the
                           clean run at one position;

each raw, and normalised as (patched - corrupted) / (clean - corrupted): 0 is the corrupted run, 1 the clean one.

Everything runs through the one forward with a run request (model/run.py): the clean run keeps every head's Z and
every layer's resid_pre, the corrupted run every resid_pre; then, layer by layer, one batch of patched copies (row h
patches head h; row i patches position i) resumes at that layer from the corrupted run's stream (Resume: the layers
below a patch would give the corrupted numbers again, so they are not run). A progress callback is called after each
layer; it may raise to cancel (the app's Stop), and nothing partial is returned.

Notation: L layers, H heads, n tokens, d d_model, k d_k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..run import HeadOutput, Keep, Residual, Resume, Run
from .common import AnswerToken, answer_token, check_decoder_only, prompt_ids, ro


@dataclass(frozen=True)
class Patching:
    model: str
    clean: str
    corrupt: str
    clean_ids: tuple[int, ...]
    corrupt_ids: tuple[int, ...]
    clean_tokens: tuple[str, ...]
    corrupt_tokens: tuple[str, ...]
    target: AnswerToken
    foil: AnswerToken
    clean_diff: float
    corrupt_diff: float
    head: np.ndarray | None  # (L, H) patched logit differences; None: not computed
    residual: np.ndarray | None  # (L, n)

    def normalised(self, grid: np.ndarray) -> np.ndarray:
        """(patched - corrupted) / (clean - corrupted); NaN everywhere when the two runs give the same difference."""
        span = self.clean_diff - self.corrupt_diff
        if abs(span) < 1e-6:
            return np.full(np.shape(grid), np.nan, dtype=np.float32)
        return ((np.asarray(grid, dtype=np.float64) - self.corrupt_diff) / span).astype(np.float32)


def pair_ids(loaded, clean: str, corrupt: str) -> tuple[tuple[list[int], list[str]], tuple[list[int], list[str]]]:
    """Both prompts' (ids, tokens); an InputError when their token counts differ (naming both)."""
    a, b = prompt_ids(loaded, clean), prompt_ids(loaded, corrupt)
    if len(a[0]) != len(b[0]):
        raise InputError(f"The clean prompt has {len(a[0])} tokens and the corrupted one {len(b[0])}: activation "
                         "patching needs the same number of tokens (position i of one is position i of the other).",
                         key="cause_lengths", clean=len(a[0]), corrupt=len(b[0]))
    return a, b


def _diff(logits: torch.Tensor, target: int, foil: int) -> torch.Tensor:
    """(b, 1, V) -> (b,) float64 target - foil at the last position."""
    last = logits[:, -1].double()
    return last[:, target] - last[:, foil]


def patch(loaded, clean: str, corrupt: str, target: str, foil: str, *, heads: bool = True, residual: bool = True,
          progress=None) -> Patching:
    """The head grid and / or the residual grid of a clean / corrupted pair (see the module docstring)."""
    check_decoder_only(loaded)
    (cid, ctok), (xid, xtok) = pair_ids(loaded, clean, corrupt)
    tgt, fl = answer_token(loaded, target), answer_token(loaded, foil)
    cfg = loaded.config
    L, H, n = cfg.n_decoder_layers, cfg.n_heads, len(cid)
    want = Keep(heads=heads, sublayers=True, logits="last")
    clean_rec = loaded.run(Run(cid, keep=want))
    corrupt_rec = loaded.run(Run(xid, keep=Keep(sublayers=True, logits="last")))
    clean_diff = float(_diff(clean_rec.logits, tgt.id, fl.id)[0])
    corrupt_diff = float(_diff(corrupt_rec.logits, tgt.id, fl.id)[0])
    cl, co = clean_rec.decoder.layers, corrupt_rec.decoder.layers
    total = (L if heads else 0) + (L if residual else 0)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done / total)

    head_grid = res_grid = None
    if heads:
        head_grid = np.zeros((L, H), dtype=np.float64)
        for la in range(L):
            start = co[la].resid_pre.expand(H, n, -1)  # (H, n, d): the corrupted stream entering layer la
            edits = (Resume(la, start),
                     *(HeadOutput(la, h, "set", cl[la].heads[0, h], rows=(h,)) for h in range(H)))
            rec = loaded.run(Run([xid] * H, edits=edits, keep=Keep(logits="last")))
            head_grid[la] = _diff(rec.logits, tgt.id, fl.id).numpy()
            tick()
    if residual:
        res_grid = np.zeros((L, n), dtype=np.float64)
        for la in range(L):
            start = co[la].resid_pre.expand(n, n, -1)  # (n, n, d): row i patches position i
            edits = (Resume(la, start),
                     *(Residual(la, cl[la].resid_pre[0, i:i + 1], positions=(i,), rows=(i,)) for i in range(n)))
            rec = loaded.run(Run([xid] * n, edits=edits, keep=Keep(logits="last")))
            res_grid[la] = _diff(rec.logits, tgt.id, fl.id).numpy()
            tick()
    return (Patching(loaded.name, clean, corrupt, tuple(cid), tuple(xid), tuple(ctok), tuple(xtok), tgt, fl,
                           clean_diff, corrupt_diff, None if head_grid is None else ro(head_grid),
                           None if res_grid is None else ro(res_grid)))
