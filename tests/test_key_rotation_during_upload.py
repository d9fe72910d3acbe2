"""`vault-admin master-key rotate --drop-old` while an upload is in flight: the upload keeps the
data key it began with and wraps it when it writes its record, so it ends 201 under the new key
and downloads byte-identical; images keep their renditions readable after the old key goes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import render_fixtures as fx
from tests.access_log import file_record
from tests.http_helpers import create_link, upload_ok
from tests.inprocess import inprocess_vault
from tests.raw_posts import finish_post, start_post
from tests.vault_process import VaultProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # starts its own server (see docs/testing.md)


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("rotation") / "data",
                         VAULTD_RENDER_WORKERS="1") as vault:
        yield vault


def temporaries(server: VaultProcess) -> list[Any]:
    return list((server.data_dir / "blobs").glob(".tmp-*"))


def rotate_and_drop(server: VaultProcess, out: dict[str, Any]) -> None:
    out["result"] = server.admin_json("master-key", "rotate", "--drop-old")


def test_an_upload_in_flight_across_a_rotation_that_drops_its_key_is_stored_and_readable(
    server: VaultProcess,
) -> None:
    _, key = server.new_account()
    old_key_ids = server.admin_json("master-key", "rotate")["keyIds"]  # two keys in the ring
    data = fx.big_png()
    sent = len(data) // 10
    sock = start_post(server.port, "/v1/files", key, "image/png", data, sent=sent,
                      headers={"x-file-kind": "delivery"})
    wait_until(lambda: temporaries(server), what="the upload under way (its temporary blob)")
    rotation: dict[str, Any] = {}
    cli = threading.Thread(target=rotate_and_drop, args=(server, rotation))
    cli.start()
    while cli.is_alive():  # trickle the body while the rotation runs
        if sent < len(data) * 8 // 10:
            sock.sendall(data[sent:sent + 4096])
            sent += 4096
        cli.join(0.05)
    result = rotation["result"]
    assert result["keyIds"] == [result["currentKeyId"]]
    assert not set(old_key_ids) & set(result["keyIds"])  # every key the upload saw is gone
    status, created = finish_post(sock, data, sent)
    assert status == 201, created
    stored = file_record(server, created["id"])
    assert stored["blob"]["key"]["key_id"] == result["currentKeyId"]
    assert stored["rendition"]["key"]["key_id"] == result["currentKeyId"]
    with server.client(key) as api:
        assert_readable(api, server, created["id"], data)


def assert_readable(api: httpx.Client, server: VaultProcess, file_id: str, data: bytes) -> None:
    """Its page renders (from the rendition, for a large image) and it downloads as sent."""
    link = create_link(api, file_id)
    server.secrets.append(link["token"])
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
    response = api.get(f"/files/{file_id}/download")
    assert response.status_code == 200 and response.content == data


def test_an_image_uploaded_before_a_rotation_with_drop_old_still_renders(
    server: VaultProcess,
) -> None:
    _, key = server.new_account()
    data = fx.big_png()
    with server.client(key) as api:
        created = upload_ok(api, data, content_type="image/png", kind="delivery")
        before = file_record(server, created["id"])
        result = server.admin_json("master-key", "rotate", "--drop-old")
        after = file_record(server, created["id"])
        assert before["rendition"]["key"]["key_id"] not in result["keyIds"]
        assert after["rendition"]["key"]["key_id"] == result["currentKeyId"]
        assert_readable(api, server, created["id"], data)


def test_an_upload_that_starts_after_the_rotation_uses_the_new_key(server: VaultProcess) -> None:
    _, key = server.new_account()
    result = server.admin_json("master-key", "rotate", "--drop-old")
    with server.client(key) as api:
        created = upload_ok(api, fx.big_png((800, 600)), content_type="image/png")
    assert file_record(server, created["id"])["blob"]["key"]["key_id"] == result["currentKeyId"]
