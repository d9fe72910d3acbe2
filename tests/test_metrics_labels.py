"""Metric labels stay few: route templates, never a path; an account only when the operator
asks for it (metrics.per_account)."""

from __future__ import annotations

import re

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vaultd.config import load_settings
from vaultd.metrics import Metrics
from vaultd.metrics.render_pool import PoolMetrics
from vaultd.web.app import all_routes, route_template


def labels_of(metrics: Metrics, name: str) -> list[dict[str, str]]:
    text = generate_latest(metrics.registry).decode()
    return [s.labels for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name]


def test_route_templates_keep_the_shape_and_drop_every_pattern() -> None:
    assert route_template(r"/v1/views/([^/]+)/pages/([^/]+)") == "/v1/views/{}/pages/{}"
    assert route_template(r"/v1/files/([^/]+)/download$") == "/v1/files/{}/download"
    for pattern, _ in all_routes():
        assert not re.search(r"[()\[\]^$+*?\\]", route_template(pattern)), pattern


def test_no_account_label_by_default() -> None:
    metrics = Metrics(load_settings(env={}).metrics_per_account)
    metrics.upload_done(201, 1234, "acct_7f3a")
    PoolMetrics(metrics).task_finished(0.2, "done", "acct_7f3a")
    assert labels_of(metrics, "vaultd_upload_bytes_total") == [{}]
    assert labels_of(metrics, "vaultd_render_duration_seconds_count") == [{"outcome": "done"}]
    assert "acct_7f3a" not in generate_latest(metrics.registry).decode()


def test_per_account_labels_when_turned_on() -> None:
    settings = load_settings(env={"VAULTD_METRICS_PER_ACCOUNT": "true"})
    metrics = Metrics(settings.metrics_per_account)
    metrics.upload_done(201, 1234, "acct_7f3a")
    PoolMetrics(metrics).task_finished(0.2, "timeout", "acct_7f3a")
    assert labels_of(metrics, "vaultd_upload_bytes_total") == [{"account": "acct_7f3a"}]
    assert labels_of(metrics, "vaultd_render_duration_seconds_count") == [
        {"outcome": "timeout", "account": "acct_7f3a"}]


def test_refused_uploads_count_by_status_and_store_no_bytes() -> None:
    metrics = Metrics()
    metrics.upload_done(413, 0, "acct_7f3a")
    metrics.upload_done(413, 0, None)
    samples = {s.labels["status"]: s.value for family in text_string_to_metric_families(
        generate_latest(metrics.registry).decode()) for s in family.samples
        if s.name == "vaultd_upload_refusals_total"}
    assert samples == {"413": 2.0}
    assert labels_of(metrics, "vaultd_upload_bytes_total") == [{}]


def test_the_metrics_port_is_off_unless_set() -> None:
    assert load_settings(env={}).metrics_port == 0
    assert load_settings(env={"VAULTD_METRICS_PORT": ""}).metrics_port == 0
    assert load_settings(env={"VAULTD_METRICS_PORT": "9100"}).metrics_port == 9100
