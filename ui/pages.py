"""The app's pages, in the menu's order: the one table that the shell (navigation), the door (which paths are pages),
the preload (what to import before the first run), the tests and the benchmarks read. Plain data, standard library
only: it can be imported without Streamlit.

    from ui.pages import PAGES, page_file
    page_file("steps")        # "app_pages/steps.py"

A page's URL path is its file's stem (or its `path`: `class` is a Python keyword, so /class is app_pages/class_.py); the default page is served at the root URL ("/"). Pages live in app_pages/,
not pages/: a folder named pages/ beside the entrypoint is Streamlit's legacy multipage mechanism, which is active in
a fresh server process until some session has run st.navigation; a direct link opened in that window ran the page
without the shell (see README, "Why app_pages/").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Page:
    file: str  # the page's script, relative to app.py (and the repository root)
    title_key: str  # its title in the i18n catalogue: the menu and the browser tab, in the session's language
    icon: str  # a Material icon: drawn with the font bundled with Streamlit, so no request leaves the server
    imports: tuple[str, ...]  # the project's modules the script imports (tests/test_pages.py checks it); preloaded
    default: bool = False  # served at the root URL
    own_model: bool = False  # runs its own model (seq2seq-tiny), whatever the sidebar's model: no sidebar trace
    path: str = ""  # the URL path when it is not the file's stem (`class_.py` is served at /class)
    # its own keys (ui/deckfile.py derives its tables from these: a link's and a deck slide's keys, in this order)
    query: tuple[str, ...] = ()  # the page's own keys in its link, besides every page's view keys (its tab among them)
    tab: str = ""  # which of them holds the open tab, by its id (the end of its catalogue key: "ffn", "steps.tab.ffn")
    tab_labels: tuple[str, ...] = ()  # the catalogue prefixes of its tabs' labels (an old link's label -> its id)
    options: tuple[str, ...] = ()  # its own choices the link does not carry, kept in session state (a deck keeps them)

    @property
    def name(self) -> str:
        """The URL path (`/steps`): `path`, else the file's stem."""
        return self.path or PurePosixPath(self.file).stem


# the Encoder-decoder page's own choices in its link (ui/seq2seq.py LINK_KEYS): its model, task, teacher forcing, the
# typed target, decoder layer and head, the step, decoding over the whole vocabulary
S2S_QUERY = ("s2s_model", "s2s_task", "s2s_tf", "s2s_target", "s2s_layer", "s2s_head", "s2s_step", "s2s_vocab")
# the Head lab's own keys in its link besides its tab: the Attribution & patching tab's prompts, target and foil
# (ui/cause.py) and the Generation tab's settings (ui/generation.py)
HEADS_TEXT = ("hl_clean", "hl_corrupt", "hl_target", "hl_foil")
HEADS_GENERATION = ("gen_new", "gen_sample", "gen_temp", "gen_topk", "gen_topp", "gen_seed", "gen_step")

PAGES: tuple[Page, ...] = (  # in the menu's order
    Page("app_pages/explorer.py", "page.explorer", ":material/grid_on:", default=True,
         imports=("ui.runs", "ui.explorer", "ui.shell", "ui.state", "ui.widgets"),
         query=("ex_tab",), tab="ex_tab", tab_labels=("ex.tab.",),
         options=("ex_mode", "ex_hide_special", "ex_merge_words")),
    Page("app_pages/positional.py", "page.positional", ":material/waves:",
         imports=("ui.pe_lab", "ui.shell", "ui.widgets"),
         query=("pe_tab",), tab="pe_tab", tab_labels=("pe.tab.",)),
    Page("app_pages/masks.py", "page.masks", ":material/visibility_off:",
         imports=("ui.mask_lab", "ui.shell", "ui.widgets"),
         query=("mask_tab",), tab="mask_tab", tab_labels=("masks.tab.",)),
    Page("app_pages/steps.py", "page.steps", ":material/functions:",
         imports=("ui.runs", "ui.steps_page", "ui.shell", "ui.state", "ui.widgets", "viz.steps"),
         query=("steps_tab",), tab="steps_tab", tab_labels=("steps.tab.", "trpages.steps.tab.")),
    Page("app_pages/seq2seq.py", "page.seq2seq", ":material/translate:", own_model=True,
         imports=("ui.runs", "ui.store", "ui.seq2seq", "ui.shell"),
         query=S2S_QUERY),
    Page("app_pages/heads.py", "heads.page", ":material/science:",
         imports=("ui.heads", "ui.crosslingual", "ui.generation", "ui.cause", "ui.shell", "ui.state", "ui.widgets"),
         query=("hl_tab", *HEADS_TEXT, *HEADS_GENERATION), tab="hl_tab", tab_labels=("heads.tab.", "e5.tab.")),
    Page("app_pages/training.py", "page.training", ":material/model_training:", own_model=True,
         imports=("ui.training_page", "ui.training_run", "ui.shell"),
         query=("task", "snap", "train_tab"), tab="train_tab", tab_labels=("train.tab.",)),  # its task, snapshot, tab
    Page("app_pages/tour.py", "page.tour", ":material/school:",
         imports=("ui.tour", "ui.shell"),
         query=("step",)),  # the tour's step, counted from 1
    Page("app_pages/deck.py", "page.deck", ":material/slideshow:",
         imports=("ui.deck", "ui.shell")),
    Page("app_pages/class_.py", "page.class", ":material/groups:", path="class",
         imports=("ui.class_lecturer", "ui.shell")),
)
BY_NAME: dict[str, Page] = {p.name: p for p in PAGES}
DEFAULT: Page = next(p for p in PAGES if p.default)
NAMES: tuple[str, ...] = tuple(BY_NAME)  # in the menu's order, the default page first


def page_file(name: str) -> str:
    """The script of the page at `/name` ("steps" -> "app_pages/steps.py"); a KeyError names the known pages."""
    try:
        return BY_NAME[name].file
    except KeyError:
        raise KeyError(f"no page {name!r}; the pages are {', '.join(NAMES)}") from None


def page_modules() -> tuple[str, ...]:
    """Every project module some page imports, each once, in the menu's order."""
    return tuple(dict.fromkeys(m for p in PAGES for m in p.imports))
