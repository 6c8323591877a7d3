"""Headlight's interface languages (English, Korean): see i18n/catalog.py."""

from .catalog import DEFAULT_LANG, LANG_NAMES, LANGS, catalogue, error_message, glossary, pick_lang, t, term
from .names import activation_name, head_name, kv_head
from .particles import Shown

__all__ = ["DEFAULT_LANG", "LANG_NAMES", "LANGS", "Shown", "activation_name", "catalogue", "error_message", "glossary",
           "head_name", "kv_head", "pick_lang", "t",
           "term"]
