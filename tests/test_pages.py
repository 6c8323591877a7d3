"""ui/pages.py, the one table of pages: it lists every script of app_pages/ once, says what each imports, and the
shell, the door, the preload, the tests and the benchmarks read it (no other file spells a page's path)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from i18n import LANGS, catalogue
from ui.pages import BY_NAME, DEFAULT, NAMES, PAGES, page_file, page_modules

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("ui", "viz", "analysis", "model", "serve")  # i18n is everywhere, and no page's own
# tests another helper owns, left as they were (they name a page's path themselves)
def imports_of(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT:
            pkg = node.module
            out |= {f"{pkg}.{a.name}" if f"{pkg}.{a.name}".replace(".", "/") in MODULE_FILES else pkg
                    for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] in PROJECT}
    return out


MODULE_FILES = {p.relative_to(ROOT).with_suffix("").as_posix() for d in PROJECT for p in (ROOT / d).rglob("*.py")}


def test_every_page_once_one_default():
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "app_pages").glob("*.py"))
    assert sorted(p.file for p in PAGES) == files
    assert len(set(NAMES)) == len(PAGES) and [p for p in PAGES if p.default] == [DEFAULT] == [PAGES[0]]
    assert page_file("steps") == "app_pages/steps.py" and BY_NAME["steps"].name == "steps"
    with pytest.raises(KeyError, match="the pages are explorer"):
        page_file("nowhere")


def test_titles_in_every_language():
    for lang in LANGS:
        cat = catalogue(lang)
        assert all(p.title_key in cat for p in PAGES), lang


@pytest.mark.parametrize("page", PAGES, ids=NAMES)
def test_the_table_says_what_each_page_imports(page):
    assert imports_of(ROOT / page.file) == set(page.imports)


def test_the_preload_imports_every_page_module_first():
    from serve import preload

    assert preload.MODULES[0] == "ui.shell" and set(page_modules()) <= set(preload.MODULES)


def test_the_door_knows_the_pages():
    from serve.door import redirect_target

    html = b"text/html"
    for name in NAMES:
        assert redirect_target(f"/{name}/extra", b"", html) == ("/" if name == DEFAULT.name else f"/{name}")


def test_no_other_file_spells_a_page_path():
    """A page's path appears as a string only in the table (docstrings and comments may name it)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    path = re.compile(r"app_pages/\w+\.py")
    bad = []
    for rel in out:
        if rel in ("ui/pages.py", "tests/test_pages.py") or not (ROOT / rel).is_file():
            continue
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and path.search(node.value):
                bad.append(f"{rel}:{node.lineno}: {node.value[:60]!r}")
    assert not bad, bad


def test_the_table_needs_no_streamlit():
    code = "import sys, ui.pages; assert 'streamlit' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
