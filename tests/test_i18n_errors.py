"""Error messages in the user's language (issue 11: every error message exists in Korean and English).

Errors raised in model/ and analysis/ keep their English message (the CLI and the logs print it) and name it in
the catalogue (`key=` and its parameters, model/errors.py); i18n.error_message shows it in the session's language.
English exists once, at the raise site (issue 18): no English catalogue holds an error's text. Checked here: every
keyed raise site has its Korean message with exactly its parameters; every error a user can reach carries a key; the
English shown is the error's own message; the Korean text of real errors is Korean; and the app shows them in
Korean."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from apptest_support import assert_ok
from i18n_support import HANGUL, english_only
from streamlit.testing.v1 import AppTest

from i18n import catalogue, error_message
from i18n.catalog import placeholders
from model.errors import HeadlightError, InputError, WeightsError
from ui.pages import page_file

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("model/**/*.py"), *ROOT.glob("analysis/**/*.py"), *ROOT.glob("ui/**/*.py")])
ERRORS = {"HeadlightError", "InputError", "WeightsError", "BudgetError"}
# raise sites without a catalogue key: the command line only, or a programming error no user input reaches
UNKEYED = {("model/__main__.py", None), ("model/cli_cause.py", None), ("analysis/atlas.py", "unknown atlas format"),
           ("analysis/atlas.py", "probe battery is empty"), ("model/weights.py", "internal: "),
           ("model/tokenizer.py", "text must be a string")}
UI_KEYS = {"untranslated", "model_fallback", "lab_untrained", "lab_untrained_missing"}  # ui/ notices, through t()


def _raise_sites():
    """(file, line, error class, key or None, parameter names, source) of every `raise <project error>(...)`."""
    out = []
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = getattr(func, "id", None) or getattr(func, "attr", "")
                if name in ERRORS:
                    kws = {k.arg: k.value for k in node.exc.keywords if k.arg}
                    key = kws.pop("key").value if "key" in kws else None
                    out.append((rel, node.lineno, name, key, set(kws), ast.unparse(node.exc)))
    return out


def test_every_keyed_error_is_in_korean_with_its_parameters():
    sites = [s for s in _raise_sites() if s[3]]
    assert len(sites) >= 35
    cat = catalogue("ko")
    for rel, line, _, key, params, _ in sites:
        msg = cat.get(f"error.{key}")
        assert msg is not None, f"{rel}:{line}: error.{key} missing in Korean"
        assert placeholders(msg) == params, f"{rel}:{line}: error.{key} takes {placeholders(msg)}, " \
                                            f"the raise passes {params}"
    used = {s[3] for s in sites} | UI_KEYS
    defined = {k[len("error."):] for k in cat if k.startswith("error.") and not k.startswith("error.value.")}
    assert defined == used, {"unused": sorted(defined - used), "undefined": sorted(used - defined)}


def test_english_error_text_exists_once():
    """The English of a raised error is its own message: the English catalogue keeps only the ui/ notices."""
    en = {k[len("error."):] for k in catalogue("en") if k.startswith("error.")}
    assert en == UI_KEYS, sorted(en - UI_KEYS)
    english = json.loads((ROOT / "i18n" / "en.error.json").read_text(encoding="utf-8"))
    assert set(english) == {f"error.{k}" for k in UI_KEYS}


def test_errors_a_user_can_reach_carry_a_key():
    unkeyed = [(rel, line, src) for rel, line, _, key, _, src in _raise_sites() if key is None]
    left = [u for u in unkeyed if not any(rel == u[0] and (frag is None or frag in u[2]) for rel, frag in UNKEYED)]
    assert left == [], left


def _triggered(minilm, tmp_path):
    """Real errors, raised by the code a user's input reaches."""
    from analysis import flow, heads
    from analysis.cache import ByteBudgetCache
    from model import get_spec
    from model.device import resolve_device
    from model.seq2seq import check_task
    from model.weights import Checkpoint, verify_file

    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"not safetensors at all")
    calls = [
        lambda: minilm.trace("   "),
        lambda: heads.minimal_pair(minilm, "The cat sat", "", "cat", ["cat", "sat"]),
        lambda: heads.minimal_pair(minilm, "The cat sat", "The dog sat", "zebra", ["cat", "sat"]),
        lambda: heads.minimal_pair(minilm, "it is what it is", "it was what it was", "it", ["is", "what"]),
        lambda: heads.minimal_pair(minilm, "The cat sat", "The dog sat", 99, ["cat", "sat"]),
        lambda: heads.minimal_pair(minilm, "The cat sat", "The dog sat", "", ["cat", "sat"]),
        lambda: heads.minimal_pair(minilm, "The cat sat", "The dog sat", "sat", ["cat"]),
        lambda: heads.minimal_pair(minilm, "The cat sat", "The cat sat", "sat", ["cat", "cat"]),
        lambda: heads.heads_from_text("3.1,<b>x</b>"),
        lambda: heads.encoder_effect(minilm, "The cat sat", [(9, 9)]),
        lambda: heads.encoder_effect(minilm, "The cat sat", [("cross", 0, 0)]),
        lambda: heads.rank_heads_by_effect(minilm, "The cat sat", "melt"),
        lambda: heads.logit_lens(minilm, "The cat sat"),
        lambda: flow.attention_flow(np.full((1, 1, 4, 4), 0.25), 0, max_tokens=3),
        lambda: flow.attention_flow(np.full((1, 1, 4, 4), 0.25), 7),
        lambda: get_spec("gpt-17"),
        lambda: resolve_device("tpu"),
        lambda: check_task("sort"),
        lambda: verify_file(tmp_path / "nowhere.safetensors", "0" * 64, "make install"),
        lambda: verify_file(bad, "0" * 64, "make install"),
        lambda: Checkpoint([bad], fix="make install"),
        lambda: ByteBudgetCache(10).get_or_create("k", lambda: np.zeros(100)),
    ]
    out = []
    for call in calls:
        with pytest.raises(HeadlightError) as info:
            call()
        out.append(info.value)
    return out


def test_english_is_the_errors_own_message(minilm, tmp_path):
    errors = _triggered(minilm, tmp_path)
    keys = set()
    for exc in errors:
        assert exc.key, f"no key: {exc}"
        keys.add(exc.key)
        assert error_message(exc, "en") == str(exc)
        for value in exc.params.values():  # the raise site's parameters are in its one English message
            assert str(value) in str(exc), (exc.key, value, str(exc))
    assert len(keys) >= 18, sorted(keys)


def test_korean_errors_are_korean(minilm, tmp_path):
    for exc in _triggered(minilm, tmp_path):
        ko = error_message(exc, "ko")
        assert HANGUL.search(ko) and "{" not in ko, ko
        tokens = [str(v) for v in exc.params.values()]  # the user's words, tokens, paths and commands
        assert english_only([ko.replace("`", " ")], tokens) == [], ko
        assert ko != str(exc)


def test_fallbacks():
    plain = InputError("Something odd")  # no key: the English text after a Korean lead-in
    assert error_message(plain, "ko") == catalogue("ko")["error.untranslated"].format(msg="Something odd")
    assert error_message(plain, "en") == "Something odd"
    odd = WeightsError("Missing weight file: x. Fix: y", key="weights_missing", path="x")  # a parameter short
    assert "Missing weight file" in error_message(odd, "ko") and HANGUL.search(error_message(odd, "ko"))
    assert error_message(ValueError("plain"), "ko").endswith("plain")
    assert error_message(plain, "xx") == "Something odd"  # unknown language: English
    # values that are catalogue words are translated: the role of a token in a minimal pair
    role = InputError("Choose a query token: ...", key="choose_token", what="query token", sentence="A")
    assert "쿼리 토큰" in error_message(role, "ko")


def test_head_lab_input_errors_in_korean():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["lang"] = "ko"
    at.run()
    at.switch_page(page_file("heads")).run()
    at.text_input(key="hl_query").set_value("zebra").run()
    assert_ok(at)
    infos = [i.value for i in at.info]
    hit = [i for i in infos if "zebra" in i]
    assert hit and HANGUL.search(hit[0]) and "토큰" in hit[0], infos
    at.text_input(key="hl_b").set_value("").run()
    assert any("두 문장을 모두" in i.value for i in at.info), [i.value for i in at.info]


@pytest.fixture
def fresh_model_cache():
    """The app's model cache is per process: empty it so the app loads from the patched directory, and again after,
    so the next test loads the real weights."""
    from ui import store

    store._load_model.clear()
    store._LOADED.clear()
    yield
    store._load_model.clear()
    store._LOADED.clear()


def test_corrupt_weights_message_in_korean(tmp_path, monkeypatch, fresh_model_cache):
    """A broken MiniLM install, seen by a Korean user: the page says so in Korean and names the fix command."""
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setenv("HEADLIGHT_MINILM_DIR", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["lang"] = "ko"
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any(HANGUL.search(x) and "손상" in x and "pip install" in x for x in errors), errors
