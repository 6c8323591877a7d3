"""The guided tour in headless Chromium, in lecture mode (issue 34): at 1600 × 1000 (a projector) Q, K and V of step 4
start at one height whatever their captions say, and step 3 on SmolLM2 draws q and k before and after RoPE; at
390 × 844 (a phone) no formula and no table runs off the right edge: a long formula breaks into lines (what cannot
break would scroll inside its own box) and the last step's table becomes one card per design choice. SmolLM2 in Korean, MiniLM in English. Screenshots are kept in
the test's tmp dir (HEADLIGHT_SCREENSHOTS=1: assets/screenshots/tour/)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
from browser_support import ROOT, wait_for_app, warm_page

from ui.tour import STEPS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SINCE = STEPS.index("since") + 1  # the last step: what changed since 2017, one card per design choice
TEXT = "The animal didn't cross the street because it was tired"

MEASURE = """() => {
  const vw = document.documentElement.clientWidth;
  const main = document.querySelector('[data-testid="stMain"]');
  const box = el => { const r = el.getBoundingClientRect();
                      return {left: r.left, right: r.right, top: r.top, sw: el.scrollWidth, cw: el.clientWidth,
                              ox: getComputedStyle(el).overflowX}; };
  return {
    vw, docW: document.documentElement.scrollWidth, mainW: main.scrollWidth, mainCW: main.clientWidth,
    formulas: [...main.querySelectorAll('.katex-display')].map(box),
    tables: [...main.querySelectorAll('[data-testid="stTable"] table')].map(box),
    cells: [...main.querySelectorAll('[data-testid="stTable"] td')].map(box),
    plots: [...main.querySelectorAll('.js-plotly-plot')].map(el => ({...box(el),
             title: (el.querySelector('.gtitle') || {}).textContent || ''})),
  };
}"""


@pytest.fixture(scope="module")
def app_url(app_server):
    """The worker's shared app (tests/conftest.py app_server)."""
    return app_server


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    if os.environ.get("HEADLIGHT_SCREENSHOTS") == "1":
        d = ROOT / "assets" / "screenshots" / "tour"
        d.mkdir(parents=True, exist_ok=True)
        return d
    return tmp_path_factory.mktemp("tour-shots")


def _open(app_url, shots, size, model, lang, step, plots: int = 0) -> dict:
    """The tour at `step`, once its formula and at least `plots` charts are drawn: the measurements (MEASURE)."""
    w, h = size
    page = warm_page(w, h)  # the module's page of that size
    q = urlencode({"model": model, "lang": lang, "lecture": "1", "step": str(step), "text": TEXT})
    page.goto(f"{app_url}/tour?{q}", wait_until="domcontentloaded")
    wait_for_app(page, 240_000)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMain"] h3')]
                              .some(e => /단계 중|Step \\d+ of/.test(e.innerText))""", timeout=240_000)
    wait_for_app(page, 240_000)
    page.wait_for_function("""n => document.querySelectorAll('[data-testid="stMain"] .katex-display').length > 0
                              && document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot .main-svg').length >= n
                              && [...document.querySelectorAll('[data-testid="stPlotlyChart"], [data-testid="stTable"]')]
                                 .every(e => e.querySelector('.main-svg, table'))""", arg=plots, timeout=180_000)
    page.wait_for_timeout(1500)
    assert not page.locator('[data-testid="stException"]').count()
    m = page.evaluate(MEASURE)
    page.screenshot(path=str(shots / f"{model}_{lang}_{w}x{h}_step{step}.png"))
    return m


def _fits(m: dict) -> None:
    """Nothing runs off the right edge: the page is not wider than the screen, every formula box and table lies
    inside it (a formula wider than its box scrolls inside it)."""
    assert m["docW"] <= m["vw"] and m["mainW"] <= m["mainCW"], m
    for f in m["formulas"]:  # inside the screen, and a wider one scrolls in its box (not clipped)
        assert f["right"] <= m["vw"] and (f["sw"] <= f["cw"] + 1 or f["ox"] in ("auto", "scroll")), f
    for tb in m["tables"]:
        assert tb["right"] <= m["vw"] + 0.5 and tb["sw"] <= tb["cw"] + 1, tb


@pytest.mark.parametrize("model,lang", [("smollm2-135m", "ko"), ("minilm-l6", "en")])
def test_projector_qkv_charts_start_at_one_height(app_url, shots, model, lang):
    m = _open(app_url, shots, (1600, 1000), model, lang, 4, plots=3)
    plots = m["plots"]
    assert len(plots) == 3, [p["title"] for p in plots]
    assert [p["title"].split("  ·  ")[0][:1] for p in plots] == ["Q", "K", "V"]
    assert max(p["top"] for p in plots) - min(p["top"] for p in plots) < 1, plots  # side by side, one top
    assert plots[0]["right"] < plots[1]["left"] < plots[1]["right"] < plots[2]["left"]
    _fits(m)


def test_projector_rope_step_on_smollm2(app_url, shots):
    m = _open(app_url, shots, (1600, 1000), "smollm2-135m", "ko", 3, plots=5)
    titles = [p["title"] for p in m["plots"]]
    assert len(titles) == 5 and titles[0].startswith("X W_Q (RoPE 전)") and titles[3].startswith("K = RoPE(X W_K)")
    assert abs(m["plots"][0]["top"] - m["plots"][1]["top"]) < 1 and abs(m["plots"][2]["top"] - m["plots"][3]["top"]) < 1
    _fits(m)


@pytest.mark.parametrize("model,lang,step", [("smollm2-135m", "ko", 3), ("smollm2-135m", "ko", 11),
                                             ("smollm2-135m", "ko", SINCE), ("minilm-l6", "en", SINCE),
                                             ("minilm-l6", "en", 4)])
def test_phone_formulas_and_table_stay_on_the_screen(app_url, shots, model, lang, step):
    m = _open(app_url, shots, (390, 844), model, lang, step, plots={3: 5, 4: 3, 11: 5}.get(step, 0))
    _fits(m)
    assert m["formulas"], "every step has a formula"
    for f in m["formulas"]:  # each breaks into lines at its "=", "+" and arrows: nothing left to scroll to (a few
        assert f["sw"] <= f["cw"] + 4, f  # px: KaTeX's italic overhang)
    if step == SINCE:  # one card per design choice: every cell as wide as the table, none cut at the right
        assert m["cells"] and all(c["right"] <= m["vw"] and c["sw"] <= c["cw"] + 1 for c in m["cells"]), m["cells"]
        widths = {round(c["right"] - c["left"]) for c in m["cells"]}
        assert len(widths) == 1, widths
