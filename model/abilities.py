"""What a model can do, declared where it is registered (model/registry.py, model/hf/specs.py), never guessed from
its name or probed with hasattr: one frozen record on its registry spec (`ModelSpec.abilities`) and on the loaded
model (`LoadedModel.abilities`, its kind read from its config). The app asks the record, or the registry for the
models that have an ability (`model.registry.models_with(kind="encoder-decoder", tasks=True)`).

    kind            "encoder" | "decoder" (decoder-only) | "encoder-decoder": on a loaded model, its config's
    reads           the scripts its vocabulary reads (model/scripts.py names: "Latin", "Hangul" ...); () unknown
    tasks           the tasks its source starts with a token of (seq2seq-tiny: copy / reverse / swap); () none
    shortlist       it decodes within a lexical shortlist of the source (LoadedModel.allowed_tokens: a translator)
    translation     the languages it translates from and to (a Bergamot translator), or None
    names_unknown   it names the words of a text its vocabulary lacks (LoadedModel.unknown_words)

and, from the kind: next_token (a decoder-only model's next-token distribution and greedy continuation), generation
(it writes tokens: greedy decoding or continuation), batches (several texts in one padded forward: trace_many).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

Kind = Literal["encoder", "decoder", "encoder-decoder"]
KINDS: tuple[str, ...] = get_args(Kind)


@dataclass(frozen=True)
class Translation:
    source: str  # the language it reads, by its code (the catalogue's "s2s.lang.<code>"): "en"
    target: str  # the language it writes: "pt"


@dataclass(frozen=True)
class Abilities:
    kind: Kind
    reads: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    shortlist: bool = False
    translation: Translation | None = None
    names_unknown: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}; kinds: {', '.join(KINDS)}")

    @property
    def next_token(self) -> bool:
        """A next-token distribution after the text and a greedy continuation (DecoderOnlyModel)."""
        return self.kind == "decoder"

    @property
    def generation(self) -> bool:
        """It writes tokens: a decoder-only model continues the text, an encoder-decoder decodes greedily."""
        return self.kind != "encoder"

    @property
    def batches(self) -> bool:
        """Several texts traced in one padded forward (EncoderModel.trace_many)."""
        return self.kind == "encoder"

    def has(self, **want) -> bool:
        """Whether every wanted ability holds: kind=<a kind>, reads=<a script or scripts, all read>, and any other
        ability by name, given as a bool (tasks=True: it has tasks; translation=False: it does not translate)."""
        for name, value in want.items():
            if value is None:
                continue
            if name == "kind":
                ok = self.kind == value
            elif name == "reads":
                need = {value} if isinstance(value, str) else set(value)
                ok = bool(need) and need <= set(self.reads)
            elif name in ABILITY_NAMES:
                ok = bool(getattr(self, name)) == bool(value)
            else:
                raise TypeError(f"unknown ability {name!r}; abilities: {', '.join(('kind', 'reads', *ABILITY_NAMES))}")
            if not ok:
                return False
        return True


# the registry's declarations by model name (model.registry.register fills it): a loaded model finds its own here,
# as model/loaded.py cannot import the registry (the registry names the loaders, which build the loaded models)
_DECLARED: dict[str, Abilities] = {}


def declare(name: str, abilities: Abilities) -> None:
    """Record what the registered model `name` can do (model.registry.register)."""
    _DECLARED[name] = abilities


def declared(name: str) -> Abilities | None:
    """What the registered model `name` was declared to do; None for a model loaded outside the registry."""
    return _DECLARED.get(name)


ABILITY_NAMES = ("tasks", "shortlist", "translation", "names_unknown", "next_token", "generation", "batches")


def of_config(config, declared: Abilities | None = None) -> Abilities:
    """The abilities of a model built from `config`: `declared` (its registry spec's) with the config's kind, or the
    kind alone when nothing is declared (a model loaded outside the registry)."""
    if declared is None:
        return Abilities(config.kind)
    return declared if declared.kind == config.kind else dataclasses.replace(declared, kind=config.kind)
