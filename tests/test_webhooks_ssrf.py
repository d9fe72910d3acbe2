"""SSRF: with `webhooks.allow_private_networks` off (the default, as in the shared vaultd), a
webhook URL on a loopback or private address is attempted and refused: the receiver sees nothing,
the tenant's delivery record says `refused address`, and vaultd's log says why. IPv6 forms that
carry an internal IPv4 address (6to4, Teredo, NAT64, IPv4-compatible) and site-local addresses
are refused as well."""

from __future__ import annotations

import asyncio
import ipaddress
from datetime import UTC, datetime

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess
from tests.webhook_attempts import failure_logged, first_delivery
from tests.webhook_receiver import running_receiver
from vaultd.db import Db
from vaultd.services.webhooks import delivery_numbers
from vaultd.services.webhooks.webhook_failures import Failure, tenant_error
from vaultd.services.webhooks.webhook_http import (
    RefusedAddress,
    classify,
    refusal_reason,
    resolve_checked,
)


def attempt_refused(api: httpx.Client, vault: VaultProcess, host: str) -> str:
    """Register `host` (with a live receiver's port), send an event: the attempt is refused
    before any connection, the tenant sees the category; returns the logged detail."""
    with running_receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", host)
        created = api.post("/webhooks", json={"url": url, "events": ["file.uploaded"]})
        assert created.status_code == 201, created.text
        vault.secrets.append(created.json()["secret"])
        upload_ok(api, docs.pdf(1))
        delivery = first_delivery(api, created.json()["id"])
        # The attempt is recorded after it was refused, before any connection: nothing came.
        assert receiver.received == []
    assert (delivery["ok"], delivery["status"], delivery["error"]) == \
        (False, None, "refused address")
    return failure_logged(vault, delivery, created.json()["id"])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_receiver_is_refused_and_sees_nothing(
        api: httpx.Client, vault: VaultProcess, host: str) -> None:
    detail = attempt_refused(api, vault, host)
    assert detail.startswith(f"refused: {host} resolves to a loopback address ")
    assert detail.endswith("(webhooks.allow_private_networks is off)")


@pytest.mark.parametrize(("host", "reason"), [
    ("[2002:7f00:1::1]", "6to4 address 2002:7f00:1::1 carrying the loopback address 127.0.0.1"),
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "Teredo address "
     "2001:0:4136:e378:8000:63bf:80ff:fffe carrying the loopback address 127.0.0.1"),
    ("[64:ff9b::7f00:1]", "NAT64 address 64:ff9b::7f00:1 carrying the loopback address "
     "127.0.0.1"),
    ("[::127.0.0.1]", "IPv4-compatible address ::7f00:1 carrying the loopback address "
     "127.0.0.1"),
    ("[fec0::1]", "site-local address fec0::1"),
])
def test_ipv6_forms_of_internal_addresses_are_refused(
        api: httpx.Client, vault: VaultProcess, host: str, reason: str) -> None:
    detail = attempt_refused(api, vault, host)
    assert detail == (f"refused: {host.strip('[]')} resolves to a {reason} "
                      "(webhooks.allow_private_networks is off)")


def test_a_name_that_does_not_resolve_is_the_same_category() -> None:
    # Whether an internal name exists is the operator's business: the tenant sees no difference
    # (no lookup here: the test machine may send only loopback traffic).
    failure = classify(RefusedAddress("refused: db.internal does not resolve"))
    assert failure == Failure("refused address", "refused: db.internal does not resolve")


@pytest.mark.parametrize(("address", "reason"), [
    ("169.254.169.254", "link-local address 169.254.169.254"),  # cloud metadata
    ("10.1.2.3", "private address 10.1.2.3"),
    ("192.168.0.1", "private address 192.168.0.1"),
    ("100.100.100.200", "special-use address 100.100.100.200"),  # shared space, Alibaba metadata
    ("::1", "loopback address ::1"),
    ("fd00:ec2::254", "private address fd00:ec2::254"),  # AWS metadata over IPv6
    ("::ffff:127.0.0.1", "loopback address 127.0.0.1"),  # IPv4-mapped
    ("0.0.0.0", "private address 0.0.0.0"),
    ("224.0.0.1", "multicast address 224.0.0.1"),
    ("93.184.216.34", None),
    ("2606:4700::1111", None),
    ("2002:a00:1::", "6to4 address 2002:a00:1:: carrying the private address 10.0.0.1"),
    ("2002:808:808::1", None),  # 6to4 carrying a public address
    ("64:ff9b::a9fe:a9fe", "NAT64 address 64:ff9b::a9fe:a9fe carrying the link-local address "
     "169.254.169.254"),
    ("64:ff9b::808:808", None),  # NAT64 of a public address: the translator's job
    ("::808:808", "reserved address ::808:808"),  # IPv4-compatible: deprecated, even if public
    ("fec0:ec2::254", "site-local address fec0:ec2::254"),
])
def test_special_use_addresses_are_named(address: str, reason: str | None) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) == reason


def test_a_name_resolving_to_loopback_is_refused_before_connecting() -> None:
    with pytest.raises(RefusedAddress, match=r"refused: localhost resolves to a loopback"):
        asyncio.run(resolve_checked("localhost", 80, allow_private=False))
    assert asyncio.run(resolve_checked("127.0.0.1", 80, allow_private=True)) == \
        ipaddress.ip_address("127.0.0.1")


def test_the_shared_vaultd_keeps_private_networks_off(vault: VaultProcess) -> None:
    assert "VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS" not in vault.env


@pytest.mark.parametrize(("stored", "shown"), [
    (None, None),
    ("answered 500", "answered 500"),
    ("answered 302 (redirects are not followed)", "answered 302 (redirects are not followed)"),
    ("refused address", "refused address"),
    ("TLS failure", "TLS failure"),
    ("signing secret unavailable (master key)", "signing secret unavailable (master key)"),
    # Written before categories: the detail stays in the database, the tenant sees its category.
    ("refused: db.internal resolves to a private address 10.0.0.5 "
     "(webhooks.allow_private_networks is off)", "refused address"),
    ("host 'db.internal' does not resolve", "refused address"),
    ("timed out after 5 s", "no answer"),
    ("ConnectionRefusedError: [Errno 111] Connection refused", "no answer"),
    ("SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
     "TLS failure"),
])
def test_stored_errors_are_shown_as_their_category(stored: str | None, shown: str | None) -> None:
    assert tenant_error(stored) == shown


def test_an_attempt_recorded_before_categories_shows_only_its_category(
        api: httpx.Client, vault: VaultProcess) -> None:
    created = api.post("/webhooks", json={"url": "https://example.com/h",
                                          "events": ["file.deleted"]})
    assert created.status_code == 201, created.text
    vault.secrets.append(created.json()["secret"])
    old_detail = ("refused: db.internal resolves to a private address 10.0.0.5 "
                  "(webhooks.allow_private_networks is off)")
    row = {"_id": "d" * 32, "messageId": "msg_old", "endpointId": created.json()["id"],
           "accountId": "acct", "type": "file.deleted", "attempt": 1,
           "at": datetime.now(UTC), "status": None, "ok": False, "durationMs": 3,
           "error": old_detail}

    async def recorded_before(db: Db) -> None:
        await db.webhook_deliveries.insert_one(row)  # type: ignore[arg-type]  # an old record
        # An upgrade's start-up numbers the attempts recorded before numbers existed.
        await delivery_numbers.number_endpoint_deliveries(db, created.json()["id"])

    vault.run_service(recorded_before)
    response = api.get(f"/webhooks/{created.json()['id']}/deliveries")
    assert response.status_code == 200
    [shown] = response.json()["deliveries"]
    assert shown["error"] == "refused address" and "10.0.0.5" not in response.text
