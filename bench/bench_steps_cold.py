"""Benchmark (never run by pytest): two waits a lecturer met (issue 34), this checkout against a baseline commit, side
by side in headless Chromium, interleaved, with the load average:

1. the translator's step slider: the Encoder-decoder page on bergamot-en-pt with the alignment sentence (Korean,
   lecture mode), one server per checkout; each step (arrow key on the slider) timed until the row figure's title
   names the new step, the run has ended and two frames are drawn; steps 2-13 forwards, then back, per round;
2. the first SmolLM2 explorer page of a fresh server: start `python -m serve run app.py`, open
   `/?model=smollm2-135m` as soon as the port answers, time to the first drawn chart; a fresh server per try,
   the checkouts alternating. The dequantised-tensor cache (model/dequant_cache.py) is whatever the machine has:
   run the current checkout once first to have it, as a second lecture on the machine would.

The baseline is exported with `git archive` into a temporary folder that uses this checkout's virtual environment.

    .venv/bin/python bench/bench_steps_cold.py [--baseline 25e8eed] [--rounds 2] [--cold 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_support import chromium_browser, free_port, wait_for_app  # noqa: E402

ALIGNMENT = "The agreement on the European Economic Area was signed in August 1992."
IDLE = """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                  return !s || !/running/i.test(s.innerText); }"""


def baseline_tree(ref: str, into: Path) -> Path:
    """The baseline commit's files in `into`, with this checkout's virtual environment."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / ".venv").symlink_to(ROOT / ".venv")
    return into


@contextlib.contextmanager
def server(root: Path):
    """A fresh `python -m serve run app.py` of the checkout `root`; yields (base URL, seconds to the open port)."""
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(ROOT / ".venv/bin/python"), "-m", "serve", "run", str(root / "app.py"),
                             "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "HEADLIGHT_DEVICE": "cpu"})
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(base + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.1)
        yield base, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)


def step_times(browser, bases: list[str], rounds: int) -> list[list[float]]:
    pages = []
    for base in bases:
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        query = urlencode({"text": ALIGNMENT, "model": "bergamot-en-pt", "lang": "ko", "lecture": "1"})
        page.goto(f"{base}/seq2seq?{query}", wait_until="domcontentloaded")
        wait_for_app(page, 180_000)
        page.wait_for_function("() => document.querySelectorAll('[data-testid=stPlotlyChart] .main-svg').length >= 5",
                               timeout=180_000)
        pages.append(page)
    out: list[list[float]] = [[] for _ in bases]
    for r in range(rounds):
        for i in range(2, 14):
            step, key = (i, "ArrowRight") if r % 2 == 0 else (14 - i, "ArrowLeft")
            for k, page in enumerate(pages):
                page.locator('[data-testid="stSlider"] input[type="range"]').first.focus()
                t0 = time.perf_counter()
                page.keyboard.press(key)
                page.wait_for_function(f"""() => [...document.querySelectorAll('[data-testid=stPlotlyChart] .gtitle')]
                                           .some(t => t.textContent.startsWith('단계 {step}:'))""", timeout=60_000)
                page.wait_for_function(IDLE, timeout=60_000)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                out[k].append((time.perf_counter() - t0) * 1000)
    for page in pages:
        page.close()
    return out


def cold_times(browser, roots: list[Path], tries: int) -> list[list[float]]:
    query = urlencode({"model": "smollm2-135m", "lang": "ko", "lecture": "1",
                       "text": "The animal didn't cross the street because it was tired"})
    out: list[list[float]] = [[] for _ in roots]
    for r in range(tries):
        for k in (range(len(roots)) if r % 2 == 0 else reversed(range(len(roots)))):
            with server(roots[k]) as (base, _):
                ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(f"{base}/?{query}", wait_until="domcontentloaded", timeout=300_000)
                page.wait_for_function("""() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')]
                                          .some(c => c.querySelector('.main-svg'))""", timeout=300_000)
                out[k].append(time.perf_counter() - t0)
                ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="25e8eed")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cold", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        roots = [baseline_tree(args.baseline, Path(tmp)), ROOT]
        browser = chromium_browser(p)
        load0 = os.getloadavg()[0]
        with server(roots[0]) as (b0, _), server(roots[1]) as (b1, _):
            steps = step_times(browser, [b0, b1], args.rounds)
        cold = cold_times(browser, roots, args.cold)
        browser.close()
    print(f"| | baseline {args.baseline} | this checkout | ratio |\n|---|---|---|---|")
    print(f"| translator step (median of {len(steps[0])}) | {med(steps[0]):.0f} ms | {med(steps[1]):.0f} ms "
          f"| {med(steps[0]) / med(steps[1]):.2f} |")
    print(f"| first SmolLM2 explorer page, fresh server (median of {len(cold[0])}) | {med(cold[0]):.1f} s "
          f"| {med(cold[1]):.1f} s | {med(cold[0]) / med(cold[1]):.2f} |")
    print(f"\nload average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
