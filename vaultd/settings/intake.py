"""What requests bring in: uploads (Office documents too) and leaked images to trace."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import boolean, integer, number


@dataclass(frozen=True)
class IntakeSettings:
    upload_max_bytes: int = setting(
        "upload.max_bytes", integer(1, 1 << 40), 26_214_400, "VAULTD_UPLOAD_MAX_BYTES",
        "Largest accepted upload in bytes (25 MiB).")
    upload_max_concurrent_per_account: int = setting(
        "upload.max_concurrent_per_account", integer(1, 1000), 4,
        "VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT",
        "Uploads one account may have in progress at once; the next gets 429.")
    upload_office: bool = setting(
        "upload.office", boolean, False, "VAULTD_UPLOAD_OFFICE",
        "true: accept DOCX, XLSX, PPTX, ODT, ODS and ODP, converted to PDF by a confined "
        "LibreOffice where it is installed; false (the spec's PDF/JPEG/PNG only): 415.")
    upload_office_timeout_seconds: float = setting(
        "upload.office_timeout_seconds", number(1, 3600), 60.0,
        "VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS",
        "A conversion's deadline for a file of up to 8 MiB, one more such period per further "
        "8 MiB (at most four); past it the converter is killed and the upload is a 422.")
    trace_max_concurrent_per_account: int = setting(
        "trace.max_concurrent_per_account", integer(1, 1000), 2,
        "VAULTD_TRACE_MAX_CONCURRENT_PER_ACCOUNT",
        "Leak traces one account may have in progress at once (each holds its image in "
        "memory); the next gets 429.")
    trace_max_images_per_hour_per_account: int = setting(
        "trace.max_images_per_hour_per_account", integer(1, 1_000_000), 600,
        "VAULTD_TRACE_MAX_IMAGES_PER_HOUR_PER_ACCOUNT",
        "Images one account may send to be traced in any hour (a multipart trace counts "
        "each of its images); past it, 429.")
    trace_placement_mark: bool = setting(
        "trace.placement_mark", boolean, True, "VAULTD_TRACE_PLACEMENT_MARK",
        "true: every word of the visible pattern is drawn up to a pixel off its place by a "
        "field keyed per page view, which a trace reads when the invisible mark was washed "
        "off (docs/leak-tracing.md, \"The placement mark\"); false: words in their places.")
