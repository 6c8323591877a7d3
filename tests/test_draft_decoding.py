"""Greedy decoding with a draft (model.transformer.Transformer.greedy_decode): the draft may only change how fast the
output comes, never what it is. Every output is compared, token for token, with the plain one-token-per-pass loop:
right drafts, wrong ones (at the start, in the middle, an early or missing <eos>, too long, random), ablated heads
(the model then errs, so the draft is refused part-way), and an untrained model that refuses almost every draft."""

import random

import pytest
import torch

from analysis.decoding import greedy_run
from model.data import TASKS, apply_task
from model.run import ablate

SENTENCES = [
    "Mina left her umbrella on the bus this morning",
    "The cat sat on the mat",
    "a b c d e f g h i j k l m n o p",
    "우리는 내일 아침 일찍 기차를 타고 부산에 간다",
    "Yes.",
    "1,200 people, 3 dogs and one very small hamster",
    "the street was wide " * 4,
]


def plain(loaded, ids, limit, edits=()):
    """The reference: greedy_decode without a draft (one decoder pass per token)."""
    with torch.inference_mode():
        src = torch.tensor([ids])
        return loaded.module.greedy_decode(src, loaded.bos_id, loaded.eos_id, limit, edits=edits)[0].tolist()


def drafted(loaded, ids, limit, draft, edits=()):
    with torch.inference_mode():
        src = torch.tensor([ids])
        return loaded.module.greedy_decode(src, loaded.bos_id, loaded.eos_id, limit, edits=edits,
                                           draft=draft)[0].tolist()


def wrong_drafts(answer: list[int], eos: int, vocab: int, rng: random.Random) -> list[list[int]]:
    k = len(answer)
    out = [answer,  # right
           [rng.randrange(4, vocab) for _ in range(k)],  # random
           answer[: k // 2] + [rng.randrange(4, vocab)] + answer[k // 2 + 1:],  # one token wrong in the middle
           answer[:-1],  # no <eos>
           answer[: max(1, k // 3)] + [eos],  # <eos> too early
           answer + answer,  # too long
           [eos],  # <eos> at once
           answer[1:] + [eos]]  # shifted
    return out


@pytest.mark.parametrize("task", TASKS)
def test_draft_never_changes_the_output(seq2seq_tiny, task):
    rng = random.Random(0)
    for text in SENTENCES:
        enc = seq2seq_tiny.encode_source(text, task=task)
        limit = min(len(enc.ids) + 4, seq2seq_tiny.config.max_positions - 1)
        want = plain(seq2seq_tiny, enc.ids, limit)
        answer = [*apply_task(task, enc.ids[1:-1]), seq2seq_tiny.eos_id]
        for draft in wrong_drafts(answer, seq2seq_tiny.eos_id, seq2seq_tiny.config.vocab_size, rng):
            assert drafted(seq2seq_tiny, enc.ids, limit, draft) == want, (text, task, draft)
        for short in (1, 2, 3):  # a step limit below the output's length
            assert drafted(seq2seq_tiny, enc.ids, short, answer) == plain(seq2seq_tiny, enc.ids, short)


def test_draft_under_ablation_where_the_model_errs(seq2seq_tiny):
    """Ablated heads make seq2seq-tiny wrong part-way: the draft (the right answer) is then refused where the model
    disagrees, and the loop goes on from the model's own token."""
    text = "Mina left her umbrella on the bus this morning"
    errs = 0
    for layer in range(seq2seq_tiny.config.n_decoder_layers):
        abl = ablate(layer, range(seq2seq_tiny.config.n_heads), block="cross")
        for task in TASKS:
            enc = seq2seq_tiny.encode_source(text, task=task)
            limit = len(enc.ids) + 4
            want = plain(seq2seq_tiny, enc.ids, limit, abl)
            answer = [*apply_task(task, enc.ids[1:-1]), seq2seq_tiny.eos_id]
            errs += want[1:] != answer
            assert drafted(seq2seq_tiny, enc.ids, limit, answer, abl) == want
    assert errs > 0  # the test did exercise refused drafts


def test_untrained_model_refuses_drafts_and_still_decodes(paper_base):
    ids = paper_base.encode_source("I am a student").ids
    want = plain(paper_base, ids, 6)
    assert drafted(paper_base, ids, 6, [5, 6, 7, 8, paper_base.eos_id]) == want


def test_greedy_run_equals_the_loop_whether_the_answer_is_right_or_not(seq2seq_tiny, monkeypatch):
    """analysis.greedy_run checks the task's answer in its recorded pass and decodes only where the model disagrees:
    its output and every step's inputs are the plain loop's, with and without ablated heads; the loop runs only when
    the answer was refused."""
    calls = []
    original = type(seq2seq_tiny.module).greedy_decode

    def spy(self, *a, **kw):
        calls.append(kw.get("draft"))
        return original(self, *a, **kw)

    text = "The animal didn't cross the street because it was tired"
    cases = [()] + [ablate(layer, range(seq2seq_tiny.config.n_heads), block="cross")
                    for layer in range(seq2seq_tiny.config.n_decoder_layers)]
    refused = 0
    for abl in cases:
        for task in TASKS:
            enc = seq2seq_tiny.encode_source(text, task=task)
            want = plain(seq2seq_tiny, enc.ids, seq2seq_tiny.step_limit(enc.ids), abl)
            monkeypatch.setattr(type(seq2seq_tiny.module), "greedy_decode", spy)
            calls.clear()
            run = greedy_run(seq2seq_tiny, text, task, edits=abl)
            monkeypatch.undo()
            assert [seq2seq_tiny.tokenizer.token_to_id(t) for t in run.output_tokens] == want[1:]
            assert [s.inputs for s in run.steps][-1] == [seq2seq_tiny.tokenizer.id_to_token(i) for i in want[:len(run.steps)]]
            if run.correct:
                assert calls == []  # one recorded pass, no loop
            else:
                refused += 1
                assert len(calls) == 1 and calls[0]  # the loop, from the agreed prefix
    assert refused > 0
