"""Reading the project's own source with `ast`, for the source rules (tests/test_architecture.py,
tests/test_no_transformers.py): which files there are, which modules each one imports (at any depth of the file:
inside functions too; relative imports resolved; `importlib.import_module("x")`, `__import__("x")` and
`find_spec("x")` with a literal name counted) and on which line."""

from __future__ import annotations

import ast
import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXEMPT_DIRS = {"tests", "bench"}  # not run-time code: they may import anything (transformers, streamlit)
SKIP_DIRS = {".venv", "venv", ".git", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}
DYNAMIC_IMPORTS = {"import_module", "__import__", "find_spec"}


def python_files() -> list[Path]:
    """All .py files git knows or would add (tracked + untracked, not ignored); else a walk."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return sorted(p for p in files if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def top(p: Path) -> str:
    """The file's top-level package ("model", "ui" ...) or, for a file at the root, its module name ("app")."""
    first = p.relative_to(ROOT).parts[0]
    return first[:-3] if first.endswith(".py") else first


def runtime_files() -> list[Path]:
    return [p for p in python_files() if p.relative_to(ROOT).parts[0] not in EXEMPT_DIRS]


def files_of(*packages: str) -> list[Path]:
    """The run-time files of these top-level packages (a package that does not exist yet gives nothing)."""
    return [p for p in runtime_files() if top(p) in packages]


@functools.cache
def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def module_name(p: Path) -> str:
    """"model/hf/load.py" -> "model.hf.load", "model/__init__.py" -> "model", "app.py" -> "app"."""
    parts = list(p.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # absolute dotted name as written or resolved ("torch.nn", "model.registry")
    names: tuple[str, ...] = ()  # `from module import names` (empty for `import module` and dynamic imports)

    @property
    def top(self) -> str:
        return self.module.split(".")[0]


def _package(p: Path) -> str:
    """The package a relative import in file p starts from."""
    name = module_name(p)
    return name if p.name == "__init__.py" else name.rpartition(".")[0]


def imports_in(tree: ast.AST, path: Path | None = None) -> list[Import]:
    """Every import in the tree, at any depth. Relative imports are resolved against `path` (unresolvable ones are
    kept with a leading '.')."""
    out: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(Import(node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if path is None:
                    base = "." * node.level + base
                else:
                    parts = _package(path).split(".") if _package(path) else []
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join([*parts, base] if base else parts)
            out.append(Import(node.lineno, base, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if fname in DYNAMIC_IMPORTS:
                out.append(Import(node.lineno, node.args[0].value))
    return out


def imports_of(p: Path) -> list[Import]:
    return imports_in(parse(p), p)


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names imported anywhere in the tree (absolute imports and literal dynamic imports)."""
    return {i.top for i in imports_in(tree) if not i.module.startswith(".")}


def offenders(files: list[Path], forbidden: set[str]) -> list[str]:
    """'file:line imports module' for each import of a top-level name in `forbidden`."""
    return [f"{rel(p)}:{i.line} imports {i.module}" for p in files for i in imports_of(p) if i.top in forbidden]


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


# ---- the project's module graph -----------------------------------------------------------------------------------
def project_modules(files: list[Path] | None = None) -> dict[str, Path]:
    """Dotted module name -> file, for every run-time file of the project (tests/ and bench/ left out)."""
    return {module_name(p): p for p in (runtime_files() if files is None else files)}


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lands in ("model.registry.load_model" -> "model.registry"), else None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_edges(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported project module: first line}, any import at any depth. `from pkg import sub` counts as an
    import of pkg.sub when sub is a module, else of pkg. A module's own package __init__ is not an edge (Python runs
    it anyway, before the module)."""
    edges: dict[str, dict[str, int]] = {m: {} for m in modules}
    for m, p in modules.items():
        for imp in imports_of(p):
            if imp.module.startswith("."):
                continue
            targets = {resolve(f"{imp.module}.{n}", modules) for n in imp.names} | {resolve(imp.module, modules)}
            for t in targets - {None, m}:
                if m.startswith(t + ".") and modules[t].name == "__init__.py":
                    continue
                edges[m].setdefault(t, imp.line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def describe_cycle(comp: list[str], edges: dict[str, dict[str, int]], modules: dict[str, Path]) -> str:
    """'a <-> b: a.py:12 imports b; b.py:3 imports a' for one strongly connected component."""
    inside = set(comp)
    where = [f"{rel(modules[a])}:{line} imports {b}" for a in comp for b, line in sorted(edges[a].items())
             if b in inside]
    return " <-> ".join(comp) + ": " + "; ".join(where)
