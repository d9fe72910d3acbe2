"""The render pool: workers, their sandbox and limits, and the fair queue's caps."""

from __future__ import annotations

import os
from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import choice, integer, number


@dataclass(frozen=True)
class RenderSettings:
    render_workers: int = setting(
        "render.workers", integer(1, 256), os.cpu_count() or 1, "VAULTD_RENDER_WORKERS",
        "Render worker processes.")
    render_queue_size: int = setting(
        "render.queue_size", integer(0, 10_000), 256, "VAULTD_RENDER_QUEUE_SIZE",
        "Renders allowed to wait for a worker, all accounts together, before requests get 503.")
    render_timeout_seconds: float = setting(
        "render.timeout_seconds", number(0.5, 600), 30.0, "VAULTD_RENDER_TIMEOUT_SECONDS",
        "A render or validation running longer is killed and answered 503.")
    render_memory_limit_mb: int = setting(
        "render.memory_limit_mb", integer(128, 65_536), 2048, "VAULTD_RENDER_MEMORY_LIMIT_MB",
        "Address-space cap of each worker.")
    render_max_tasks_per_worker: int = setting(
        "render.max_tasks_per_worker", integer(0, 1_000_000), 2000,
        "VAULTD_RENDER_MAX_TASKS_PER_WORKER",
        "Recycle a worker after this many tasks (0: never).")
    render_sandbox: str = setting(
        "render.sandbox", choice("auto", "required"), "auto", "VAULTD_RENDER_SANDBOX",
        "auto: confine workers with every layer available, warn about the rest; "
        "required: refuse to start unless every layer is active.")
    render_long_side: int = setting(
        "render.long_side", integer(200, 4000), 1600, "VAULTD_RENDER_LONG_SIDE",
        "Long side of a rendered page, in pixels.")
    render_max_pixels: int = setting(
        "render.max_pixels", integer(40_000, 16_000_000), 4_000_000, "VAULTD_RENDER_MAX_PIXELS",
        "Upper bound on the pixels of one rendered page.")
    render_max_per_link: int = setting(
        "render.max_per_link", integer(1, 10_000), 64, "VAULTD_RENDER_MAX_PER_LINK",
        "Pages of one view link waiting for a worker; more get 429 + Retry-After.")
    render_max_per_ip: int = setting(
        "render.max_per_ip", integer(1, 10_000), 64, "VAULTD_RENDER_MAX_PER_IP",
        "Pages for one viewer IP of one account waiting for a worker; more get 429 + Retry-After.")
    render_max_waiting_per_account: int = setting(
        "render.max_waiting_per_account", integer(0, 10_000), 0,
        "VAULTD_RENDER_MAX_WAITING_PER_ACCOUNT",
        "Renders of one account waiting for a worker; more get 429 + Retry-After. "
        "0: half of render.queue_size (at least 1), so one account never fills the queue.")
    render_max_running_per_account: int = setting(
        "render.max_running_per_account", integer(0, 256), 0,
        "VAULTD_RENDER_MAX_RUNNING_PER_ACCOUNT",
        "Workers one account may hold at once; 0: workers - 1 (at least 1), one kept for others.")
    render_timeout_penalty: int = setting(
        "render.timeout_penalty", integer(0, 1000), 4, "VAULTD_RENDER_TIMEOUT_PENALTY",
        "Turns an account is passed over in the render queue per render that timed out.")
    render_page_cache_mb: int = setting(
        "render.page_cache_mb", integer(0, 65_536), 128, "VAULTD_RENDER_PAGE_CACHE_MB",
        "Rendered pages (before the watermark) each worker keeps in memory (0: none).")
