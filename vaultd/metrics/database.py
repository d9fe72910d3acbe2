"""MongoDB round-trip times, from PyMongo's command monitoring."""

from __future__ import annotations

from pymongo import monitoring

from vaultd.metrics.registry import Metrics


class CommandTimer(monitoring.CommandListener):
    """Observes each command's duration as the driver measured it (no state of our own)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._observe(event.command_name, "ok", event.duration_micros)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._observe(event.command_name, "error", event.duration_micros)

    def _observe(self, command: str, outcome: str, micros: int) -> None:
        self.metrics.db_seconds.labels(command=command, outcome=outcome).observe(micros / 1e6)


def watch_database(metrics: Metrics) -> None:
    """Registered process-wide, before the client is made: every client made after it reports
    (vaultd makes one). Called only when the metrics listener is on."""
    monitoring.register(CommandTimer(metrics))
