"""Each setting is declared once, as a field of a settings group (`vaultd.settings.declare`):
the loader, the docs test and the secret-hiding repr all read the same declaration."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from vaultd.config import FIELDS, Settings, load_settings
from vaultd.settings.declare import declared, setting
from vaultd.settings.parsers import integer


def test_every_field_of_the_settings_is_a_declared_setting_read_by_the_loader() -> None:
    assert [field.attr for field in FIELDS] == [field.name for field in fields(Settings)]
    assert len({field.key for field in FIELDS}) == len(FIELDS)
    assert len({field.env for field in FIELDS if field.env}) == len(FIELDS)
    loaded = load_settings(env={field.env: "" for field in FIELDS if field.env})
    assert all(getattr(loaded, field.attr) == field.parse(field.default) for field in FIELDS)


def test_a_group_whose_field_does_not_match_its_key_is_refused_at_import() -> None:
    @dataclass(frozen=True)
    class Slipped:
        render_workerz: int = setting("render.workers", integer(1, 4), 1, None, "a slip")

    with pytest.raises(TypeError, match=r"setting render\.workers is declared as render_workerz"):
        declared(Slipped)


def test_a_new_setting_in_a_group_reaches_the_environment_and_its_parser() -> None:
    settings = load_settings(env={"VAULTD_SHUTDOWN_GRACE_SECONDS": "3.5",
                                  "VAULTD_UPLOAD_OFFICE": "yes"})
    assert (settings.server_shutdown_grace_seconds, settings.upload_office) == (3.5, True)
