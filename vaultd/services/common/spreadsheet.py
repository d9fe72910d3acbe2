"""Cells of a csv export that a spreadsheet opens as text, never as a formula.

Exported values can come from outside the account (a viewer's email, a member's name): text
that starts a formula (= + - @, or a tab or carriage return some spreadsheets skip first) gets
a leading single quote, which spreadsheets show as text and hide."""

from __future__ import annotations

from typing import Any, TypeVar

Cell = TypeVar("Cell", bound=Any)

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Cell) -> Cell:
    """`value` as a cell no spreadsheet evaluates; anything but text is unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value  # type: ignore[return-value]  # str is Cell here
    return value
