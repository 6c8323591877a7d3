"""The labels that name special tokens name the model's own (issue 26): on multilingual-e5-small the explorer's
"Hide <s>/</s>" option and "Mass on <s>/</s>" metric, the head lab's scatter and atlas, the mask lab's "<pad>" —
never MiniLM's [CLS]/[SEP]/[PAD]; on MiniLM they stay [CLS]/[SEP] and [PAD]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_support import assert_ok, charts, open_tab
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import explorer as ex
from ui.pages import page_file

APP = str(Path(__file__).resolve().parents[1] / "app.py")
E5, MINILM = "multilingual-e5-small", "minilm-l6"
SPECIALS = {E5: "<s>/</s>", MINILM: "[CLS]/[SEP]"}


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page_file(page)).run()
    assert_ok(at)
    return at


@pytest.mark.parametrize("model,lang", [(E5, "en"), (E5, "ko"), (MINILM, "en")])
def test_explorer_names_the_models_own_specials(model, lang):
    at = _open("explorer", model=model, text="The animal didn't cross the street", lang=lang)
    sp = SPECIALS[model]
    hide = at.toggle(key=ex.K_HIDE)
    assert hide.label == t("ex.hide", lang, specials=sp) and sp in hide.label
    assert "{specials}" not in hide.help and sp in hide.help
    if model == E5:
        assert "[CLS]/[SEP]," not in hide.label
    open_tab(at, t("ex.tab.metrics", "en"))
    assert_ok(at)
    assert t("ex.metric.special", lang, specials=sp) in at.dataframe[0].value.columns
    at.toggle(key=ex.K_HIDE).set_value(True).run()  # hiding the specials hides the query token 0 (<s> / [CLS])
    at.session_state["token"] = 0
    open_tab(at, t("ex.tab.token", "en"))
    assert_ok(at)
    hidden = [i.value for i in at.info if i.value.startswith(t("ex.hidden_token", lang, token=0, text="", specials="")[:8])]
    assert hidden and sp in hidden[0] and "{specials}" not in hidden[0], [i.value for i in at.info]


def test_mask_lab_batch_names_e5s_pad():
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"model": E5, "lang": "ko"})
    at.run()
    at.switch_page(page_file("masks")).run()
    at.button(key="mask_preset_pad").click().run()
    assert_ok(at)
    batch = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert batch["text"][1][-1] == "&lt;pad&gt;"  # the padding token the model used, escaped for plotly
    assert batch["colorbar"]["ticktext"][0] == "&lt;pad&gt;: 막힘"


def test_head_lab_scatter_and_atlas_name_e5s_specials():
    at = _open("heads", model=E5, text="The animal didn't cross the street")
    open_tab(at, "Beyond raw weights", "hl_tab")
    assert_ok(at)
    assert "{specials}" not in " ".join(c.value for c in at.caption)
    assert any("&lt;s&gt;/&lt;/s&gt;" in json.loads(c)["layout"]["title"]["text"] for c in charts(at)
               if "Share on" in c)
    open_tab(at, "Head atlas", "hl_tab")
    assert_ok(at)
    legend = [d.get("name") for c in charts(at) for d in json.loads(c)["data"] if d.get("name")]
    assert "&lt;s&gt;/&lt;/s&gt; sink" in legend and not any("[CLS]" in n for n in legend)
