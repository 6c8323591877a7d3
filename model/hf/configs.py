"""Reading the few config.json fields each family needs, with clear errors for missing, wrong or
unsupported values. Only what the modules implement is accepted; anything else is refused by name."""

from __future__ import annotations

from typing import NoReturn

from ..activations import ACTIVATIONS
from ..errors import InputError


class Fields:
    """Typed access to config.json with errors that name the field."""

    def __init__(self, config: dict, model_type: str, path: str):
        self.config, self.model_type, self.path = config, model_type, path

    def bad(self, name: str, problem: str) -> NoReturn:
        raise InputError(f"{self.path}: config.json field {name!r} {problem}.", key="hf_config_value",
                          path=self.path, field=name, problem=problem)

    def int(self, name: str, default: int | None = None, *, minimum: int = 1) -> int:
        v = self.config.get(name, default)
        if v is None:
            self.bad(name, f"is missing (a {self.model_type} config needs it)")
        if isinstance(v, bool) or not isinstance(v, int):
            self.bad(name, f"must be an integer, found {v!r}")
        if v < minimum:
            self.bad(name, f"must be at least {minimum}, found {v}")
        return v

    def float(self, name: str, default: float) -> float:
        v = self.config.get(name, default)
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            self.bad(name, f"must be a positive number, found {v!r}")
        return float(v)

    def flag(self, name: str, default: bool) -> bool:
        v = self.config.get(name, default)
        if v is None:
            return default
        if not isinstance(v, bool):
            self.bad(name, f"must be true or false, found {v!r}")
        return v

    def optional_id(self, name: str) -> int | None:
        v = self.config.get(name)
        if v is None:
            return None
        if isinstance(v, list) and v and all(isinstance(i, int) for i in v):
            v = v[0]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            self.bad(name, f"must be a token id, found {v!r}")
        return v

    def activation(self, name: str, default: str) -> str:
        v = self.config.get(name, default)
        if v not in ACTIVATIONS:
            self.unsupported(name, v, ", ".join(ACTIVATIONS))
        return v

    def require(self, name: str, default, supported) -> None:
        """The field must equal `supported` (its default when absent), else it names an unsupported option."""
        v = self.config.get(name, default)
        if v is None:
            v = default
        if v != supported:
            self.unsupported(name, v, repr(supported))

    def unsupported(self, name: str, value, supported: str) -> NoReturn:
        raise InputError(f"{self.path}: {self.model_type} option {name}={value!r} is not supported; supported: "
                         f"{supported}.", key="hf_unsupported_option", path=self.path, option=name,
                         value=repr(value), model_type=self.model_type, supported=supported)

    def heads(self, d_model: int, n_heads: int, name: str) -> None:
        if d_model % n_heads:
            self.bad(name, f"({n_heads}) must divide the hidden size {d_model}")
