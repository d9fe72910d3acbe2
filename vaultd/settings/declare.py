"""A setting is declared once, as a field of one of the settings groups: its type (the
annotation), dotted TOML key, parser, default, environment variable and a line of help. The
groups are frozen dataclasses; `vaultd.config.Settings` inherits them all, and `FIELDS` (what
the loader, the docs test and `vaultd -h` read) is derived from its fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_SETTING = "vaultd.setting"


@dataclass(frozen=True)
class Field:
    key: str  # dotted TOML key, e.g. "render.workers"
    parse: Callable[[Any], Any]
    default: Any
    env: str | None
    help: str

    @property
    def attr(self) -> str:
        return self.key.replace(".", "_")


def setting(key: str, parse: Callable[[Any], Any], default: Any, env: str | None,
            help: str) -> Any:
    """The dataclass field of one setting (its default, and the rest in its metadata)."""
    return dataclasses.field(default=default,
                             metadata={_SETTING: Field(key, parse, default, env, help)})


def declared(settings_class: type) -> tuple[Field, ...]:
    """Every setting of `settings_class`, in field order; a field whose name is not its key's
    (dots as underscores) is a slip that would leave the setting unread: refused at import."""
    found = []
    for field in dataclasses.fields(settings_class):
        declaration: Field = field.metadata[_SETTING]
        if declaration.attr != field.name:
            raise TypeError(f"setting {declaration.key} is declared as {field.name}")
        found.append(declaration)
    return tuple(found)
