"""Headlight's interface languages (English, Korean): see i18n/catalog.py."""

from .catalog import DEFAULT_LANG, LANG_NAMES, LANGS, catalogue, error_message, glossary, pick_lang, t, term

__all__ = ["DEFAULT_LANG", "LANG_NAMES", "LANGS", "catalogue", "error_message", "glossary", "pick_lang", "t", "term"]
