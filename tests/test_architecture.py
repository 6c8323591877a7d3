"""The architecture rules (README, "Architecture"), checked statically on the source with `ast` (tests/source_support.py:
every import at any depth of a file, functions included, relative imports resolved): who may import whom, no import
cycles, no private names across modules, thin pages. Each rule is one test; a failure names the file and the line."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from source_support import (
    ROOT,
    cycles,
    describe_cycle,
    files_of,
    import_edges,
    imported_modules,
    imports_in,
    imports_of,
    module_name,
    offenders,
    parse,
    project_modules,
    python_files,
    rel,
    resolve,
    runtime_files,
    top,
)

from ui.pages import PAGES, page_file

STREAMLIT_PACKAGES = ("ui", "app_pages", "app", "serve")
MAX_PAGE_LINES = 60  # README: "each page is at most 60 lines"
MAX_MODULE_LINES = 450  # the developers' guide: "modules at most 450 lines"

# the layers above each package: what it must never import (streamlit, plotly, torch and transformers: rules below)
LAYERS = {
    "analysis": {"ui", "viz", "app_pages", "app", "serve", "classroom"},
    "viz": {"ui", "app_pages", "app", "serve", "training", "classroom"},
    "training": {"plotly", "ui", "viz", "analysis", "app_pages", "app", "serve", "classroom"},
    "ui": {"app_pages", "app", "training", "serve"},  # serving is serve/'s; serve/ may import ui/, not the reverse
    "app_pages": {"training", "serve", "classroom"},  # the class store through ui/ only
    "model": {"classroom"},
    "i18n": {"classroom"},
}
# classroom/ (the class's shared store): the standard library, sqlite3 and psycopg only
CLASSROOM_MAY_IMPORT = {"__future__", "collections", "dataclasses", "fcntl", "hashlib", "hmac", "json", "logging", "os",
                        "pathlib", "psycopg", "random", "re", "secrets", "sqlite3", "threading", "time", "typing",
                        "unicodedata"}


def graph_modules() -> dict[str, Path]:
    """Every module of the project outside tests/ (bench/ included: its scripts are part of the project)."""
    return project_modules([p for p in python_files() if p.relative_to(ROOT).parts[0] != "tests"])


# ---- the scanner itself ----------------------------------------------------------------------------------------------
def test_scanner_sees_the_project_and_every_kind_of_import():
    files = {rel(p) for p in python_files()}
    assert {"app.py", "model/__init__.py", "model/registry.py", "ui/shell.py", "viz/__init__.py",
            "analysis/__init__.py", page_file("explorer"), "tests/test_architecture.py"} <= files
    assert not any(f.startswith((".venv/", ".git/")) for f in files)
    assert not any(top(p) in ("tests", "bench") for p in runtime_files())
    src = textwrap.dedent("""
        import transformers.models
        from transformers import BertModel
        import importlib
        def f():
            import torch
            importlib.import_module('plotly.express')
            __import__('streamlit')
        from .transformer import Transformer
    """)
    found = {(i.line, i.module) for i in imports_in(ast.parse(src), ROOT / "model" / "x.py")}
    assert found == {(2, "transformers.models"), (3, "transformers"), (4, "importlib"), (6, "torch"),
                     (7, "plotly.express"), (8, "streamlit"), (9, "model.transformer")}
    assert imported_modules(ast.parse("from .transformer import Transformer")) == set()
    # relative imports two levels up resolve from the file's package
    assert [i.module for i in imports_in(ast.parse("from ..registry import get_spec"), ROOT / "model/hf/load.py")] \
        == ["model.registry"]
    assert module_name(ROOT / "model" / "hf" / "__init__.py") == "model.hf"
    mods = graph_modules()
    assert resolve("model.registry.load_model", mods) == "model.registry" and resolve("numpy", mods) is None
    # the cycle finder finds a cycle through a function-level import, and only cycles
    edges = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b": 1}, "b": {}}) == []


# ---- transformers ------------------------------------------------------------------------------------------------
def test_runtime_code_never_imports_transformers():
    """The reference implementation is for the tests (parity) and the benchmarks only."""
    bad = offenders(runtime_files(), {"transformers"})
    assert bad == [], "run-time code imports transformers (only tests/ and bench/ may):\n" + "\n".join(bad)


# ---- streamlit, plotly, torch --------------------------------------------------------------------------------------
def test_model_and_analysis_never_import_streamlit_or_plotly():
    files = files_of("model", "analysis")
    assert len(files) > 10
    bad = offenders(files, {"streamlit", "plotly"})
    assert bad == [], "model/ and analysis/ compute; they never draw:\n" + "\n".join(bad)


def test_viz_never_imports_streamlit_or_torch():
    files = files_of("viz")
    assert files
    bad = offenders(files, {"streamlit", "torch"})
    assert bad == [], "viz/ turns arrays into figures, without the app or the model:\n" + "\n".join(bad)


def test_only_the_interface_imports_streamlit():
    """Only ui/, app_pages/, app.py and serve/ (when it exists) import streamlit (tests/ and bench/ may)."""
    others = [p for p in runtime_files() if top(p) not in STREAMLIT_PACKAGES]
    assert {"model", "analysis", "viz", "i18n", "training"} <= {top(p) for p in others}
    bad = offenders(others, {"streamlit"})
    assert bad == [], f"only {', '.join(STREAMLIT_PACKAGES)} may import streamlit:\n" + "\n".join(bad)
    assert offenders(files_of("app_pages"), {"streamlit"}), "the scanner sees the pages' own streamlit imports"


def test_ui_never_imports_torch():
    """The interface reads results (analysis/), never tensors: torch runs in analysis/ and model/."""
    files = files_of("ui")
    assert len(files) > 10
    bad = offenders(files, {"torch"})
    assert bad == [], "ui/ imports torch:\n" + "\n".join(bad)


# ---- the layers ---------------------------------------------------------------------------------------------------
def test_model_imports_nothing_of_the_project_outside_model():
    """model/ is the bottom layer: it runs on its own (the CLI, the parity tests), with no other package of ours."""
    mods = graph_modules()
    files = files_of("model")
    assert len(files) > 10
    bad = []
    for p in files:
        for imp in imports_of(p):
            target = resolve(imp.module, mods) or next(
                (t for n in imp.names if (t := resolve(f"{imp.module}.{n}", mods))), None)
            if imp.module.startswith(".") or (target and target.split(".")[0] != "model"):
                bad.append(f"{rel(p)}:{imp.line} imports {imp.module}")
    assert bad == [], "model/ imports the project outside model/:\n" + "\n".join(bad)


def test_classroom_is_pure_python_and_imports_nothing_of_ours():
    """classroom/ (the class store) is shared by the door and the Class page: the standard library, sqlite3 and
    psycopg only (no Streamlit, torch, numpy or plotly), and no package of the project outside classroom/."""
    files = files_of("classroom")
    assert {"classroom/__init__.py", "classroom/store.py"} <= {rel(p) for p in files}
    mods = graph_modules()
    bad = []
    for p in files:
        for imp in imports_of(p):
            target = resolve(imp.module, mods) or next(
                (t for n in imp.names if (t := resolve(f"{imp.module}.{n}", mods))), None)
            if target and target.split(".")[0] == "classroom":
                continue
            if imp.module.startswith(".") or target or imp.top not in CLASSROOM_MAY_IMPORT:
                bad.append(f"{rel(p)}:{imp.line} imports {imp.module}")
    assert bad == [], "classroom/ imports more than the standard library, sqlite3 and psycopg:\n" + "\n".join(bad)


def test_packages_respect_the_layers():
    """analysis/ never imports ui, viz or pages; viz/ never ui, pages or training; training/ never plotly, ui, viz,
    analysis or pages; ui/ never pages, training or serve (serve/ starts the app and may import ui/); only serve/ and ui/ import
    classroom/ (model/, analysis/, viz/, i18n/, training/ and the pages never do)."""
    bad = [line for pkg, forbidden in LAYERS.items() for line in offenders(files_of(pkg), forbidden)]
    assert bad == [], "\n".join(bad)


def test_only_analysis_imports_training_at_run_time():
    """training/ is seq2seq-tiny's training and the Training page's lab (its model, training loop and recorded runs).
    At run time only analysis/ reads it (analysis/training.py, analysis/training_live.py); the interface reaches it
    through analysis/, and training/ itself imports model/ only (no Streamlit, plotly, analysis, ui or viz)."""
    others = [p for p in runtime_files() if top(p) not in ("training", "analysis")]
    assert {"ui", "viz", "app_pages", "serve", "model"} <= {top(p) for p in others}
    bad = offenders(others, {"training"})
    assert bad == [], "only analysis/ imports training/ at run time:\n" + "\n".join(bad)
    assert offenders(files_of("analysis"), {"training"}), "the scanner sees analysis/ reading the lab"
    bad = offenders(files_of("training"), {"streamlit", "plotly", "analysis", "ui", "viz"})
    assert bad == [], "\n".join(bad)


# ---- import cycles ------------------------------------------------------------------------------------------------
def _cycles():
    mods = graph_modules()
    edges = import_edges(mods)
    return mods, edges, cycles(edges)


def test_no_two_modules_import_each_other():
    """No import cycle among the project's modules (imports inside functions count)."""
    mods, edges, found = _cycles()
    assert len(mods) > 50 and sum(map(len, edges.values())) > 100  # the graph is the project's
    new = [describe_cycle(c, edges, mods) for c in found]
    assert new == [], "import cycles:\n" + "\n".join(new)


# ---- private names -------------------------------------------------------------------------------------------------
def test_no_module_imports_a_private_name_of_another():
    bad = []
    for p in runtime_files():
        for node in ast.walk(parse(p)):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                bad += [f"{rel(p)}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {a.name}"
                        for a in node.names if a.name.startswith("_")]
    assert bad == [], "private names imported across modules:\n" + "\n".join(bad)


# ---- size ----------------------------------------------------------------------------------------------------------
def test_no_module_is_longer_than_450_lines():
    """Every run-time module (tests/ and bench/ aside) is at most 450 lines: a longer one is split by responsibility."""
    files = runtime_files()
    assert len(files) > 100 and any(rel(p) == "ui/tour.py" for p in files)
    long = [f"{rel(p)}: {n} lines (at most {MAX_MODULE_LINES})" for p in files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert long == [], "\n".join(long)


# ---- pages ---------------------------------------------------------------------------------------------------------
def test_pages_are_thin():
    """Each page in app_pages/ is at most 60 lines: the sections live in ui/, the numbers in analysis/."""
    pages = sorted((ROOT / "app_pages").glob("*.py"))
    assert len(pages) == len(PAGES) >= 10, "the ten pages"
    long = [f"{rel(p)}:{n}: {n} lines (at most {MAX_PAGE_LINES})" for p in pages
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGE_LINES]
    assert long == [], "\n".join(long)


# the ui/ modules a page script imports that are not that page's own: the shell and its state, the model store and
# the runs, the widgets, and the sections drawn by more than one page (the generation replay over the KV cache: the
# Head lab's Generation tab and the tour's step 15)
SHARED_UI = {"ui.shell", "ui.state", "ui.store", "ui.runs", "ui.widgets", "ui.generation"}


def page_own_modules() -> dict[str, set[str]]:
    """Page name -> the ui/ modules its script imports as its own (ui/pages.py `imports`, the shared ones aside)."""
    return {p.name: {m for m in p.imports if m.startswith("ui.")} - SHARED_UI for p in PAGES}


def test_pages_do_not_import_each_other():
    """A page's own modules never reach another page's own modules, directly or through any module between them
    (the deck page's ui/present.py importing ui/tour.py counts): what two pages share lives in a shared module."""
    own = page_own_modules()
    owner = {m: name for name, mods in own.items() for m in mods}
    assert len(owner) == sum(map(len, own.values())) >= 12, "a module is the own module of two pages"
    assert {"ui.tour", "ui.deck", "ui.heads", "ui.seq2seq", "ui.explorer", "ui.cause"} <= set(owner)
    mods = graph_modules()
    edges = import_edges(mods)
    bad = []
    for name, start in own.items():
        came_from = {m: None for m in start}
        todo = sorted(start)
        while todo:
            m = todo.pop()
            for dep in edges[m]:
                if dep.startswith("ui.") and dep not in came_from:
                    came_from[dep] = m
                    todo.append(dep)
        for dep in sorted(came_from):
            if owner.get(dep, name) != name:
                chain, cur = [dep], came_from[dep]
                while cur is not None:
                    chain.append(cur)
                    cur = came_from[cur]
                bad.append(f"page {name}: {' -> '.join(reversed(chain))} (page {owner[dep]}'s)")
    assert bad == [], "pages importing other pages' modules:\n" + "\n".join(bad)
