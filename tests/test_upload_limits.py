"""The upload size limit (413), on a vaultd with a small limit so the edges are cheap to test."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, upload
from tests.inprocess import inprocess_vault
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

LIMIT = 300_000
TOO_LARGE = f"file larger than the {LIMIT} byte limit"


@pytest.fixture(scope="module")
def small_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("small") / "data",
                         VAULTD_UPLOAD_MAX_BYTES=str(LIMIT), VAULTD_RENDER_WORKERS="1") as server:
        yield server


@pytest.fixture
def small_api(small_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = small_vault.new_account()
    with small_vault.client(key) as client:
        yield client


def stored(client: httpx.Client) -> int:
    return client.get("/account").json()["usage"]["documents"]


def test_a_file_of_exactly_the_limit_is_accepted(small_api: httpx.Client) -> None:
    data = docs.png_of_size(LIMIT)
    response = upload(small_api, data, content_type="image/png")
    assert response.status_code == 201, response.text
    assert response.json()["size"] == LIMIT


def test_one_byte_over_the_limit_is_413_by_content_length(small_api: httpx.Client) -> None:
    body = assert_json_error(upload(small_api, docs.png_of_size(LIMIT + 1)), 413, TOO_LARGE)
    assert body == {"error": TOO_LARGE}
    assert stored(small_api) == 0


def test_one_byte_over_the_limit_is_413_when_chunked(small_api: httpx.Client) -> None:
    data = docs.png_of_size(LIMIT + 1)

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(data), 65536):
            yield data[start:start + 65536]

    assert_json_error(upload(small_api, pieces(), content_type="image/png"), 413, TOO_LARGE)
    assert stored(small_api) == 0


def test_a_client_that_sends_everything_before_reading_gets_the_413(
    small_vault: VaultProcess, small_api: httpx.Client
) -> None:
    key = small_api.headers["Authorization"]
    connection = http.client.HTTPConnection("127.0.0.1", small_vault.port, timeout=30)
    connection.request("POST", "/v1/files", body=b"%PDF-1.4\n" + b"0" * (LIMIT * 3 // 2),
                       headers={"Content-Type": "application/pdf", "Authorization": key})
    try:
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read()) == {"error": TOO_LARGE}
    finally:
        connection.close()


def test_an_absurd_content_length_is_refused_without_reading_it(
    small_vault: VaultProcess, small_api: httpx.Client
) -> None:
    key = small_api.headers["Authorization"]
    connection = http.client.HTTPConnection("127.0.0.1", small_vault.port, timeout=30)
    connection.putrequest("POST", "/v1/files")
    for name, value in {"Content-Type": "application/pdf", "Authorization": key,
                        "Content-Length": str(10 * 1024**3)}.items():
        connection.putheader(name, value)
    connection.endheaders()
    connection.send(b"%PDF-1.4\n")
    try:
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]
    finally:
        connection.close()
    assert stored(small_api) == 0
