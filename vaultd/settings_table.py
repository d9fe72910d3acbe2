"""The settings table: every setting of vaultd declared once, with its parser, default,
environment variable and a line of help. `vaultd.config` builds the frozen `Settings` from it;
docs/operations.md and config/vaultd.toml list the same rows (a test keeps them in step).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from backends import BACKENDS


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


def _timezone(value: Any) -> str:
    try:
        ZoneInfo(_str(value))
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError("must be an IANA time zone name such as Europe/Paris") from None
    return str(value)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _port_or_off(value: Any) -> int:
    return 0 if value in ("", None) else _int(0, 65535)(value)


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
        "storage.s3.endpoint_url",
        _url,
        "",
        "VAULTD_S3_ENDPOINT_URL",
        "S3-compatible endpoint; empty: AWS. Credentials come from the AWS chain, not settings.",
    ),
    Field("storage.s3.region", _str, "", "VAULTD_S3_REGION", "S3 region; empty: the AWS chain's."),
    Field(
        "storage.s3.bucket",
        _str,
        "",
        "VAULTD_S3_BUCKET",
        "S3 bucket (required with storage.backend s3), created at start-up when missing.",
    ),
    Field(
        "storage.s3.prefix",
        _str,
        "",
        "VAULTD_S3_PREFIX",
        "Key prefix of every blob in the bucket, ending in '/' (e.g. vaultd/); empty: none.",
    ),
    Field(
        "storage.s3.addressing_style",
        _choice("virtual", "path"),
        "virtual",
        "VAULTD_S3_ADDRESSING_STYLE",
        "virtual (bucket.host, AWS) or path (host/bucket, most S3-compatible servers).",
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
        256,
        "VAULTD_RENDER_QUEUE_SIZE",
        "Renders allowed to wait for a worker, all accounts together, before requests get 503.",
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
        64,
        "VAULTD_RENDER_MAX_PER_LINK",
        "Pages of one view link waiting for a worker; more get 429 + Retry-After.",
    ),
    Field(
        "render.max_per_ip",
        _int(1, 10_000),
        64,
        "VAULTD_RENDER_MAX_PER_IP",
        "Pages for one viewer IP of one account waiting for a worker; more get 429 + Retry-After.",
    ),
    Field(
        "render.max_waiting_per_account",
        _int(0, 10_000),
        0,
        "VAULTD_RENDER_MAX_WAITING_PER_ACCOUNT",
        "Renders of one account waiting for a worker; more get 429 + Retry-After. "
        "0: half of render.queue_size (at least 1), so one account never fills the queue.",
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
        "upload.office",
        _bool,
        False,
        "VAULTD_UPLOAD_OFFICE",
        "true: accept DOCX, XLSX, PPTX, ODT, ODS and ODP, converted to PDF by a confined "
        "LibreOffice where it is installed; false (the spec's PDF/JPEG/PNG only): 415.",
    ),
    Field(
        "upload.office_timeout_seconds",
        _float(1, 3600),
        60.0,
        "VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS",
        "A conversion's deadline for a file of up to 8 MiB, one more such period per further "
        "8 MiB (at most four); past it the converter is killed and the upload is a 422.",
    ),
    Field(
        "trace.max_concurrent_per_account",
        _int(1, 1000),
        2,
        "VAULTD_TRACE_MAX_CONCURRENT_PER_ACCOUNT",
        "Leak traces one account may have in progress at once (each holds its image in "
        "memory); the next gets 429.",
    ),
    Field(
        "trace.max_images_per_hour_per_account",
        _int(1, 1_000_000),
        600,
        "VAULTD_TRACE_MAX_IMAGES_PER_HOUR_PER_ACCOUNT",
        "Images one account may send to be traced in any hour (a multipart trace counts "
        "each of its images); past it, 429.",
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
        "server.shutdown_grace_seconds",
        _float(0, 3600),
        10.0,
        "VAULTD_SHUTDOWN_GRACE_SECONDS",
        "On SIGTERM or SIGINT: how long requests in flight may finish before the rest are cut.",
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
        "analytics.flush_seconds",
        _float(0.0, 60.0),
        0.25,
        "VAULTD_ANALYTICS_FLUSH_SECONDS",
        "How long a link's page views are added up before one write (0: every page at once).",
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
    Field("watermark.timezone", _timezone, "Europe/Paris", "VAULTD_WATERMARK_TIMEZONE",
          "IANA time zone of the time printed in the watermark, shown with its abbreviation."),
    Field("smtp.host", _str, "", "VAULTD_SMTP_HOST",
          "SMTP server for email codes; empty: links with verifyEmail are refused."),
    Field("smtp.port", _int(1, 65535), 587, "VAULTD_SMTP_PORT", "SMTP server port."),
    Field("smtp.username", _str, "", "VAULTD_SMTP_USERNAME", "SMTP login; empty: none."),
    Field("smtp.password", _str, "", "VAULTD_SMTP_PASSWORD", "SMTP password (a secret)."),
    Field("smtp.starttls", _bool, True, "VAULTD_SMTP_STARTTLS",
          "Upgrade the SMTP connection with STARTTLS before logging in."),
    Field("smtp.from", _str, "", "VAULTD_SMTP_FROM",
          "Sender address of code mails; empty: vaultd@<the SMTP host>."),
    Field("metrics.host", _str, "127.0.0.1", "VAULTD_METRICS_HOST",
          "Address of the Prometheus /metrics listener (never the public port)."),
    Field("metrics.port", _port_or_off, 0, "VAULTD_METRICS_PORT",
          "Port of the /metrics listener; 0 or empty: no metrics listener (the default)."),
    Field("metrics.per_account", _bool, False, "VAULTD_METRICS_PER_ACCOUNT",
          "Label render times and upload bytes by account id (one series per account)."),
)
