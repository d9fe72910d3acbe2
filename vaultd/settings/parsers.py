"""How each setting's raw value (TOML, environment or flag) becomes a typed one: a ValueError
says what is wrong, and `vaultd.config` names the setting in its one-line error."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def integer(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        number = int(str(value).strip()) if isinstance(value, str) else int(value)
        if isinstance(value, float) and value != number:
            raise ValueError("expected an integer")
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
        return number

    return parse


def number(low: float, high: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        number = float(value)
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
        return number

    return parse


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return str(value)

    return parse


def url(value: Any) -> str:
    address = text(value).rstrip("/")
    if address and not address.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return address


def networks(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    cleaned = tuple(str(item).strip() for item in items if str(item).strip())
    for item in cleaned:
        ipaddress.ip_network(item, strict=False)
    return cleaned


def path(value: Any) -> str:
    return text(value)


def timezone(value: Any) -> str:
    try:
        ZoneInfo(text(value))
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError("must be an IANA time zone name such as Europe/Paris") from None
    return str(value)


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def port_or_off(value: Any) -> int:
    return 0 if value in ("", None) else integer(0, 65535)(value)


def seconds_list(value: Any) -> tuple[float, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    delays = tuple(float(str(item).strip()) for item in items if str(item).strip())
    if not delays or any(not 0 <= d <= 86_400 for d in delays):
        raise ValueError("expected a list of 1 or more delays between 0 and 86400 seconds")
    return delays


def module_names(value: Any) -> tuple[str, ...]:
    """Dotted Python module names: a list, or a comma-separated string (the environment)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    cleaned = tuple(str(item).strip() for item in items if str(item).strip())
    for item in cleaned:
        if not all(part.isidentifier() for part in item.split(".")):
            raise ValueError(f"{item!r} is not a module name")
    return cleaned
