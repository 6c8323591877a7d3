"""Each page declares its own link keys, tab and options on its Page (ui/pages.py); ui/deckfile.py derives its tables
from PAGES. The derived tables are exactly the ones that were written out by hand before (same keys, same order per
page, so a slide's query, and so a deck file and a link, is byte for byte the same)."""

from ui import deckfile as d
from ui.pages import BY_NAME, PAGES

# the tables as ui/deckfile.py listed them before the pages declared their keys (main 3ca6eb1)
S2S = ("s2s_model", "s2s_task", "s2s_tf", "s2s_target", "s2s_layer", "s2s_head", "s2s_step", "s2s_vocab")
TEXT = ("hl_clean", "hl_corrupt", "hl_target", "hl_foil")
GEN = ("gen_new", "gen_sample", "gen_temp", "gen_topk", "gen_topp", "gen_seed", "gen_step")
TABS = {"explorer": "ex_tab", "heads": "hl_tab", "steps": "steps_tab", "positional": "pe_tab", "masks": "mask_tab",
        "training": "train_tab"}
LABELS = {"ex_tab": ("ex.tab.",), "hl_tab": ("heads.tab.", "e5.tab."), "steps_tab": ("steps.tab.", "trpages.steps.tab."),
          "pe_tab": ("pe.tab.",), "mask_tab": ("masks.tab.",), "train_tab": ("train.tab.",)}
QUERY = {"tour": ("step",), "seq2seq": S2S, "explorer": ("ex_tab",), "heads": ("hl_tab", *TEXT, *GEN),
         "steps": ("steps_tab",), "positional": ("pe_tab",), "masks": ("mask_tab",),
         "training": ("task", "snap", "train_tab")}
OPTIONS = {"explorer": ("ex_mode", "ex_hide_special", "ex_merge_words")}


def test_derived_tables_equal_the_old_ones():
    assert d.TAB_KEYS == TABS and d.TAB_LABELS == LABELS and d.PAGE_OPTIONS == OPTIONS
    assert d.PAGE_QUERY == QUERY
    assert {p: tuple(k) for p, k in d.PAGE_QUERY.items()} == QUERY  # per page, in the same order
    assert all(d.PAGE_QUERY[p] == keys for p, keys in QUERY.items())
    assert (d.S2S_QUERY, d.HEADS_TEXT, d.HEADS_GENERATION) == (S2S, TEXT, GEN)
    assert set(d.QUERY_KEYS) == {*d.VIEW_KEYS, *(k for keys in QUERY.values() for k in keys)}
    assert len(d.QUERY_KEYS) == len(set(d.QUERY_KEYS)) == 9 + 28  # 6 tabs, 8 s2s_*, 4 hl_*, 7 gen_*, task, snap, step
    assert d.OPTION_KEYS == OPTIONS["explorer"]


def test_each_page_declares_its_keys():
    for page in PAGES:
        if page.tab:  # the tab key is one of the page's link keys, and its labels have a catalogue prefix
            assert page.tab in page.query and page.tab_labels, page.name
        else:
            assert not page.tab_labels, page.name
        assert not set(page.query) & set(d.VIEW_KEYS), page.name  # a page's own keys never shadow the view's
        assert not set(page.query) & set(page.options), page.name
    assert BY_NAME["heads"].query == ("hl_tab", *TEXT, *GEN)
    assert BY_NAME["class"].query == () and BY_NAME["deck"].query == ()
    owners = [p.name for p in PAGES for k in p.query if k == "task"]
    assert owners == ["training"]  # keys are not shared between pages
