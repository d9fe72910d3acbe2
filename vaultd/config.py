"""vaultd's settings: one frozen object built by one pure function.

Resolution order: built-in defaults, then the TOML file (`--config`), then environment variables,
then command-line flags. Every setting is declared once, as a field of a settings group
(`vaultd.settings.*`: its type, key, parser, default, environment name and a line of help);
`FIELDS` is derived from them. Unknown keys in the file are rejected, and any invalid value
stops start-up with one line that names the setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from vaultd.settings.audit import AuditSettings
from vaultd.settings.auth import AuthSettings
from vaultd.settings.declare import Field, declared
from vaultd.settings.events import EventsSettings
from vaultd.settings.intake import IntakeSettings
from vaultd.settings.oidc import OidcSettings
from vaultd.settings.render import RenderSettings
from vaultd.settings.server import ServerSettings
from vaultd.settings.storage import StorageSettings
from vaultd.settings.viewers import ViewersSettings

__all__ = ["FIELDS", "OPTION_HELP", "ConfigError", "Field", "Settings", "load_settings",
           "read_config_file", "settings_from"]


class ConfigError(Exception):
    """Invalid configuration; the message is one line naming the setting."""


@dataclass(frozen=True)
class Settings(AuditSettings, OidcSettings, AuthSettings, EventsSettings, ViewersSettings,
               IntakeSettings, RenderSettings, StorageSettings, ServerSettings):
    """Every setting: the groups' fields (declared once each, in `vaultd.settings.*`), server
    first; and what is derived from them."""

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def local_blob_dir(self) -> Path:
        return Path(self.storage_local_dir) if self.storage_local_dir else self.data_path / "blobs"

    def backend_options(self) -> dict[str, str]:
        """The chosen backend's `storage.<name>.*` settings by their last part, and `data_dir`:
        what `backends.create_backend` passes to the backend's factory."""
        prefix = f"storage_{self.storage_backend}_"
        own = {f.name.removeprefix(prefix): str(getattr(self, f.name))
               for f in fields(self) if f.name.startswith(prefix)}
        return {"data_dir": self.data_dir, **own}

    @property
    def master_key_path(self) -> Path:
        return Path(self.master_key_file) if self.master_key_file else self.data_path / "master.key"

    def viewer_url(self, bound_port: int | None = None) -> str:
        if self.public_url:
            return self.public_url
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://{host}:{bound_port or self.port}"

    def __repr__(self) -> str:
        # The inline master key and the Azure connection string are secrets.
        hidden = {"master_key_value", "storage_azure_connection_string", "smtp_password"}
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown.append(f"{f.name}={'<hidden>' if f.name in hidden and value else repr(value)}")
        return f"Settings({', '.join(shown)})"


FIELDS: tuple[Field, ...] = declared(Settings)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{dotted}."))
        else:
            out[dotted] = value
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file into dotted keys; one-line errors."""
    try:
        with open(path, "rb") as f:
            return _flatten(tomllib.load(f))
    except FileNotFoundError as exc:
        raise ConfigError(f"config: file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {path} is not valid TOML ({exc})") from exc


def load_settings(
    file_values: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Defaults, then file values (dotted keys), then environment, then flags (dotted keys)."""
    file_values = dict(file_values or {})
    known = {f.key for f in FIELDS}
    unknown = sorted(set(file_values) - known)
    if unknown:
        raise ConfigError(f"config: unknown setting {unknown[0]!r}")
    env = env if env is not None else os.environ
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    values: dict[str, Any] = {}
    for field in FIELDS:
        raw, source = field.default, "default"
        if field.key in file_values:
            raw, source = file_values[field.key], "config file"
        if field.env and env.get(field.env) not in (None, ""):
            raw, source = env[field.env], field.env
        if field.key in flags:
            raw, source = flags[field.key], "command line"
        values[field.attr] = _parse(field, raw, source)
    return Settings(**values)


def _parse(field: Field, raw: Any, source: str) -> Any:
    try:
        return field.parse(raw)
    except (ValueError, TypeError) as exc:
        # Secrets never appear in the message, only which setting is wrong.
        raise ConfigError(f"config: {field.key} ({source}) is invalid: {exc}") from None


# The options vaultd and vault-admin share, with one help text each.
OPTION_HELP = {
    "data_dir": "data directory (default ./vault-data; env VAULTD_DATA_DIR)",
    "config": "TOML configuration file (see config/vaultd.toml)",
}


def settings_from(config_path: str | None, flags: Mapping[str, Any] | None = None) -> Settings:
    """What vaultd and vault-admin both do: the file named by --config (if any), the
    environment, then their command-line flags."""
    file_values = read_config_file(config_path) if config_path else {}
    return load_settings(file_values, flags=flags)
