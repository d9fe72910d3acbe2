"""vaultd's settings: one frozen object built by one pure function.

Resolution order: built-in defaults, then the TOML file (`--config`), then environment variables,
then command-line flags. Every setting is declared once in `FIELDS` (`vaultd.settings_table`)
with its type, default, environment name and a line of help; unknown keys in the file are
rejected, and any invalid value stops start-up with one line that names the setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from vaultd.settings_table import FIELDS, Field

__all__ = ["FIELDS", "OPTION_HELP", "ConfigError", "Field", "Settings", "load_settings",
           "read_config_file", "settings_from"]


class ConfigError(Exception):
    """Invalid configuration; the message is one line naming the setting."""


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    data_dir: str
    public_url: str
    log_level: str
    mongodb_uri: str
    mongodb_database: str
    storage_backend: str
    storage_local_dir: str
    storage_azure_connection_string: str
    storage_azure_account_url: str
    storage_azure_container: str
    storage_s3_endpoint_url: str
    storage_s3_region: str
    storage_s3_bucket: str
    storage_s3_prefix: str
    storage_s3_addressing_style: str
    master_key_file: str
    master_key_value: str
    render_workers: int
    render_queue_size: int
    render_timeout_seconds: float
    render_memory_limit_mb: int
    render_max_tasks_per_worker: int
    render_sandbox: str
    render_long_side: int
    render_max_pixels: int
    render_max_per_link: int
    render_max_per_ip: int
    render_max_waiting_per_account: int
    render_max_running_per_account: int
    render_timeout_penalty: int
    render_page_cache_mb: int
    upload_max_bytes: int
    upload_max_concurrent_per_account: int
    upload_office: bool
    upload_office_timeout_seconds: float
    trace_max_concurrent_per_account: int
    trace_max_images_per_hour_per_account: int
    server_max_connections: int
    server_header_timeout_seconds: float
    server_body_idle_timeout_seconds: float
    server_shutdown_grace_seconds: float
    proxy_trusted: tuple[str, ...]
    webhooks_allow_private_networks: bool
    webhooks_retry_schedule: tuple[float, ...]
    analytics_flush_seconds: float
    webhooks_poll_seconds: float
    webhooks_lease_seconds: float
    webhooks_hold_seconds: float
    webhooks_keep_days: float
    watermark_timezone: str
    smtp_host: str
    smtp_port: int
    smtp_username: str
    smtp_password: str
    smtp_starttls: bool
    smtp_from: str
    metrics_host: str
    metrics_port: int
    metrics_per_account: bool

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
