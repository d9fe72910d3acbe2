"""Pages of a link over the API (Option B): who may have one, and what is logged when one is
refused or not served."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests import documents as docs
from tests.access_log import page_entries
from tests.http_helpers import (
    INVALID_KEY,
    LINK_GONE,
    STORED_FILE_CORRUPT,
    assert_json_error,
    create_link,
    upload_ok,
)
from tests.vault_process import VaultProcess


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict:
    return upload_ok(api, docs.pdf(pages=3), name="Board minutes.pdf")


@pytest.mark.parametrize("page", ["1", "99", "abc"])
def test_a_bad_key_on_a_page_is_401_before_anything_else_and_logs_nothing(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict, page: str
) -> None:
    # The key is judged before anything else is done for the page (services.pages.page_path).
    link = create_link(api, pdf_file["id"])
    account_id, key = vault.new_account("Revoked Ltd")
    vault.admin("keys", "revoke", vault.admin_json("keys", "list", account_id)[0]["id"])
    bad_keys = ["sd_live_" + "A" * 43, key, "not-a-key"]  # unknown, revoked, malformed
    for bad in bad_keys:
        for token in [link["token"], "A" * 43]:
            response = api.get(f"/views/{token}/pages/{page}",
                               headers={"Authorization": f"Bearer {bad}"})
            assert_json_error(response, 401, INVALID_KEY)
    assert page_entries(api, pdf_file["id"]) == []
    assert api.get(f"/views/{link['token']}/pages/1").status_code == 200
    assert len(page_entries(api, pdf_file["id"])) == 1


def test_keys_are_judged_alike_right_after_a_page_of_the_same_link(
    vault: VaultProcess, api: httpx.Client, pdf_file: dict
) -> None:
    # A page served a moment ago leaves its link kept for a second; the next page then reads
    # the key and the link in one round trip (api_keys.check_key), which must judge the same.
    link = create_link(api, pdf_file["id"])
    _, other = vault.new_account("Snoop Inc")
    revoked_account, revoked = vault.new_account("Revoked Ltd")
    vault.admin("keys", "revoke", vault.admin_json("keys", "list", revoked_account)[0]["id"])
    path = f"/views/{link['token']}/pages/1"
    bad_keys = [(other, 404, LINK_GONE), (revoked, 401, INVALID_KEY),
                ("sd_live_" + "A" * 43, 401, INVALID_KEY), ("not-a-key", 401, INVALID_KEY)]
    for bad, status, message in bad_keys:
        assert api.get(path).status_code == 200
        assert_json_error(api.get(path, headers={"Authorization": f"Bearer {bad}"}), status,
                          message)
    assert len(page_entries(api, pdf_file["id"])) == len(bad_keys)
    assert api.delete(f"/views/{link['token']}").status_code == 204
    assert_json_error(api.get(path), 404, LINK_GONE)


def test_a_revoke_during_a_slow_render_stops_that_page_and_leaves_no_entry(
    vault: VaultProcess, account: tuple[str, str]
) -> None:
    # The slow page takes over a second to draw: the link is read again before it is sent.
    with vault.client(account[1]) as api:
        slow = upload_ok(api, docs.slow_pdf())
        link = create_link(api, slow["id"])
        vault.secrets.append(link["token"])
        answers: list[httpx.Response] = []
        reader = threading.Thread(
            target=lambda: answers.append(api.get(f"/views/{link['token']}/pages/1")))
        reader.start()
        threading.Event().wait(0.3)
        with vault.client(account[1]) as other:
            assert other.delete(f"/views/{link['token']}").status_code == 204
        reader.join(60)
        assert_json_error(answers[0], 404, LINK_GONE)
        assert page_entries(api, slow["id"]) == []


def test_a_page_that_fails_to_render_leaves_no_log_entry(
    vault: VaultProcess, api: httpx.Client
) -> None:
    created = upload_ok(api, docs.pdf(pages=30))
    link = create_link(api, created["id"])
    path = vault.data_dir / "blobs" / created["id"]
    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0x01  # the final chunk, checked when a worker opens the document
    path.write_bytes(bytes(blob))
    assert_json_error(api.get(f"/views/{link['token']}/pages/2"), 500, STORED_FILE_CORRUPT)
    assert page_entries(api, created["id"]) == []
