"""Prometheus metrics on their own listener: the figures move as pages, uploads and webhooks are
served, labels are route templates (never a token or an id), and the public port has no
/metrics."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import documents as docs
from tests.http_helpers import NO_ENDPOINT, assert_json_error, create_link, upload, upload_ok
from tests.vault_process import ROOT, VaultProcess, base_env, free_port, running_vault
from tests.waiting import wait_until
from tests.webhook_receiver import running_receiver

pytestmark = pytest.mark.slow

PAGE_ROUTE = "/v1/views/{}/pages/{}"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    env = {"VAULTD_METRICS_PORT": str(free_port()), "VAULTD_WEBHOOKS_POLL_SECONDS": "0.1",
           "VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true",
           "VAULTD_WEBHOOKS_RETRY_SCHEDULE": "3600"}
    with running_vault(tmp_path_factory.mktemp("metrics") / "data", **env) as server:
        yield server


def metrics_url(vault: VaultProcess) -> str:
    return f"http://127.0.0.1:{vault.env['VAULTD_METRICS_PORT']}/metrics"


def scrape(vault: VaultProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the scrape, by name and sorted labels, read by Prometheus' own parser."""
    response = httpx.get(metrics_url(vault), timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_the_public_port_has_no_metrics(vault: VaultProcess) -> None:
    assert_json_error(httpx.get(f"{vault.url}/metrics", timeout=10), 404, NO_ENDPOINT)


def test_the_metrics_listener_serves_nothing_else(vault: VaultProcess) -> None:
    assert_json_error(httpx.get(metrics_url(vault).replace("/metrics", "/v1/account"),
                                timeout=10), 404, NO_ENDPOINT)


def test_pages_served_move_the_request_and_render_figures(vault: VaultProcess,
                                                           api: httpx.Client) -> None:
    before = scrape(vault)
    file = upload_ok(api, docs.pdf(pages=2))
    link = create_link(api, file["id"])
    for page in (1, 2, 1):
        assert api.get(f"/views/{link['token']}/pages/{page}").status_code == 200
    after = scrape(vault)
    ok = {"route": PAGE_ROUTE, "method": "GET", "status": "200"}
    assert value(after, "vaultd_http_requests_total", **ok) - value(
        before, "vaultd_http_requests_total", **ok) == 3
    timing = {"route": PAGE_ROUTE, "method": "GET"}
    assert value(after, "vaultd_http_request_duration_seconds_count", **timing) - value(
        before, "vaultd_http_request_duration_seconds_count", **timing) == 3
    assert value(after, "vaultd_http_request_duration_seconds_sum", **timing) > value(
        before, "vaultd_http_request_duration_seconds_sum", **timing)
    # At least the three pages (the upload's validation renders too), each waited for. A
    # page's first view also queues its print (the placement mark) after the answer: its wait
    # is counted when it starts and its duration when it ends, so read once both are settled.
    def settled() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        now = scrape(vault)
        done = value(now, "vaultd_render_duration_seconds_count", outcome="done") - value(
            before, "vaultd_render_duration_seconds_count", outcome="done")
        waited = value(now, "vaultd_render_queue_wait_seconds_count") - value(
            before, "vaultd_render_queue_wait_seconds_count")
        return now if done == waited else None

    after = wait_until(settled, what="every render started has ended")
    renders = value(after, "vaultd_render_duration_seconds_count", outcome="done") - value(
        before, "vaultd_render_duration_seconds_count", outcome="done")
    assert renders >= 3
    assert value(after, "vaultd_render_worker_starts_total") >= 2
    assert value(after, "vaultd_render_queue_depth") == 0
    assert value(after, "vaultd_db_command_duration_seconds_count",
                 command="find", outcome="ok") > value(
        before, "vaultd_db_command_duration_seconds_count", command="find", outcome="ok")


def test_no_token_key_or_id_becomes_a_label(vault: VaultProcess, api: httpx.Client,
                                            account: tuple[str, str]) -> None:
    file = upload_ok(api, docs.pdf())
    link = create_link(api, file["id"])
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
    assert api.get(f"/views/{link['token']}/pages/7").status_code == 404
    assert api.get(f"/files/{file['id']}").status_code == 200
    assert httpx.get(f"{vault.url}/v/{link['token']}", timeout=10).status_code == 200
    text = httpx.get(metrics_url(vault), timeout=10).text
    for secret in (link["token"], file["id"], account[0], account[1]):
        assert secret not in text
    assert 'route="/v/{}"' in text and 'route="/v1/files/{}"' in text


def test_unknown_methods_and_paths_add_no_series(vault: VaultProcess, api: httpx.Client) -> None:
    assert api.request("BREW", "/files/coffee-pot-42").status_code in (404, 405)
    assert api.get("/no/such/place-9f8e7d").status_code == 404
    text = httpx.get(metrics_url(vault), timeout=10).text
    assert "BREW" not in text and "coffee-pot-42" not in text and "place-9f8e7d" not in text
    assert 'route="unmatched"' in text


def test_uploads_count_their_bytes_and_refusals_by_status(vault: VaultProcess,
                                                          api: httpx.Client) -> None:
    before = scrape(vault)
    data = docs.pdf()
    upload_ok(api, data)
    assert upload(api, b"not a document at all", content_type="text/plain").status_code == 415
    after = scrape(vault)
    assert value(after, "vaultd_upload_bytes_total") - value(
        before, "vaultd_upload_bytes_total") == len(data)
    assert value(after, "vaultd_upload_refusals_total", status="415") - value(
        before, "vaultd_upload_refusals_total", status="415") == 1


def test_sandbox_layers_are_reported_one_series_each(vault: VaultProcess) -> None:
    samples = scrape(vault)
    layers = {dict(labels)["layer"]: v for (name, labels), v in samples.items()
              if name == "vaultd_render_sandbox_layer_active"}
    reported = httpx.get(f"{vault.url}/healthz", timeout=10).json()["renderSandbox"]["layers"]
    reported.pop("server_not_dumpable")  # the server's own state, not a worker's layer
    assert layers == {name: float(active) for name, active in reported.items()}
    assert layers["clean_env"] == 1.0 and layers["rlimits"] == 1.0


def test_webhook_deliveries_and_the_oldest_pending_message_are_counted(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    before = scrape(vault)
    with running_receiver() as receiver:
        good = api.post("/webhooks", json={"url": receiver.url, "events": ["file.uploaded"]})
        assert good.status_code == 201
        vault.secrets.append(good.json()["secret"])
        dead = api.post("/webhooks", json={"url": f"http://127.0.0.1:{free_port()}/gone",
                                           "events": ["file.uploaded"]})
        assert dead.status_code == 201
        vault.secrets.append(dead.json()["secret"])
        upload_ok(api, docs.pdf())
        receiver.wait_for(lambda got: len(got) >= 1)

        def moved() -> dict | None:
            samples = scrape(vault)
            counts = [value(samples, "vaultd_webhook_deliveries_total", result=r) - value(
                before, "vaultd_webhook_deliveries_total", result=r) for r in ("success",
                                                                                "failure")]
            return samples if counts == [1, 1] else None

        samples = wait_until(moved, what="one success and one failure counted")
    # The failed message waits an hour for its retry: it is the oldest pending.
    assert value(samples, "vaultd_webhook_oldest_pending_seconds") > 0


def test_a_metrics_port_in_use_stops_vaultd_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "vaultd.main", "--port", "0", "--data-dir",
             str(tmp_path / "data")], cwd=ROOT, capture_output=True, text=True, timeout=120,
            env=base_env({"VAULTD_METRICS_PORT": str(port), "VAULTD_RENDER_WORKERS": "1"}))
    # Found once the database is up (the master key notice comes first), and cleaned up after.
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"vaultd: cannot listen for metrics on 127.0.0.1:{port}: Address already in use "
        "(set VAULTD_METRICS_PORT or VAULTD_METRICS_HOST)")
