"""Issue 35, item 2: what a model can do is declared (model/abilities.py), on its registry spec and on the loaded
model; the app side asks the record or the registry (models_with), never a model's name or hasattr/getattr."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from model import REGISTRY, get_spec, models_with
from model.abilities import KINDS, Abilities, Translation, of_config
from model.blocks import BLOCKS
from model.config import PRESETS
from model.loaded import LoadedModel
from model.registry import readers
from model.tokenizer import Encoded
from model.words import unknown_ids, unknown_words, words

ROOT = Path(__file__).resolve().parent.parent
APP_SIDE = ("ui", "serve", "app_pages", "analysis", "viz")
BUILT_IN = [n for n in REGISTRY if REGISTRY[n].path is None]
LATIN, HANGUL = "Latin", "Hangul"
XLMR = (LATIN, HANGUL, "Han", "Hiragana", "Katakana", "Cyrillic", "Greek", "Arabic", "Hebrew", "Thai", "Devanagari",
        "Bengali", "Tamil", "Telugu", "Georgian", "Armenian")

# what each shipped model is declared to do
DECLARED = {
    "minilm-l6": Abilities("encoder", reads=(LATIN,)),
    "multilingual-e5-small": Abilities("encoder", reads=XLMR),
    "smollm2-135m": Abilities("decoder", reads=(LATIN,)),
    "paper-base": Abilities("encoder-decoder", reads=(LATIN,)),
    "seq2seq-tiny": Abilities("encoder-decoder", reads=(LATIN, HANGUL), tasks=("copy", "reverse", "swap"),
                              names_unknown=True),
    "bergamot-en-pt": Abilities("encoder-decoder", reads=(LATIN,), shortlist=True, translation=Translation("en", "pt"),
                                names_unknown=True),
    "bergamot-pt-en": Abilities("encoder-decoder", reads=(LATIN,), shortlist=True, translation=Translation("pt", "en"),
                                names_unknown=True),
}


# ---- the app side: no model names, no probes --------------------------------------------------------------------------
def _app_files() -> list[Path]:
    return sorted(p for d in APP_SIDE for p in (ROOT / d).rglob("*.py"))


def hard_coded_names() -> list[str]:
    """Every string literal in ui/, serve/, app_pages/, analysis/, viz/ that is exactly a built-in model's name."""
    names = set(BUILT_IN)
    out = []
    for path in _app_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                out.append((str(path.relative_to(ROOT)), node.lineno, node.col_offset, repr(node.value)))
    return [f"{p}:{line} {v}" for p, line, _, v in sorted(out)]


# a probe's first argument is a model (a loaded model, the view's model, a model the page loads), or it asks for one
# of a loaded model's attributes or abilities by name
MODEL_EXPR = re.compile(r"(^|\.)(model|loaded|m)$|_loaded\(|get_model\(|\bload_model\(")
MODEL_ATTRS = ({a for cls in LoadedModel.__subclasses__() for a in dir(cls)} | set(dir(LoadedModel))
               | {"tasks", "allowed_tokens", "trace_many", "unknown_words", "source_lang", "target_lang", "shortlist",
                  "direction", "alignment", "translate"})
MODEL_ATTRS = {a for a in MODEL_ATTRS if not a.startswith("_")}


def model_probes() -> list[str]:
    """Every hasattr(...) / getattr(...) in ui/, serve/, app_pages/, analysis/, viz/ on a model, or asking for a
    model's attribute by name."""
    out = []
    for path in _app_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("hasattr", "getattr") and len(node.args) >= 2):
                continue
            obj, attr = node.args[0], node.args[1]
            on_model = bool(MODEL_EXPR.search(ast.unparse(obj)))
            asks = isinstance(attr, ast.Constant) and attr.value in MODEL_ATTRS
            if on_model or asks:
                out.append((str(path.relative_to(ROOT)), node.lineno, node.col_offset, ast.unparse(node)))
    return [f"{p}:{line} {v}" for p, line, _, v in sorted(out)]


def test_the_app_side_names_no_model():
    """Issue 35's target: at most 2 model names in ui/, serve/, app_pages/, analysis/, viz/ (there were 12): every
    fallback, preset and default there is asked of the registry."""
    found = hard_coded_names()
    assert len(found) <= 2, "\n".join(found)
    assert found == [], "\n".join(found)  # today: none (the sidebar's default is model.DEFAULT_MODEL)


def test_the_app_side_never_probes_a_model():
    """Issue 35's target: no hasattr / getattr on a model there (there were 12 and more): it asks .abilities."""
    found = model_probes()
    assert found == [], "\n".join(found)


def test_the_counters_see_what_they_count(tmp_path, monkeypatch):
    """The two counters find a name and each kind of probe in a file written for them (so a 0 above means none)."""
    for d in APP_SIDE:
        (tmp_path / d).mkdir()
    (tmp_path / "ui" / "x.py").write_text(
        'A = "seq2seq-tiny"\nB = ("bergamot-en-pt", "other")\n"""minilm-l6 in a docstring is text"""\n'
        'def f(model, view, loaded, st):\n'
        '    hasattr(model, "tasks"); getattr(view.model, "config", None); callable(getattr(loaded, "x", None))\n'
        '    getattr(st, "info"); getattr(thing, "allowed_tokens", None)\n', encoding="utf-8")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert hard_coded_names() == ["ui/x.py:1 'seq2seq-tiny'", "ui/x.py:2 'bergamot-en-pt'"]
    assert [p.split(" ", 1)[0] for p in model_probes()] == ["ui/x.py:5"] * 3 + ["ui/x.py:6"]
    assert len(model_probes()) == 4


# ---- the record, declared for every shipped model ---------------------------------------------------------------------
def test_every_shipped_model_declares_its_abilities():
    assert BUILT_IN == list(DECLARED)
    for name, want in DECLARED.items():
        spec = get_spec(name)
        assert spec.abilities == want, name
        assert spec.kind == want.kind and spec.scripts == want.reads


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_declared_kind_is_its_configs(name):
    """The kind a spec declares is the kind its config builds (read without weights: a preset, a GGUF header, the
    Marian file's)."""
    config = get_spec(name).read_config()
    assert config is not None, name
    assert config.kind == DECLARED[name].kind


def test_what_follows_from_the_kind():
    got = {n: (a.next_token, a.generation, a.batches) for n, a in DECLARED.items()}
    assert got == {"minilm-l6": (False, False, True), "multilingual-e5-small": (False, False, True),
                   "smollm2-135m": (True, True, False), "paper-base": (False, True, False),
                   "seq2seq-tiny": (False, True, False), "bergamot-en-pt": (False, True, False),
                   "bergamot-pt-en": (False, True, False)}
    assert KINDS == ("encoder", "decoder", "encoder-decoder")
    with pytest.raises(ValueError, match="unknown kind 'decoder-only'"):
        Abilities("decoder-only")
    with pytest.raises(dataclasses.FrozenInstanceError):
        DECLARED["minilm-l6"].kind = "decoder"


def test_has():
    a = DECLARED["seq2seq-tiny"]
    assert a.has(kind="encoder-decoder", reads="Hangul", tasks=True, translation=False, shortlist=None)
    assert a.has(reads=(LATIN, HANGUL)) and not a.has(reads=(LATIN, "Han")) and not a.has(reads=())
    assert not a.has(tasks=False) and not a.has(kind="encoder")
    with pytest.raises(TypeError, match="unknown ability 'task'"):
        a.has(task=True)


def test_of_config():
    """A loaded model's kind is its config's: the declaration with that kind, or the kind alone (no declaration)."""
    assert of_config(PRESETS["paper-base"]) == Abilities("encoder-decoder")
    assert of_config(PRESETS["seq2seq-tiny"], DECLARED["seq2seq-tiny"]) is DECLARED["seq2seq-tiny"]
    assert of_config(PRESETS["minilm-l6"], DECLARED["seq2seq-tiny"]) == dataclasses.replace(
        DECLARED["seq2seq-tiny"], kind="encoder")


def test_models_with():
    assert models_with(tasks=True) == ["seq2seq-tiny"]
    assert models_with(translation=True) == models_with(shortlist=True) == ["bergamot-en-pt", "bergamot-pt-en"]
    assert models_with(next_token=True) == models_with(kind="decoder") == ["smollm2-135m"]
    assert models_with(kind="encoder", reads=(LATIN, HANGUL)) == ["multilingual-e5-small"]
    assert models_with(kind="encoder-decoder", trained=False) == ["paper-base"]
    assert models_with(["bergamot-pt-en", "nope", "minilm-l6"], reads="Latin") == ["bergamot-pt-en", "minilm-l6"]
    assert models_with(reads="Hangul") == ["multilingual-e5-small", "seq2seq-tiny"]
    assert readers(["Hangul", "Hangul"]) == ["multilingual-e5-small", "seq2seq-tiny"] and readers([]) == []


def test_the_app_sides_choices_are_the_registrys():
    """What the pages fall back to, offer and preload, asked of the registry, are the models they named before."""
    from serve import preload
    from ui import generation, handout, readable, runs, store, tour_decoder
    from ui import seq2seq as s2s
    from ui.class_room import NEXT_MODEL

    assert (s2s.MODEL, s2s.TRANSLATORS) == ("seq2seq-tiny", ("bergamot-en-pt", "bergamot-pt-en"))
    assert tour_decoder.FALLBACK == handout.DECODER_MODEL == runs.TASK_MODEL == NEXT_MODEL == "seq2seq-tiny"
    assert store.LAB_ENCODER_DECODERS == ("seq2seq-tiny", "paper-base")
    assert readable.MULTILINGUAL == "multilingual-e5-small" and generation.LANGUAGE_MODEL == "smollm2-135m"
    assert preload.default_models() == store.FIRST_MODELS == ("minilm-l6", "seq2seq-tiny")


def test_blocks():
    from model import trace

    assert BLOCKS == ("encoder", "decoder_self", "cross") and trace.BLOCKS is BLOCKS


# ---- on a loaded model ------------------------------------------------------------------------------------------------
def test_a_loaded_model_carries_its_specs_abilities(minilm, paper_base, seq2seq_tiny, bergamot_en_pt):
    for m in (minilm, paper_base, seq2seq_tiny, bergamot_en_pt):
        assert m.abilities == DECLARED[m.name], m.name
        assert m.kind == m.config.kind == DECLARED[m.name].kind


def test_unknown_words_written_once(minilm, seq2seq_tiny, bergamot_en_pt, bergamot_pt_en):
    """A model declared to name its unknown words names them (as typed, in order); any other names none (its
    readability comes from its trace)."""
    assert seq2seq_tiny.unknown_words("I saw 🙂 in Αθήνα today") == ["🙂", "Αθήνα"]
    # SentencePiece writes an unknown piece as its text ("고양이"), with <unk>'s id: the whole word, "." included
    assert bergamot_en_pt.unknown_words("The cat 고양이 sat on 매트.") == ["고양이", "매트."]
    assert unknown_ids(bergamot_en_pt.tokenizer) == {1} and unknown_ids(seq2seq_tiny.tokenizer) == {
        seq2seq_tiny.tokenizer.token_to_id("<unk>")}
    assert bergamot_pt_en.unknown_words("O gato dormiu") == []
    assert minilm.unknown_words("그 동물은") == []  # MiniLM's words come from readability(trace), not from here


def test_words():
    """The grouping of pieces into words, by hand: specials and pieces of no word left out, a word's span over
    its pieces with a span (stripped), its pieces joined when none has one."""
    text = "ab cd! ef"
    enc = Encoded(tokens=["[CLS]", "ab", "▁c", "<unk>", "!", "e", "f", "[SEP]"],
                  ids=[0] * 8, offsets=[(0, 0), (0, 2), (2, 4), (4, 5), (5, 6), (0, 0), (0, 0), (0, 0)],
                  special=[True, False, False, False, False, False, False, True], type_ids=[0] * 8,
                  word_ids=[-1, 0, 1, 1, 2, 3, 3, -1], truncated=False, n_tokens_untruncated=8)
    assert words(text, enc.tokens, enc.word_ids, enc.offsets, enc.special) == [
        ("ab", [1]), ("cd", [2, 3]), ("!", [4]), ("ef", [5, 6])]
    assert unknown_words(text, enc, ()) == ["cd"]  # by its token
    assert unknown_words(text, enc, {0}) == ["ab", "cd", "!", "ef"]  # by id: every piece here has id 0
    assert words(text, enc.tokens, enc.word_ids, [], enc.special)[1] == ("▁c<unk>", [2, 3])
