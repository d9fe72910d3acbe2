"""vaultd's settings: one frozen object built by one pure function.

Resolution order: built-in defaults, then the TOML file (`--config`), then environment variables,
then command-line flags. Every setting is declared once in `FIELDS` with its type, default,
environment name and a line of help; unknown keys in the file are rejected, and any invalid value
stops start-up with one line that names the setting.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from backends import BACKENDS


class ConfigError(Exception):
    """Invalid configuration; the message is one line naming the setting."""


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


def _int(low: int, high: int) -> Callable[[Any], int]:
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


def _float(low: float, high: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        number = float(value)
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
        return number

    return parse


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return str(value)

    return parse


def _url(value: Any) -> str:
    text = _str(value).rstrip("/")
    if text and not text.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return text


def _networks(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    cleaned = tuple(str(item).strip() for item in items if str(item).strip())
    for item in cleaned:
        ipaddress.ip_network(item, strict=False)
    return cleaned


def _path(value: Any) -> str:
    return _str(value)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _seconds_list(value: Any) -> tuple[float, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    delays = tuple(float(str(item).strip()) for item in items if str(item).strip())
    if not delays or any(not 0 <= d <= 86_400 for d in delays):
        raise ValueError("expected a list of 1 or more delays between 0 and 86400 seconds")
    return delays


FIELDS: tuple[Field, ...] = (
    Field("host", _str, "127.0.0.1", "VAULTD_HOST", "Address to listen on."),
    Field("port", _int(0, 65535), 8080, "VAULTD_PORT", "TCP port (0 picks a free one)."),
    Field(
        "data_dir",
        _path,
        "./vault-data",
        "VAULTD_DATA_DIR",
        "Directory for the embedded database, local blobs and the master key file.",
    ),
    Field(
        "public_url",
        _url,
        "",
        "VAULTD_PUBLIC_URL",
        "Viewer address used in link URLs ({viewer_url}); empty: http://host:port.",
    ),
    Field(
        "log_level",
        _choice("DEBUG", "INFO", "WARNING", "ERROR"),
        "INFO",
        "VAULTD_LOG_LEVEL",
        "Logging level.",
    ),
    Field(
        "mongodb.uri",
        _str,
        "",
        "VAULTD_MONGODB_URI",
        "MongoDB URI; empty starts the embedded SecantusDB under data_dir/db.",
    ),
    Field("mongodb.database", _str, "vaultd", "VAULTD_MONGODB_DATABASE", "Database name."),
    Field(
        "storage.backend",
        _choice(*BACKENDS),
        "local",
        "VAULTD_STORAGE_BACKEND",
        f"Blob backend: {' or '.join(BACKENDS)}.",
    ),
    Field(
        "storage.local_dir",
        _path,
        "",
        "VAULTD_STORAGE_LOCAL_DIR",
        "Directory of the local backend; empty: data_dir/blobs.",
    ),
    Field(
        "storage.azure.connection_string",
        _str,
        "",
        "VAULTD_AZURE_CONNECTION_STRING",
        "Azure Storage connection string.",
    ),
    Field(
        "storage.azure.account_url",
        _str,
        "",
        "VAULTD_AZURE_ACCOUNT_URL",
        "Azure account URL, used with a credential when no connection string is given.",
    ),
    Field(
        "storage.azure.container",
        _str,
        "vaultd",
        "VAULTD_AZURE_CONTAINER",
        "Azure container, created at start-up when missing.",
    ),
    Field(
        "master_key.file",
        _path,
        "",
        "VAULTD_MASTER_KEY_FILE",
        "Master keyring file; empty: data_dir/master.key (generated on first start, mode 0600).",
    ),
    Field(
        "master_key.value",
        _str,
        "",
        "VAULTD_MASTER_KEY",
        "Master keyring given inline (id:base64url entries); takes precedence over the file.",
    ),
    Field(
        "render.workers",
        _int(1, 256),
        os.cpu_count() or 1,
        "VAULTD_RENDER_WORKERS",
        "Render worker processes.",
    ),
    Field(
        "render.queue_size",
        _int(0, 10_000),
        16,
        "VAULTD_RENDER_QUEUE_SIZE",
        "Renders allowed to wait for a worker before requests get 503.",
    ),
    Field(
        "render.timeout_seconds",
        _float(0.5, 600),
        30.0,
        "VAULTD_RENDER_TIMEOUT_SECONDS",
        "A render or validation running longer is killed and answered 503.",
    ),
    Field(
        "render.memory_limit_mb",
        _int(128, 65_536),
        2048,
        "VAULTD_RENDER_MEMORY_LIMIT_MB",
        "Address-space cap of each worker.",
    ),
    Field(
        "render.max_tasks_per_worker",
        _int(0, 1_000_000),
        2000,
        "VAULTD_RENDER_MAX_TASKS_PER_WORKER",
        "Recycle a worker after this many tasks (0: never).",
    ),
    Field(
        "render.sandbox",
        _choice("auto", "required"),
        "auto",
        "VAULTD_RENDER_SANDBOX",
        "auto: confine workers with every layer available, warn about the rest; "
        "required: refuse to start unless every layer is active.",
    ),
    Field(
        "render.long_side",
        _int(200, 4000),
        1600,
        "VAULTD_RENDER_LONG_SIDE",
        "Long side of a rendered page, in pixels.",
    ),
    Field(
        "render.max_pixels",
        _int(40_000, 16_000_000),
        4_000_000,
        "VAULTD_RENDER_MAX_PIXELS",
        "Upper bound on the pixels of one rendered page.",
    ),
    Field(
        "render.max_per_link",
        _int(1, 10_000),
        4,
        "VAULTD_RENDER_MAX_PER_LINK",
        "Pages of one view link queued or rendering at once; more get 429 + Retry-After.",
    ),
    Field(
        "render.max_per_ip",
        _int(1, 10_000),
        8,
        "VAULTD_RENDER_MAX_PER_IP",
        "Pages for one viewer IP of one account in flight at once; more get 429 + Retry-After.",
    ),
    Field(
        "render.max_running_per_account",
        _int(0, 256),
        0,
        "VAULTD_RENDER_MAX_RUNNING_PER_ACCOUNT",
        "Workers one account may hold at once; 0: workers - 1 (at least 1), one kept for others.",
    ),
    Field(
        "render.timeout_penalty",
        _int(0, 1000),
        4,
        "VAULTD_RENDER_TIMEOUT_PENALTY",
        "Turns an account is passed over in the render queue per render that timed out.",
    ),
    Field(
        "render.page_cache_mb",
        _int(0, 65_536),
        128,
        "VAULTD_RENDER_PAGE_CACHE_MB",
        "Rendered pages (before the watermark) each worker keeps in memory (0: none).",
    ),
    Field(
        "upload.max_bytes",
        _int(1, 1 << 40),
        26_214_400,
        "VAULTD_UPLOAD_MAX_BYTES",
        "Largest accepted upload in bytes (25 MiB).",
    ),
    Field(
        "upload.max_concurrent_per_account",
        _int(1, 1000),
        4,
        "VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT",
        "Uploads one account may have in progress at once; the next gets 429.",
    ),
    Field(
        "server.max_connections",
        _int(16, 1_000_000),
        4096,
        "VAULTD_MAX_CONNECTIONS",
        "Open client connections; more are answered 503 and closed (lowered to fit NOFILE).",
    ),
    Field(
        "server.header_timeout_seconds",
        _float(0.5, 600),
        10.0,
        "VAULTD_HEADER_TIMEOUT_SECONDS",
        "Time allowed for a request's headers, and for an idle kept-alive connection.",
    ),
    Field(
        "server.body_idle_timeout_seconds",
        _float(0.5, 3600),
        30.0,
        "VAULTD_BODY_IDLE_TIMEOUT_SECONDS",
        "A request body that stops arriving this long is cut off (a slow steady one is not).",
    ),
    Field(
        "proxy.trusted",
        _networks,
        (),
        "VAULTD_TRUSTED_PROXIES",
        "Networks whose X-Forwarded-For / X-Real-IP the hosted viewer believes.",
    ),
    Field(
        "webhooks.allow_private_networks",
        _bool,
        False,
        "VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS",
        "Deliver webhooks to private, loopback and link-local addresses (tests, intranets).",
    ),
    Field(
        "webhooks.retry_schedule",
        _seconds_list,
        (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0),
        "VAULTD_WEBHOOKS_RETRY_SCHEDULE",
        "Seconds before each retry; the first attempt is immediate (Standard Webhooks).",
    ),
    Field(
        "webhooks.poll_seconds",
        _float(0.05, 60.0),
        1.0,
        "VAULTD_WEBHOOKS_POLL_SECONDS",
        "How often each vaultd process looks for webhook deliveries that are due.",
    ),
    Field(
        "webhooks.lease_seconds",
        _float(6.0, 3600.0),
        60.0,
        "VAULTD_WEBHOOKS_LEASE_SECONDS",
        "How long one process holds a delivery before another may take it over.",
    ),
    Field(
        "webhooks.hold_seconds",
        _float(1.0, 3600.0),
        60.0,
        "VAULTD_WEBHOOKS_HOLD_SECONDS",
        "Age after which a held outbox entry is settled by its record (sent, or dropped).",
    ),
    Field(
        "webhooks.keep_days",
        _float(0.0001, 3650.0),
        30.0,
        "VAULTD_WEBHOOKS_KEEP_DAYS",
        "Days finished outbox messages and delivery records are kept before pruning.",
    ),
)


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
    render_max_running_per_account: int
    render_timeout_penalty: int
    render_page_cache_mb: int
    upload_max_bytes: int
    upload_max_concurrent_per_account: int
    server_max_connections: int
    server_header_timeout_seconds: float
    server_body_idle_timeout_seconds: float
    proxy_trusted: tuple[str, ...]
    webhooks_allow_private_networks: bool
    webhooks_retry_schedule: tuple[float, ...]
    webhooks_poll_seconds: float
    webhooks_lease_seconds: float
    webhooks_hold_seconds: float
    webhooks_keep_days: float

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
        hidden = {"master_key_value", "storage_azure_connection_string"}
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
