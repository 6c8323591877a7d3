"""The paper's learning-rate schedule (Vaswani et al. 2017, section 5.3, eq. 3), the one formula that seq2seq-tiny's
training (training/train.py) and the Training page's lab (training/lab.py) both use:

    lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

It rises linearly for `warmup` steps, peaks at step = warmup (factor * d_model^-0.5 * warmup^-0.5), then falls as
step^-0.5. Steps count from 1; step 0 is taken as step 1 (the rate of the first update). Pure Python: no torch.
"""

from __future__ import annotations

# Adam as the paper sets it (section 5.3): beta1 0.9, beta2 0.98, epsilon 1e-9
ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9


def rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate at `step` (step 0 taken as step 1)."""
    step = max(int(step), 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def peak(d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The highest rate, reached at step = warmup."""
    return rate(warmup, d_model, warmup, factor)
