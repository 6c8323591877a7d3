"""Start the real app (`streamlit run app.py`) on 127.0.0.1 with a free port and
drive Debian's headless Chromium through Playwright (browser downloads do not
work here, so `executable_path="/usr/bin/chromium"`). Used by the browser test,
the screenshot script and the app benchmark."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("HEADLIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]


def browser_available() -> str | None:
    """None when the browser test can run, else the reason it cannot."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"{CHROMIUM} not found (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (make dev)"
    return None


def require_browser() -> None:
    """Skip (locally) or fail (under CI) when the browser cannot run."""
    reason = browser_available()
    if reason:
        from ci_support import skip_or_fail

        skip_or_fail(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(timeout: float = 90.0, env: dict | None = None, app: str = "app.py", door: bool = True):
    """Yield the base URL of a running `streamlit run app.py` (or another script under the root), started through
    the app's door (`python -m serve run`, serve/door.py) as `make run` does, or by plain Streamlit (door=False: a
    floor to compare with); stop it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "serve" if door else "streamlit", "run", str(ROOT / app), "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "HEADLIGHT_DEVICE": "cpu", **(env or {})})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{out[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("streamlit did not become healthy in time")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def chromium_browser(playwright):
    """Debian's headless Chromium launched from a running `sync_playwright()`; each `browser.new_context()` of it
    is a fresh profile (own HTTP cache and cookies), cheaper than launching the browser again."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


SEEN_S = 30  # how long a web-first assertion waits for the page to reach what it asserts


def seen(locator):
    """Playwright's web-first assertion on `locator`, waiting up to SEEN_S: `seen(x).to_be_visible()`. A bare
    `assert x.is_visible()` reads the page once, and under load can read it before Streamlit's run has drawn it."""
    from playwright.sync_api import expect

    return expect(locator)


_SHARED: dict = {}  # the test module's one Playwright driver and Chromium (shared_browser)


def shared_browser():
    """The test module's one headless Chromium, launched on first use; tests/conftest.py closes it when the module
    ends (`close_shared`). Each test takes a fresh profile of it (`browser.new_context()`: its own cache, cookies and
    storage), which is what a first visit needs. Launching Playwright's driver and Chromium for every test took
    0.9 s against 0.35 s for a new profile (2026-11-27). Not kept across modules: a running Playwright holds the
    thread's asyncio loop, and `asyncio.run` in a later module (tests/test_door.py) would fail."""
    browser = _SHARED.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    import atexit

    from playwright.sync_api import sync_playwright

    if "playwright" not in _SHARED:
        _SHARED["playwright"] = sync_playwright().start()
        atexit.register(close_shared)  # a script (bench/) that never calls close_shared
    playwright = _SHARED["playwright"]
    _SHARED["browser"] = browser = chromium_browser(playwright)
    return browser


def close_shared() -> None:
    for key in [k for k in _SHARED if isinstance(k, tuple)]:  # the warm pages (warm_page): their browser closes them
        _SHARED.pop(key)
    browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    with contextlib.suppress(Exception):
        if browser is not None:
            browser.close()
        if playwright is not None:
            playwright.stop()


@contextlib.contextmanager
def chromium_context(**options):
    """A fresh profile of the shared Chromium (shared_browser), closed afterwards."""
    context = shared_browser().new_context(**options)
    try:
        yield context
    finally:
        with contextlib.suppress(Exception):
            context.close()


@contextlib.contextmanager
def chromium_page(width: int = 1600, height: int = 1000, fresh: bool = False):
    """A page at width x height: the module's one page of that size (warm_page), or with `fresh` a page of a fresh
    profile (chromium_context), for what a first visit must show or what listens to the page's events."""
    if not fresh:
        yield warm_page(width, height)
        return
    with chromium_context(viewport={"width": width, "height": height}, device_scale_factor=1) as context:
        yield context.new_page()


def warm_page(width: int, height: int):
    """The test module's one page of width x height (its own profile, launched on first use, closed with the
    module's Chromium): each test navigates it to the link it tests, as a student opens one link after another in
    one tab. A fresh profile per test cost Chromium ~4.5 s of CPU a page (Streamlit's and plotly's scripts compiled
    again in a new renderer) against ~2 s for the next link in a tab already open (2026-11-27), and the browser
    tests' Chromium took ~490 of the suite's ~1,300 CPU seconds. A test leaves no listener or route on it."""
    page = _SHARED.get(("page", width, height))
    if page is None or page.is_closed():
        context = shared_browser().new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        _SHARED[("page", width, height)] = page = context.new_page()
    return page


def wait_for_app(page, timeout_ms: int = 90_000) -> None:
    """Wait until Streamlit has finished running the script (no 'running' indicator) and something is drawn."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                   return !s || !/running/i.test(s.innerText); }""", timeout=timeout_ms)
    page.wait_for_selector('[data-testid="stMain"] [data-testid="stVerticalBlock"]', timeout=timeout_ms)
