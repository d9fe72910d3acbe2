"""A webhook's first attempt is immediate (Standard Webhooks): the process that queues an event
rings its deliverer (`services.common.doorbell`), which does not wait for its next poll. Here
the poll is a minute (the longest allowed), so only the ring can send the event in time; a
retry is not rung, and waits for the poll (or a stop's flush: tests/test_graceful_stop.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.inprocess import inprocess_vault
from tests.webhook_receiver import Reply, running_receiver
from tests.webhook_subscriptions import FAST_RETRIES, subscribe

pytestmark = pytest.mark.slow  # a vaultd of its own, and a wait for a retry not to come

MINUTE_POLL = {**FAST_RETRIES, "VAULTD_WEBHOOKS_POLL_SECONDS": "60"}


def test_an_upload_s_event_is_sent_at_once_and_its_retry_waits_for_the_poll(
        tmp_path: Path) -> None:
    with running_receiver() as receiver, inprocess_vault(tmp_path / "data", **MINUTE_POLL) as vault:
        receiver.reply = lambda n: Reply(status=503)  # every attempt fails: a retry is due
        _, key = vault.new_account()
        with vault.client(key) as api:
            subscribe(api, receiver, ["file.uploaded"], vault)
            started = time.monotonic()
            created = upload_ok(api, docs.pdf(pages=1))
            sent = receiver.wait_for(lambda seen: len(seen) >= 1, timeout=10)
            assert time.monotonic() - started < 5  # not a minute: the ring sent it
            assert sent[0].event["data"]["fileId"] == created["id"]
            assert sent[0].verified
            time.sleep(1.5)  # the retry (0.5 s) is due by now, and no ring announces it
            assert len(receiver.received) == 1


def test_an_endpoint_s_test_event_is_sent_at_once(tmp_path: Path) -> None:
    with running_receiver() as receiver, inprocess_vault(tmp_path / "data", **MINUTE_POLL) as vault:
        _, key = vault.new_account(plan="business")
        with vault.client(key) as api:
            endpoint = subscribe(api, receiver, ["file.uploaded"], vault)
            upload_ok(api, docs.pdf(pages=1))  # its round done, the loop waits a minute
            receiver.wait_for(lambda seen: len(seen) == 1, timeout=10)
            time.sleep(0.5)
            started = time.monotonic()
            sent = api.post(f"/webhooks/{endpoint['id']}/test")
            assert sent.status_code == 202, sent.text
            assert sent.json()["type"] == "webhook.test"
            assert sent.json()["messageId"].startswith("msg_")
            seen = receiver.wait_for(lambda seen: len(seen) == 2, timeout=10)
            assert time.monotonic() - started < 5  # not a minute: the ring sent it
            assert seen[1].event["type"] == "webhook.test" and seen[1].verified
