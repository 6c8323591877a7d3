"""The Training page's speed targets (issue 36) in headless Chromium:

1. the recorded run's snapshot slider: with the slider focused, one ArrowRight (the next snapshot); the time from the
   keydown (the page's own clock, performance.now) to the moment the cross-attention figure's title names the new
   step and the run indicator is gone (target <= 0.3 s). The slider is in a fragment: only it reruns. Beside it,
   interleaved, the floor: the same move on bench/minimal_slider_app.py (a fragment, a slider, one small heatmap);
2. the live run: a click on Start (the server flag HEADLIGHT_LIVE_TRAINING=1) to the first snapshot's metric drawn
   ("0 / 400" or later; target <= 2 s), then Stop.

Each figure is the median of the moves (and the min / max); the load average is printed before and after, since the
machine is shared.

    .venv/bin/python bench/bench_training_page.py [MOVES] [--lecture] [--out bench/results_training.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_support import chromium_page, serve_app, wait_for_app  # noqa: E402

WS = """(() => { window.__msgs = []; const Orig = window.WebSocket;
  window.WebSocket = function(...a) { const ws = new Orig(...a);
    ws.addEventListener('message', () => window.__msgs.push(performance.now())); return ws; };
  window.WebSocket.prototype = Orig.prototype; Object.assign(window.WebSocket, Orig); })();"""
STAMP = """() => { window.__t0 = null;
  document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, {capture: true, once: true}); }"""
TITLE_SHOWS = """(step) => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  if (status && /running/i.test(status.innerText)) return false;
  const ok = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .gtitle')]
    .some(e => e.textContent.startsWith('Step ' + step + ':'));
  if (ok && window.__t1 == null) window.__t1 = performance.now();
  return ok; }"""


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def slider_moves(page, url: str, moves: int) -> list[tuple[float, float]]:
    """(keydown -> drawn, keydown -> the last WebSocket message before it was drawn) per move, in seconds: the
    second is the server's share (its fragment run and the messages), the rest the browser's."""
    page.goto(url, wait_until="domcontentloaded")
    wait_for_app(page)
    page.wait_for_function(TITLE_SHOWS, arg=0, timeout=120_000)
    handle = page.locator('[data-testid="stSlider"] input').first
    out = []
    for i in range(1, moves + 1):
        handle.focus()
        page.evaluate("() => { window.__t1 = null; }")
        page.evaluate(STAMP)
        page.keyboard.press("ArrowRight")
        page.wait_for_function(TITLE_SHOWS, arg=10 * i, timeout=60_000)
        out.append(tuple(x / 1000 for x in page.evaluate("""() => [window.__t1 - window.__t0,
            Math.max(0, ...window.__msgs.filter(m => m >= window.__t0 && m <= window.__t1)) - window.__t0]""")))
    return out


def live_first_update(page, base: str) -> float:
    page.goto(f"{base}/training?task=reverse", wait_until="domcontentloaded")
    wait_for_app(page)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("tab", name="6 · Live run").click()
    wait_for_app(page)
    page.evaluate("""() => { window.__c0 = null;
      document.addEventListener('pointerdown', () => { window.__c0 = performance.now(); }, {capture: true}); }""")
    main.get_by_role("button", name="Start training (Reverse)").click()
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
                              .some(e => /^\\d+ \\/ 400$/.test(e.textContent.trim()))""", timeout=60_000)
    took = page.evaluate("() => performance.now() - window.__c0") / 1000
    main.get_by_role("button", name="Stop").click()
    wait_for_app(page)
    return took


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("moves", nargs="?", type=int, default=10)
    p.add_argument("--lecture", action="store_true", help="lecture mode (projector-sized figures)")
    p.add_argument("--out", help="append the results to this markdown file")
    args = p.parse_args(argv)
    lines = [f"Before: {load()} ({os.cpu_count()} cores)"]
    query = {"task": "reverse", "snap": "0", **({"lecture": "1"} if args.lecture else {})}
    with serve_app(env={"HEADLIGHT_LIVE_TRAINING": "1"}) as base, \
            serve_app(app="bench/minimal_slider_app.py", door=False) as floor, chromium_page(1600, 1000) as page:
        page.context.add_init_script(WS)
        url = f"{base}/training?{urlencode(query)}"
        slider_moves(page, url, 2)  # warm: the recorded run read, the figures' code loaded
        slider_moves(page, floor, 2)
        moves, floors = [], []
        for _ in range(args.moves // 5):  # interleaved, five moves at a time
            moves += slider_moves(page, url, 5)
            floors += slider_moves(page, floor, 5)
        server = [m[1] for m in moves]
        moves, floors = [m[0] for m in moves], [m[0] for m in floors]
        lives = [live_first_update(page, base) for _ in range(3)]
    lines += [f"Snapshot slider, one step ({'lecture mode' if args.lecture else 'normal'}, {len(moves)} moves): median "
              f"{statistics.median(moves):.3f} s (min {min(moves):.3f}, max {max(moves):.3f}); target <= 0.3 s; "
              f"of which keydown -> the server's last message: median {statistics.median(server):.3f} s",
              f"The floor (bench/minimal_slider_app.py: a fragment, a slider, one small heatmap), side by side: median "
              f"{statistics.median(floors):.3f} s (min {min(floors):.3f}, max {max(floors):.3f}); ratio "
              f"{statistics.median(moves) / statistics.median(floors):.2f}",
              f"Live run, Start -> first snapshot drawn ({len(lives)} runs): median {statistics.median(lives):.2f} s "
              f"(min {min(lives):.2f}, max {max(lives):.2f}); target <= 2 s",
              f"After: {load()}"]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
