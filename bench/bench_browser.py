"""Browser benchmark of the Attention explorer (run by `make bench`).

Starts `streamlit run app.py`, warms the model and trace caches with one visit, then opens the page several
times in fresh headless Chromium contexts and measures, in the page's own clock:
- bytes the app sent over its WebSocket (the page's data; static JS/CSS counted separately),
- draw time: from the last WebSocket message to every Plotly chart on the page being drawn.
Targets (issue 3): at 512 tokens < 5 MB transferred and drawn within 3 s of the data arriving."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser_support import chromium_page, serve_app, wait_for_app  # noqa: E402

# Wrap WebSocket before the app's JS runs: timestamp and size every message.
INIT = """
(() => {
  window.__hl = {bytes: 0, n: 0, last: 0};
  const Orig = window.WebSocket;
  window.WebSocket = function(...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', (e) => {
      const d = e.data; const n = d.byteLength ?? d.size ?? d.length ?? 0;
      window.__hl.bytes += n; window.__hl.n += 1; window.__hl.last = performance.now();
    });
    return ws;
  };
  window.WebSocket.prototype = Orig.prototype;
  Object.assign(window.WebSocket, Orig);
})();
"""

DRAWN = """() => {
  const s = document.querySelector('[data-testid="stStatusWidget"]');
  if (s && /running/i.test(s.innerText)) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  if (!charts.length) return false;
  for (const c of charts) { if (!c.querySelector('.main-svg')) return false; }
  return true;
}"""

TEXTS = {
    "default (14 tokens)": "The animal didn't cross the street because it was tired",
    "512 tokens": " ".join(["the animal didn't cross the street because it was tired"] * 60),
}


def measure(base: str, text: str, repeats: int) -> dict:
    url = f"{base}/?{urlencode({'text': text, 'layer': 2, 'head': 5})}"
    with chromium_page() as page:  # warm-up visit fills the model and trace caches on the server
        page.goto(url)
        wait_for_app(page)
        page.wait_for_function(DRAWN, timeout=120_000)
    rows = []
    for _ in range(repeats):
        with chromium_page() as page:
            static: list[int] = []
            page.on("response", lambda r, acc=static: acc.append(int(r.headers.get("content-length", 0))))
            page.add_init_script(INIT)
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_function(DRAWN, timeout=120_000, polling=50)
            drawn_at = page.evaluate("performance.now()")
            wall = time.perf_counter() - t0
            page.wait_for_timeout(500)  # late messages (e.g. widget states) still count toward bytes
            hl = page.evaluate("window.__hl")
            rows.append({"ws_mb": hl["bytes"] / 1e6, "static_mb": sum(static) / 1e6, "messages": hl["n"],
                         "draw_s": max(0.0, (drawn_at - hl["last"]) / 1000) if hl["last"] <= drawn_at else 0.0,
                         "open_to_drawn_s": wall})
    med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
    return {k: med(k) for k in rows[0]}


def main(repeats: int = 3) -> str:
    lines = ["| Attention explorer | app data over WebSocket | static assets | data -> drawn | open -> drawn |",
             "|---|---|---|---|---|"]
    with serve_app() as base:
        for name, text in TEXTS.items():
            r = measure(base, text, repeats)
            lines.append(f"| {name} | {r['ws_mb']:.2f} MB | {r['static_mb']:.2f} MB | {r['draw_s']:.2f} s "
                         f"| {r['open_to_drawn_s']:.2f} s |")
    out = "\n".join(lines) + f"\n\nmedians of {repeats} fresh Chromium visits after a warm-up visit\n"
    print(out)
    return out


if __name__ == "__main__":
    res = main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    (Path(__file__).parent / "results_browser.md").write_text(res)
