"""Build a module whose weights are about to be loaded without drawing random initial weights first: the one
model/source.py `build` builds every loaded model within this block, then overwrites every parameter and persistent
buffer strictly (the file's keys must cover the module's state_dict), so the values drawn by `torch.nn.init` in the
constructors would always be thrown away: for seq2seq-tiny and MiniLM that drawing was 0.27 of the 0.44 s it takes
to load both (cProfile; `normal_` over the 51,576 x 128 embeddings and `uniform_` over every Linear), on every fresh
app process. Hugging Face's `no_init_weights` does the same. Building on PyTorch's `meta` device instead would import
torch._dynamo (~3 s).

The init functions of `torch.nn.init` are wrapped once, and the wrappers skip only in a thread inside this context
(a thread-local flag): a session building a random model (paper-base, training) at the same moment still gets its
seeded random weights.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from torch.nn import init

INIT_FUNCTIONS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "xavier_uniform_",
                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_")
_LOCAL = threading.local()
_INSTALLED: list[bool] = []
_LOCK = threading.Lock()


def _skipping() -> bool:
    return getattr(_LOCAL, "depth", 0) > 0


def _wrap(fn):
    @functools.wraps(fn)
    def wrapper(tensor, *args, **kwargs):
        return tensor if _skipping() else fn(tensor, *args, **kwargs)

    wrapper.__headlight_noinit__ = True
    return wrapper


def _install() -> None:
    with _LOCK:
        if _INSTALLED:
            return
        for name in INIT_FUNCTIONS:
            fn = getattr(init, name, None)
            if fn is not None and not getattr(fn, "__headlight_noinit__", False):
                setattr(init, name, _wrap(fn))
        _INSTALLED.append(True)


@contextlib.contextmanager
def no_random_init():
    """Within this block (this thread only), torch.nn.init's functions leave their tensor as it is."""
    _install()
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1
