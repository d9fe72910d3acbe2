"""`vault-admin rooms list ACCOUNT`, against the live vaultd's database."""

from __future__ import annotations

from tests.cli_errors import one_line_error
from tests.room_helpers import add_folder, create_room, room_link
from tests.vault_process import VaultProcess


def test_rooms_are_listed_with_their_items_and_live_links(vault: VaultProcess) -> None:
    account_id, key = vault.new_account("Roomy Ltd")
    assert vault.admin_json("rooms", "list", account_id) == []
    with vault.client(key) as api:
        first = create_room(api, "Board pack")
        second = create_room(api, "Tender 2027")
        add_folder(api, second["id"], "Bids")
        vault.secrets.append(room_link(api, second["id"])["token"])
    listed = vault.admin_json("rooms", "list", account_id)
    assert [(room["id"], room["name"], room["itemCount"], room["activeLinks"])
            for room in listed] == [(second["id"], "Tender 2027", 1, 1),
                                    (first["id"], "Board pack", 0, 0)]
    text = vault.admin("rooms", "list", account_id).stdout.splitlines()
    assert text[0].split() == ["id", "name", "createdAt", "itemCount", "activeLinks"]
    assert "Tender 2027" in text[1]


def test_an_unknown_account_is_a_one_line_error(vault: VaultProcess) -> None:
    assert one_line_error(vault.admin("rooms", "list", "nope", expect_ok=False)) \
        == "vault-admin: account not found"
