"""SSRF: with `webhooks.allow_private_networks` off (the default, as in the shared vaultd), a
webhook URL on a loopback or private address is attempted and refused: the receiver sees nothing
and the delivery record says why."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from tests.webhook_receiver import running_receiver
from vaultd.services.webhook_http import RefusedAddress, refusal_reason, resolve_checked


def first_delivery(client: httpx.Client, endpoint_id: str) -> dict[str, Any]:
    deliveries = wait_until(
        lambda: client.get(f"/webhooks/{endpoint_id}/deliveries").json()["deliveries"],
        timeout=20, interval=0.1, what="a delivery attempt recorded")
    return dict(deliveries[-1])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_receiver_is_refused_and_sees_nothing(api: httpx.Client, host: str) -> None:
    with running_receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", host)
        created = api.post("/webhooks", json={"url": url, "events": ["file.uploaded"]})
        assert created.status_code == 201, created.text
        upload_ok(api, docs.pdf(1))
        delivery = first_delivery(api, created.json()["id"])
        # The attempt is recorded after it was refused, before any connection: nothing came.
        assert receiver.received == []
    assert delivery["ok"] is False and delivery["status"] is None
    assert delivery["error"].startswith(f"refused: {host} resolves to a loopback address ")
    assert delivery["error"].endswith("(webhooks.allow_private_networks is off)")


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
