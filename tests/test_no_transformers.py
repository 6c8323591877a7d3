"""Standing rules, checked on the source: run-time code never imports
`transformers` (only tests/ and bench/ may), nothing unpickles, model/ and viz/
never import streamlit, and model/ never uses the fused attention kernel (it
returns no weights). Scans every tracked and untracked .py file with `ast`."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXEMPT_DIRS = {"tests", "bench"}
SKIP_DIRS = {".venv", ".git", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}


def python_files() -> list[Path]:
    """All .py files git knows or would add (tracked + untracked, not ignored); else a walk."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return sorted(p for p in files if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def runtime_files() -> list[Path]:
    return [p for p in python_files() if p.relative_to(ROOT).parts[0] not in EXEMPT_DIRS]


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names imported by `import x`, `from x import y`, `importlib.import_module("x")`, `__import__("x")`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if fname in ("import_module", "__import__", "find_spec"):
                names.add(node.args[0].value.split(".")[0])
    return names


def attribute_calls(tree: ast.AST) -> set[str]:
    """Dotted names used, e.g. 'torch.load', 'F.scaled_dot_product_attention'."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts, cur = [node.attr], node.value
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                parts.append(cur.id)
                out.add(".".join(reversed(parts)))
    return out


def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_scanner_sees_the_project():
    files = {p.relative_to(ROOT).as_posix() for p in python_files()}
    assert {"model/__init__.py", "model/loaded.py", "model/weights.py", "tests/test_no_transformers.py"} <= files
    assert not any(f.startswith(".venv/") for f in files)
    # the detector itself works
    tree = ast.parse("import transformers.models\nfrom transformers import BertModel\n"
                     "import importlib\nimportlib.import_module('transformers')\n")
    assert "transformers" in imported_modules(tree)
    assert "transformers" in imported_modules(ast.parse("from transformers.x import y"))
    assert "transformers" not in imported_modules(ast.parse("from .transformer import Transformer"))
    assert "torch.load" in attribute_calls(ast.parse("torch.load('x')"))


def test_runtime_code_never_imports_transformers():
    offenders = [p.relative_to(ROOT).as_posix() for p in runtime_files() if "transformers" in imported_modules(parse(p))]
    assert offenders == [], f"these run-time files import transformers: {offenders}"


def test_nothing_unpickles():
    offenders = []
    for p in runtime_files():
        tree = parse(p)
        if imported_modules(tree) & {"pickle", "dill", "cloudpickle", "joblib"}:
            offenders.append(f"{p.relative_to(ROOT)}: imports a pickle module")
        if attribute_calls(tree) & {"torch.load", "torch.serialization.load"}:
            offenders.append(f"{p.relative_to(ROOT)}: torch.load")
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not (
                    isinstance(node.value, ast.Constant) and node.value.value is False):
                offenders.append(f"{p.relative_to(ROOT)}:{node.value.lineno}: allow_pickle not False")
    assert offenders == []


def test_model_and_viz_never_import_streamlit():
    offenders = [p.relative_to(ROOT).as_posix() for p in runtime_files()
                 if p.relative_to(ROOT).parts[0] in ("model", "viz", "analysis") and "streamlit" in imported_modules(parse(p))]
    assert offenders == []


def test_model_never_uses_fused_attention():
    offenders = [p.relative_to(ROOT).as_posix() for p in runtime_files() if p.relative_to(ROOT).parts[0] == "model"
                 and any(name.endswith("scaled_dot_product_attention") and "functional" in name or
                         name == "F.scaled_dot_product_attention" for name in attribute_calls(parse(p)))]
    assert offenders == []


def test_loading_and_tracing_does_not_import_transformers_at_run_time():
    code = ("import sys, model; m = model.load_model('minilm-l6', 'cpu'); m.trace('I am good', intermediates=True); "
            "import analysis.masks as am; am.padded_run(m, ['a b', 'a']); bad = sorted(k for k in sys.modules if k.split('.')[0] == 'transformers'); "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr


def test_import_model_stays_light():
    code = ("import sys, model; heavy = sorted({k.split('.')[0] for k in sys.modules} & "
            "{'transformers', 'streamlit', 'matplotlib', 'plotly', 'pandas'}); print(heavy); assert not heavy, heavy")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- the architecture: who may import whom (README, "Architecture") ---------------------------------------------
FORBIDDEN = {  # package -> top-level modules it must never import
    "model": {"streamlit", "plotly", "ui", "viz", "analysis", "training", "app_pages", "serve"},
    "analysis": {"streamlit", "plotly", "ui", "viz", "app_pages", "serve"},
    "viz": {"streamlit", "torch", "ui", "app_pages", "training", "serve"},
    "training": {"streamlit", "plotly", "ui", "viz", "app_pages", "serve"},
    "ui": {"app_pages", "training", "torch", "serve"},  # torch runs in analysis/ and model/; serving is serve/'s
    "app_pages": {"torch", "serve", "training"},
    "serve": {"app_pages", "training"},
}




def _package_of(p: Path) -> str:
    return p.relative_to(ROOT).parts[0]


def test_packages_respect_the_import_rules():
    bad = []
    for p in runtime_files():
        pkg = _package_of(p)
        if pkg in FORBIDDEN:
            hit = imported_modules(parse(p)) & FORBIDDEN[pkg]
            if hit:
                bad.append(f"{p.relative_to(ROOT)} imports {sorted(hit)}")
    assert not bad, bad


def test_no_module_imports_a_private_name_of_another():
    bad = []
    for p in runtime_files():
        for node in ast.walk(parse(p)):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                for a in node.names:
                    if a.name.startswith("_"):
                        bad.append(f"{p.relative_to(ROOT)}: from {node.module} import {a.name}")
    assert not bad, bad


def test_pages_are_thin():
    pages = sorted((ROOT / "app_pages").glob("*.py"))
    assert pages, "no pages found"
    long = {p.name: n for p in pages if (n := len(p.read_text(encoding="utf-8").splitlines())) > 60}
    assert not long, f"pages over 60 lines: {long}"
