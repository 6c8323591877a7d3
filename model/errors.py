"""Errors that say what is wrong and what to do. All derive from HeadlightError,
so the app and the CLI can show them as one short message."""


class HeadlightError(Exception):
    """Base class: the message is meant for the user, as is."""


class InputError(HeadlightError, ValueError):
    """Bad user input: empty text, an unknown model name, an invalid option."""


class WeightsError(HeadlightError, RuntimeError):
    """Missing, altered or malformed weight files."""
