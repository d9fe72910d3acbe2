"""Cells of a csv export that a spreadsheet opens as text, never as a formula.

Exported values can come from outside the account (a viewer's email, a member's name): text
that starts a formula (= + - @, or a tab or carriage return some spreadsheets skip first) gets
a leading single quote, which spreadsheets show as text and hide."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_STARTS) else value
