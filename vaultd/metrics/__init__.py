"""Prometheus metrics, served on a listener of their own (`metrics.host`, `metrics.port`).

`registry.Metrics` holds every metric (docs/operations.md#metrics lists them); the render pool,
the request handlers, uploads, webhook delivery and the database driver feed it through small
hooks; `listener` serves the scrape. Labels are route templates, statuses and outcomes: never a
path, a token or an id (an account id only with `metrics.per_account`).
"""

from vaultd.metrics.registry import Metrics

__all__ = ["Metrics"]
