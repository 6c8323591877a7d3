"""Lesson deck: saved views of the app as an ordered deck of slides, each with a title and a note; reorder, delete,
export / import as a small JSON file, one short link, the example deck of the lecture's pipeline, and the present
mode (the slide's own page with a bar: Back / Next on the arrow keys). Page and present mode: ui/deck.py; the deck
and its file: ui/deckfile.py."""

from ui import deck
from ui.shell import current_view

view = current_view()
deck.render(view.lang, view.device)
