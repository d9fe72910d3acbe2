"""What owners learn: time-on-page batching and Standard Webhooks delivery."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import boolean, number, seconds_list


@dataclass(frozen=True)
class EventsSettings:
    webhooks_allow_private_networks: bool = setting(
        "webhooks.allow_private_networks", boolean, False, "VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS",
        "Deliver webhooks to private, loopback and link-local addresses (tests, intranets).")
    webhooks_retry_schedule: tuple[float, ...] = setting(
        "webhooks.retry_schedule", seconds_list,
        (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0),
        "VAULTD_WEBHOOKS_RETRY_SCHEDULE",
        "Seconds before each retry; the first attempt is immediate (Standard Webhooks).")
    analytics_flush_seconds: float = setting(
        "analytics.flush_seconds", number(0.0, 60.0), 0.25, "VAULTD_ANALYTICS_FLUSH_SECONDS",
        "How long a link's page views are added up before one write (0: every page at once).")
    webhooks_poll_seconds: float = setting(
        "webhooks.poll_seconds", number(0.05, 60.0), 1.0, "VAULTD_WEBHOOKS_POLL_SECONDS",
        "How often each vaultd process looks for webhook deliveries that are due.")
    webhooks_lease_seconds: float = setting(
        "webhooks.lease_seconds", number(6.0, 3600.0), 60.0, "VAULTD_WEBHOOKS_LEASE_SECONDS",
        "How long one process holds a delivery before another may take it over.")
    webhooks_hold_seconds: float = setting(
        "webhooks.hold_seconds", number(1.0, 3600.0), 60.0, "VAULTD_WEBHOOKS_HOLD_SECONDS",
        "Age after which a held outbox entry is settled by its record (sent, or dropped).")
    webhooks_keep_days: float = setting(
        "webhooks.keep_days", number(0.0001, 3650.0), 30.0, "VAULTD_WEBHOOKS_KEEP_DAYS",
        "Days finished outbox messages and delivery records are kept before pruning.")
    notifications_open_mail_window_seconds: float = setting(
        "notifications.open_mail_window_seconds", number(1.0, 86400.0), 600.0,
        "VAULTD_NOTIFICATIONS_OPEN_MAIL_WINDOW_SECONDS",
        "A member gets at most one first-open mail per window; later opens wait for its end.")
