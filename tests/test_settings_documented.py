"""Every setting is written down where an operator looks: the table in docs/operations.md and
the annotated config/vaultd.toml, which must itself load. A setting added without them fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vaultd.config import FIELDS, Field, load_settings, read_config_file

ROOT = Path(__file__).resolve().parents[1]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
EXAMPLE = ROOT / "config" / "vaultd.toml"


@pytest.mark.parametrize("field", FIELDS, ids=lambda field: field.key)
def test_every_setting_has_a_row_in_the_operations_table(field: Field) -> None:
    key, env = field.key, field.env
    rows = [line for line in OPERATIONS.splitlines()
            if line.startswith("|") and f"`{key}`" in line]
    assert rows, f"docs/operations.md has no row for {key}"
    assert env is None or any(f"`{env}`" in row for row in rows), (key, env)


@pytest.mark.parametrize("field", FIELDS, ids=lambda field: field.key)
def test_every_setting_is_in_the_example_configuration(field: Field) -> None:
    key, env = field.key, field.env
    section, _, name = key.rpartition(".")
    text = EXAMPLE.read_text()
    if section:
        start = text.index(f"[{section}]")
        following = re.search(r"^\[", text[start + 1:], re.M)
        text = text[start:start + 1 + following.start()] if following else text[start:]
    assert re.search(rf"^#? ?{re.escape(name)}\b", text, re.M), f"config/vaultd.toml lacks {key}"
    assert env is None or env in text, (key, env)


def test_the_example_configuration_loads_as_it_is() -> None:
    settings = load_settings(read_config_file(str(EXAMPLE)), flags={})
    assert settings.port == 8080 and settings.render_sandbox == "auto"
