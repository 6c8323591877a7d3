"""Errors that say what is wrong and what to do. All derive from HeadlightError,
so the app and the CLI can show them as one short message.

The message (English) is meant for the user as is: the CLI and the logs print it. An error a user can meet in the
app also names its message in the app's catalogue, so the interface can say it in the user's language:

    raise InputError(f"The text is empty: ...", key="empty_text")
    raise WeightsError(f"Missing weight file: {path}. Fix: {fix}", key="weights_missing", path=path, fix=fix)

The English text exists once, here at the raise site. `key` is looked up as "error.<key>" in i18n/ko.error.json
(other languages) and formatted with the other keyword arguments (`params`); a test checks that every key used in
model/, analysis/ and ui/ exists there with exactly these placeholders. No i18n import here: the model package does not know about languages.
"""

from __future__ import annotations


class HeadlightError(Exception):
    """Base class: the message is meant for the user, as is; `key` and `params` name it in the app's catalogue."""

    def __init__(self, message: str = "", *, key: str | None = None, **params: object) -> None:
        super().__init__(message)
        self.key = key
        self.params = params


class InputError(HeadlightError, ValueError):
    """Bad user input: empty text, an unknown model name, an invalid option."""


class WeightsError(HeadlightError, RuntimeError):
    """Missing, altered or malformed weight files."""
