"""The render pool's figures: its observer hooks, and gauges read from it at each scrape."""

from __future__ import annotations

from collections.abc import Callable

from render.pool.render_pool import RenderPool
from render.sandbox.layers import Layer
from vaultd.metrics.registry import Metrics


class PoolMetrics:
    """A `render.pool.observer.PoolObserver` that feeds `Metrics`."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def worker_started(self) -> None:
        self.metrics.worker_starts.inc()

    def worker_crashed(self) -> None:
        self.metrics.worker_crashes.inc()

    def task_started(self, waited_seconds: float) -> None:
        self.metrics.render_wait_seconds.observe(max(0.0, waited_seconds))

    def task_finished(self, seconds: float, outcome: str, account: str | None) -> None:
        labels = self.metrics.account_labels(account)
        self.metrics.render_seconds.labels(outcome=outcome, **labels).observe(max(0.0, seconds))


def watch_pool(metrics: Metrics, pool: RenderPool) -> None:
    """Queue depth and sandbox layers are read from the pool when scraped, never stale."""
    metrics.render_queue_depth.set_function(lambda: pool.queued)
    for layer in Layer:
        gauge = metrics.sandbox_layers.labels(layer=str(layer.name).lower())
        gauge.set_function(layer_reader(pool, layer))


def layer_reader(pool: RenderPool, layer: Layer) -> Callable[[], float]:
    return lambda: float(bool((pool.sandbox.layers or 0) & layer))
