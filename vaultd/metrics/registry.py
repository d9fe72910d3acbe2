"""Every metric vaultd exposes, in a registry of its own (built in the composition root)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from render.sandbox.layers import Layer

# Seconds: from a cached page (a few ms) to the render timeout (30 s by default).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
DB_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Metrics:
    """The metrics of one vaultd process. A fresh registry each, not prometheus_client's global
    one: tests build several apps in one process, and only what is listed here is exposed."""

    def __init__(self, per_account: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.per_account = per_account
        account = ["account"] if per_account else []
        r = self.registry
        self.requests = Counter(
            "vaultd_http_requests", "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"], registry=r)
        self.request_seconds = Histogram(
            "vaultd_http_request_duration_seconds", "Time to answer a request, by route template",
            ["route", "method"], buckets=LATENCY_BUCKETS, registry=r)
        self.render_queue_depth = Gauge(
            "vaultd_render_queue_depth", "Render tasks waiting for a worker", registry=r)
        self.render_wait_seconds = Histogram(
            "vaultd_render_queue_wait_seconds", "Time a render task waited for a worker",
            buckets=LATENCY_BUCKETS, registry=r)
        self.render_seconds = Histogram(
            "vaultd_render_duration_seconds",
            "Time a worker spent on a task, by outcome (done, timeout, crash)",
            ["outcome", *account], buckets=LATENCY_BUCKETS, registry=r)
        self.worker_starts = Counter(
            "vaultd_render_worker_starts", "Render worker processes started", registry=r)
        self.worker_crashes = Counter(
            "vaultd_render_worker_crashes",
            "Render workers that died on their own (crash, OOM kill, death before READY)",
            registry=r)
        self.sandbox_layers = Gauge(
            "vaultd_render_sandbox_layer_active",
            "1 when the latest worker reported this sandbox layer active, else 0",
            ["layer"], registry=r)
        self.upload_bytes = Counter(
            "vaultd_upload_bytes", "Bytes of files stored by uploads that succeeded",
            account, registry=r)
        self.upload_refusals = Counter(
            "vaultd_upload_refusals", "Uploads refused or failed, by HTTP status",
            ["status"], registry=r)
        self.webhook_deliveries = Counter(
            "vaultd_webhook_deliveries", "Webhook delivery attempts, by result (success, failure)",
            ["result"], registry=r)
        self.webhook_oldest_pending = Gauge(
            "vaultd_webhook_oldest_pending_seconds",
            "Age of the oldest webhook message not yet delivered (0: none)", registry=r)
        self.fair_share_held = Counter(
            "vaultd_fair_share_held", "API calls and bulk steps held for another account's "
            "readers (server.fair_share)", registry=r)
        self.fair_share_held_seconds = Counter(
            "vaultd_fair_share_held_seconds", "Seconds they were held, in all", registry=r)
        self.db_seconds = Histogram(
            "vaultd_db_command_duration_seconds",
            "MongoDB command round trips, by command name and outcome (ok, error)",
            ["command", "outcome"], buckets=DB_BUCKETS, registry=r)
        for layer in Layer:
            self.sandbox_layers.labels(layer=str(layer.name).lower())

    def account_labels(self, account: str | None) -> dict[str, str]:
        """The account label, when the operator turned per-account labels on."""
        return {"account": account or "none"} if self.per_account else {}

    def request_done(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route=route, method=method, status=str(status)).inc()
        self.request_seconds.labels(route=route, method=method).observe(seconds)

    def upload_done(self, status: int, stored_bytes: int, account: str | None) -> None:
        if status < 400:
            counter = self.upload_bytes
            if self.per_account:  # a metric declared without labels takes no labels() call
                counter = counter.labels(**self.account_labels(account))
            counter.inc(stored_bytes)
        else:
            self.upload_refusals.labels(status=str(status)).inc()

    def fair_share_hold(self, seconds: float) -> None:
        self.fair_share_held.inc()
        self.fair_share_held_seconds.inc(seconds)

    def webhook_attempted(self, ok: bool) -> None:
        self.webhook_deliveries.labels(result="success" if ok else "failure").inc()
