"""Server-side render time of the Attention explorer (run by `make bench`, never by pytest).

Drives app.py with Streamlit's AppTest, as a user would: a head change (must not re-run the model) and a new
sentence (runs the model once), for the default sentence; medians over repeats. Two clocks are reported:
the shell's own timer (st.session_state[ui.shell.RUN_MS_KEY]: the sidebar and the page, i.e. the server-side render),
and AppTest's whole `run()` (script plus AppTest's own bookkeeping: an upper bound).
Targets (issue 3): head change < 100 ms, new sentence < 250 ms, on these 2-core machines."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HEADLIGHT_DEVICE", "cpu")

from streamlit.testing.v1 import AppTest  # noqa: E402

from model.examples import DEFAULT_TEXT  # noqa: E402
from ui.shell import RUN_MS_KEY  # noqa: E402


def _run(at: AppTest) -> tuple[float, float]:
    t0 = time.perf_counter()
    at.run()
    wall = (time.perf_counter() - t0) * 1000
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state[RUN_MS_KEY], wall


def main(repeats: int = 15) -> str:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()  # loads the model, first trace
    at.run()
    heads = {"page": [], "wall": []}
    for i in range(repeats):
        at.selectbox(key="head").set_value((i % 11) + 1)
        page, wall = _run(at)
        heads["page"].append(page)
        heads["wall"].append(wall)
    sentences = {"page": [], "wall": []}
    for i in range(repeats):  # a sentence never seen before: the model runs once
        at.text_area(key="text").set_value(f"{DEFAULT_TEXT} number {i} of {repeats}")
        page, wall = _run(at)
        sentences["page"].append(page)
        sentences["wall"].append(wall)
    med = statistics.median
    lines = [
        "| explorer, default sentence | page timer (median) | AppTest run() (median) | target |",
        "|---|---|---|---|",
        f"| head change | {med(heads['page']):.0f} ms | {med(heads['wall']):.0f} ms | < 100 ms |",
        f"| new sentence (model runs) | {med(sentences['page']):.0f} ms | {med(sentences['wall']):.0f} ms "
        "| < 250 ms |",
        "",
        f"medians of {repeats} runs each; load average {os.getloadavg()[0]:.2f}",
    ]
    out = "\n".join(lines) + "\n"
    print(out)
    return out


if __name__ == "__main__":
    res = main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
    (Path(__file__).parent / "results_app.md").write_text(res)
