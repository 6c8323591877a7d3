"""What the app needs at run time about seq2seq-tiny's three tasks (training lives in `training/`).

Tasks (the task token is the first source token; the target is a permutation
of the source's text tokens, word pieces and `<unk>` included):
- ``copy``    y = x                       alignment: a diagonal
- ``reverse`` y = x reversed              alignment: the anti-diagonal
- ``swap``    neighbours swap places:     alignment: a zig-zag permutation
              (x2 x1 x4 x3 ...; an odd last token stays put)

Source ids: [<task>, x_1 .. x_n, <eos>];  target ids: [<bos>, y_1 .. y_n, <eos>].
"""

from __future__ import annotations

from pathlib import Path

from .examples import EXAMPLE_SENTENCES

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "seq2seq-tiny"

TASKS = ("copy", "reverse", "swap")
TASK_TOKENS = {t: f"<{t}>" for t in TASKS}
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, *TASK_TOKENS.values()]  # ids 0.. in this order; <pad> = 0

# longest source text in tokens; longer input is truncated with a notice (training covers 1..MAX_TEXT_TOKENS)
MAX_TEXT_TOKENS = 60

BRIEF_SENTENCES = EXAMPLE_SENTENCES  # the brief's example sentences: always in the evaluation set


def permutation(task: str, n: int) -> list[int]:
    """Output position i takes source text token perm[i] (0-based over x_1..x_n)."""
    if task == "copy":
        return list(range(n))
    if task == "reverse":
        return list(range(n - 1, -1, -1))
    if task == "swap":
        perm = []
        for i in range(0, n - 1, 2):
            perm += [i + 1, i]
        if n % 2:
            perm.append(n - 1)
        return perm
    raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}")


def apply_task(task: str, seq: list) -> list:
    return [seq[j] for j in permutation(task, len(seq))]
