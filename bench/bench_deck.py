"""Present mode's Next, in headless Chromium (issue 34: "next slide in present mode: 1.6-3.6 s"), side by side.

Starts two apps, this tree's and a baseline's (another checkout, e.g. `git archive <commit> | tar -x -C DIR`), each
through the door as `make run` does, on one Chromium at 1600 x 1000. In each, the example deck (in `--lang`) is
loaded and presented once through on a fresh server (the first pass: every slide computed once, as in a lecture),
then ROUNDS times through, alternating the two apps round by round. Each Next is timed on the script's clock from
the key press (→) to the slide drawn: the URL's `slide` is the next one, the bar says so, its page's title is shown,
a run has finished since the press, no run is going, nothing is stale and every Plotly chart has drawn its SVG
(`.main-svg`). Reported: per transition, the first pass and the median of the later ones, per app, with the load
average before and after (the machine is shared); then where the time goes: the server process's CPU time
(/proc/<pid>/stat), the page's main thread busy time (Chromium's TaskDuration), and, from bench/bench_browser.py's
WebSocket stamps in the page's clock, key press -> the last run's script_finished (the Next callback's run, which
switches the page, then the slide's page) and from there to the slide drawn, with the bytes received and the main
thread's long tasks. CPU times say more than wall times on a loaded machine.

    .venv/bin/python bench/bench_deck.py --base /tmp/headlight-base [--lang ko] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_browser import INIT  # noqa: E402
from browser_support import chromium_browser, free_port, wait_for_app  # noqa: E402

from i18n import LANGS, t  # noqa: E402
from ui.deckfile import example  # noqa: E402

DRAWN = r"""([slide, title, bar, t0]) => {
  const q = new URLSearchParams(location.search);
  const s = document.querySelector('[data-testid="stStatusWidget"]');
  if (q.get('slide') !== String(slide) || (s && /running/i.test(s.innerText))) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (t0 !== null && !window.__hl.rx.some((m) => m[0] >= t0 && m[2] === 'script_finished')) return false;
  const head = document.querySelector('.st-key-deck_bar');  // the bar of this slide, not the one before
  if (!head || !head.innerText.includes(bar)) return false;
  const h1 = Array.from(document.querySelectorAll('[data-testid="stMain"] h1'), (e) => e.textContent);
  if (!h1.some((x) => x.startsWith(title))) return false;
  return Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]')).every((c) => c.querySelector('.main-svg'));
}"""
TITLES = {"tour": "tour.title", "positional": "pe.title", "steps": "steps.title", "masks": "masks.title",
          "explorer": "page.explorer", "seq2seq": "s2s.title", "heads": "heads.page"}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def start(page, base: str, lang: str) -> None:
    page.goto(f"{base}/deck?lang={lang}", wait_until="domcontentloaded")
    wait_for_app(page)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name=t("deck.example", lang)).click()
    wait_for_app(page)


SPLIT = """(t0) => { const h = window.__hl, rx = h.rx.filter((m) => m[0] >= t0);
  const done = rx.filter((m) => m[2] === 'script_finished').map((m) => m[0]);
  return {server: done.length ? Math.max(...done) - t0 : null, bytes: rx.reduce((a, m) => a + m[1], 0),
          long: h.long.filter((l) => l[0] >= t0).reduce((a, l) => a + l[1], 0), runs: done.length}; }"""


def cpu_s(pid: int) -> float:
    """The CPU time (user + system) a process has used, in seconds (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_s(page) -> float:
    """The page's main thread's busy time so far (Chromium's TaskDuration), in seconds."""
    return next(m["value"] for m in page.hl_cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def walk(page, lang: str, split: list | None = None) -> list[float]:
    """Present the deck and press → through it; seconds from each press to its slide drawn (and, into `split`, where
    each one's time went)."""
    deck = example(lang)[0]
    main = page.locator('[data-testid="stMain"]')
    # (the baseline came back from a presentation in English: its Present button in either language)
    main.get_by_role("button", name=re.compile("^(" + "|".join(t("deck.present", x) for x in LANGS) + ")$")).click()
    page.wait_for_function(DRAWN, arg=[0, title(deck, 0, lang), f"1 / {len(deck)}", None], timeout=180_000,
                           polling=20)
    out = []
    for i in range(1, len(deck)):
        time.sleep(0.5)  # the slide settles; the lecturer reads it
        start = page.evaluate("performance.now()")
        cpu0, busy0 = cpu_s(page.hl_pid), busy_s(page)
        t0 = time.perf_counter()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(DRAWN, arg=[i, title(deck, i, lang), f"{i + 1} / {len(deck)}", start],
                               timeout=180_000, polling=20)
        out.append(time.perf_counter() - t0)
        if split is not None:
            split.append({**page.evaluate(SPLIT, start), "total": out[-1] * 1000, "i": i,
                          "cpu": (cpu_s(page.hl_pid) - cpu0) * 1000, "busy": (busy_s(page) - busy0) * 1000})
    main.get_by_role("button", name=t("deck.exit", lang)).click()
    wait_for_app(page)
    return out


def title(deck, i: int, lang: str) -> str:
    return t(TITLES[deck.slides[i].page], lang)[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the baseline checkout's root (its app.py)")
    ap.add_argument("--lang", default="ko")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    deck = example(args.lang)[0]
    names = [f"{i} → {i + 1} ({deck.slides[i].page})" for i in range(1, len(deck))]
    apps = {"this tree": ROOT / "app.py", "baseline": Path(args.base) / "app.py"}
    times: dict[str, list[list[float]]] = {k: [] for k in apps}
    splits: dict[str, list[dict]] = {k: [] for k in apps}
    first: dict[str, list[float]] = {}
    firsts: dict[str, list[dict]] = {k: [] for k in apps}
    before = load()
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        browser = chromium_browser(p)
        pages = {}
        for name, app in apps.items():
            base, pid = stack.enter_context(serve(app.parent, stack.enter_context(_tmpdir())))
            ctx = browser.new_context(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
            ctx.add_init_script(INIT)
            pages[name] = page = ctx.new_page()
            page.hl_pid = pid  # the server's process: its CPU time
            page.hl_cdp = ctx.new_cdp_session(page)  # the page's: its main thread's busy time
            page.hl_cdp.send("Performance.enable")
            start(page, base, args.lang)
            first[name] = walk(page, args.lang, firsts[name])  # a fresh server: every slide computed once
        for _ in range(args.rounds):
            for name, page in pages.items():
                times[name].append(walk(page, args.lang, splits[name]))
        browser.close()
    after = load()
    med = statistics.median
    print(f"| Next (→ to the slide drawn), example deck ({args.lang}), 1600 x 1000 | "
          + " | ".join(f"{a}: first pass | {a}: later (median)" for a in apps) + " |")
    print("|---|" + "---|---|" * len(apps))
    for j, n in enumerate(names):
        print(f"| {n} | " + " | ".join(f"{first[a][j]:.2f} s | {med(r[j] for r in times[a]):.2f} s" for a in apps)
              + " |")
    print("| all transitions (median) | " + " | ".join(
        f"{med(first[a]):.2f} s | {med(x for r in times[a] for x in r):.2f} s" for a in apps) + " |")
    print(f"\nmedians of {args.rounds} rounds, alternating; load average before {before}, after {after}\n")
    print("| where the time goes (median of every Next) | " + " | ".join(apps) + " |")
    print("|---|" + "---|" * len(apps))
    rows = (("→ to the last run's script_finished (server)", lambda r: r["server"], "{:.0f} ms"),
            ("the server's CPU time", lambda r: r["cpu"], "{:.0f} ms"),
            ("the page's main thread busy (Chromium TaskDuration)", lambda r: r["busy"], "{:.0f} ms"),
            ("script_finished to the slide drawn (browser)", lambda r: r["total"] - r["server"], "{:.0f} ms"),
            ("script runs finished", lambda r: r["runs"], "{:.0f}"),
            ("bytes received", lambda r: r["bytes"] / 1024, "{:.0f} KB"),
            ("main thread's long tasks", lambda r: r["long"], "{:.0f} ms"))
    for label, get, fmt in rows:
        print(f"| {label} | " + " | ".join(fmt.format(med(get(r) for r in splits[a] if r["server"] is not None))
                                         for a in apps) + " |")
    print("\n| Next: server CPU ms / page busy ms / KB | " + " | ".join(f"{a}: first pass | {a}: later" for a in apps)
          + " |")
    print("|---|" + "---|---|" * len(apps))
    for j, n in enumerate(names):
        cells = []
        for a in apps:
            for src in (firsts[a], splits[a]):
                rs = [r for r in src if r["i"] == j + 1 and r["server"] is not None]
                cells.append(" / ".join(f"{med(get(r) for r in rs):.0f}" for _, get, _ in (rows[1], rows[2], rows[5]))
                             if rs else "-")
        print(f"| {n} | " + " | ".join(cells) + " |")


@contextlib.contextmanager
def serve(root: Path, state: str):
    """`python -m serve run app.py` in `root` (its own code: run from its own directory), as tests/browser_support.py
    serve_app does for this tree."""
    import subprocess
    import urllib.request

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "serve", "run", str(root / "app.py"), "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "HEADLIGHT_DEVICE": "cpu", "HEADLIGHT_STATE_DIR": state})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{root}: the app did not start") from None
                time.sleep(0.3)
        yield base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def _tmpdir():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        yield d


if __name__ == "__main__":
    main()
