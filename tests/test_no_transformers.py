"""Run-time rules checked by running the code, and two source rules of the model's own: loading and tracing never
imports `transformers` (a subprocess), `import model` stays light, nothing unpickles, and model/ never uses the
fused attention kernel (it returns no weights). The static import rules (no `transformers` in run-time code, who may
import whom, no cycles, thin pages) are in tests/test_architecture.py."""

import ast
import subprocess
import sys

from source_support import ROOT, attribute_calls, imported_modules, parse, rel, runtime_files, top


def test_detectors_work():
    assert "torch.load" in attribute_calls(ast.parse("torch.load('x')"))
    assert "F.scaled_dot_product_attention" in attribute_calls(ast.parse("F.scaled_dot_product_attention(q, k, v)"))
    assert "pickle" in imported_modules(ast.parse("def f():\n    import pickle\n"))
    assert {rel(p) for p in runtime_files()} >= {"model/loaded.py", "model/weights.py"}


def test_nothing_unpickles():
    offenders = []
    for p in runtime_files():
        tree = parse(p)
        if imported_modules(tree) & {"pickle", "dill", "cloudpickle", "joblib"}:
            offenders.append(f"{rel(p)}: imports a pickle module")
        if attribute_calls(tree) & {"torch.load", "torch.serialization.load"}:
            offenders.append(f"{rel(p)}: torch.load")
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not (
                    isinstance(node.value, ast.Constant) and node.value.value is False):
                offenders.append(f"{rel(p)}:{node.value.lineno}: allow_pickle not False")
    assert offenders == []


def test_model_never_uses_fused_attention():
    offenders = [rel(p) for p in runtime_files() if top(p) == "model"
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
