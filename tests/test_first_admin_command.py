"""The first-admin command vaultd prints on a vault with no account, typed as printed, reaches
the vault vaultd serves and makes links to the address vaultd announces, whatever vaultd took
from its command line or environment (`vaultd.announcements.first_admin_command`). The
command is read back the way `vault-admin` reads its settings: its `NAME=value` words as the
whole environment, its `--config` and `--data-dir`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.typed_command import split_typed
from vaultd.announcements import first_admin_command
from vaultd.config import Settings, load_settings, read_config_file

PLAIN = "vault-admin members add-first-admin <your email>"


def vaultd_settings(config: Path | None, env: dict[str, str], flags: dict[str, str]
                    ) -> Settings:
    return load_settings(read_config_file(config) if config else {}, env=env, flags=flags)


def vault_admin_settings(command: str) -> Settings:
    """The settings `vault-admin` runs with when `command` is typed, with an email in place of
    its placeholder, in a shell that sets no VAULTD_ variable."""
    env, tool, args = split_typed(command.replace("<your email>", "ops@example.com"))
    assert tool == "vault-admin"
    options = dict(zip(args[:-3:2], args[1:-3:2], strict=True))  # before the subcommand
    assert args[-3:] == ["members", "add-first-admin", "ops@example.com"]
    assert set(options) <= {"--config", "--data-dir"}, options
    config = options.get("--config")
    return vaultd_settings(Path(config) if config else None, env,
                           {"data_dir": options.get("--data-dir")} if "--data-dir" in options
                           else {})


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "my vault.toml"  # a space: quoted in the command
    path.write_text('port = 9100\ndata_dir = "/srv/vault data"\n')
    return path


CASES = {
    "the defaults": (False, {}, {}, 8080),
    "a port flag": (False, {}, {"port": "9000"}, 9000),
    "a port picked by the system": (False, {}, {"port": "0"}, 43117),
    "a port from the environment": (False, {"VAULTD_PORT": "9001"}, {}, 9001),
    "a host flag": (False, {}, {"host": "10.1.2.3"}, 8080),
    "a wildcard host": (False, {}, {"host": "0.0.0.0"}, 8080),
    "a data directory flag": (False, {}, {"data_dir": "elsewhere/my vault"}, 8080),
    "a public address": (False, {"VAULTD_PUBLIC_URL": "https://vault.example/"},
                         {"port": "9002"}, 9002),
    "a config file": (True, {}, {}, 9100),
    "a config file and a port flag": (True, {}, {"port": "9200"}, 9200),
    "a config file and a data directory from the environment":
        (True, {"VAULTD_DATA_DIR": "/var/lib/vaultd"}, {}, 9100),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_command_typed_as_printed_reaches_this_vault_at_this_address(
        case: str, config: Path) -> None:
    with_config, env, flags, bound_port = CASES[case]
    path = config if with_config else None
    settings = vaultd_settings(path, env, flags)
    command = first_admin_command(settings, bound_port, str(path) if path else None)
    admin = vault_admin_settings(command)
    assert admin.viewer_url() == settings.viewer_url(bound_port), command
    assert admin.data_path.resolve() == settings.data_path.resolve(), command


def test_the_quick_start_gets_the_plain_command() -> None:
    assert first_admin_command(vaultd_settings(None, {}, {}), 8080, None) == PLAIN


def test_only_what_differs_is_spelled_out(config: Path) -> None:
    assert first_admin_command(vaultd_settings(None, {}, {"port": "9000"}), 9000, None) == (
        "VAULTD_PORT=9000 " + PLAIN)
    # A wildcard host is announced as 127.0.0.1, as vault-admin's default host is.
    assert first_admin_command(vaultd_settings(None, {}, {"host": "0.0.0.0"}), 8080,
                               None) == PLAIN
    assert first_admin_command(vaultd_settings(config, {}, {}), 9100, str(config)) == (
        f"vault-admin --config '{config.resolve()}' members add-first-admin <your email>")


def test_a_database_uri_is_never_printed() -> None:
    uri = "mongodb://vaultd:s3cret-pw@db.example:27017/?replicaSet=rs0"
    settings = vaultd_settings(None, {"VAULTD_MONGODB_URI": uri}, {"port": "9000"})
    command = first_admin_command(settings, 9000, None)
    assert "s3cret-pw" not in command and "mongodb" not in command.lower()
    assert command == "VAULTD_PORT=9000 " + PLAIN


def test_a_config_file_spoilt_since_the_start_still_gives_a_command(config: Path) -> None:
    settings = vaultd_settings(config, {}, {})
    config.write_text("port = [")  # edited after vaultd read it
    command = first_admin_command(settings, 9100, str(config))
    assert command == (f"VAULTD_PORT=9100 vault-admin --config '{config.resolve()}' "
                       "--data-dir '/srv/vault data' members add-first-admin <your email>")
