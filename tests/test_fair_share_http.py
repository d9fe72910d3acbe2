"""The fair share against a real vaultd (services.common.fair_share): an account calling without
pause is held only while another account's pages are being read, and its holds show in the
metrics. What that buys the reader (their page p95) is tests/test_scale_isolation.py's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import VaultProcess, free_port, running_vault

# A vaultd of its own, with a metrics port; `alone`: its time bounds want the machine
pytestmark = [pytest.mark.slow, pytest.mark.alone]

# The module's vaultd trusts loopback as its proxy: a reader elsewhere names its address in
# X-Forwarded-For, as a proxy would; the accounts' own calls come from 127.0.0.1.
PROXY = {"VAULTD_TRUSTED_PROXIES": "127.0.0.1/32"}
READER_ELSEWHERE = {"X-Forwarded-For": "198.51.100.20"}
CALLS = 80  # each owes 3x its time at the default share: a few dozen pass the 0.25 s burst
HELD = "vaultd_fair_share_held_total"
HELD_SECONDS = "vaultd_fair_share_held_seconds_total"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("fair") / "data",
                       VAULTD_METRICS_PORT=str(free_port()), **PROXY) as server:
        yield server


def held(vault: VaultProcess) -> dict[str, float]:
    url = f"http://127.0.0.1:{vault.env['VAULTD_METRICS_PORT']}/metrics"
    text = httpx.get(url, timeout=10).text
    return {s.name: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name in (HELD, HELD_SECONDS)}


def call_without_pause(vault: VaultProcess, key: str) -> list[float]:
    took = []
    with vault.client(key) as api:
        for _ in range(CALLS):
            started = time.perf_counter()
            response = api.get("/files?page=1&perPage=100")
            assert response.status_code == 200, response.text
            took.append(time.perf_counter() - started)
    return took


@pytest.fixture(scope="module")
def heavy(vault: VaultProcess) -> str:
    _, key = vault.new_account("Heavy Co")
    vault.secrets.append(key)
    with vault.client(key) as api:
        for _ in range(30):  # a listing with something in it
            upload_ok(api, docs.pdf())
    return key


def test_an_account_alone_is_never_held(vault: VaultProcess, heavy: str) -> None:
    time.sleep(1.1)  # no page of anyone in the last second
    before = held(vault)
    call_without_pause(vault, heavy)
    assert held(vault) == before


def test_beside_another_accounts_reader_it_is_held_within_bounds(
        vault: VaultProcess, heavy: str) -> None:
    _, key = vault.new_account("Reader Co")
    vault.secrets.append(key)
    with vault.client(key) as api:
        token = str(create_link(api, upload_ok(api, docs.pdf())["id"])["token"])
    stop, pages = threading.Event(), []

    def read() -> None:  # a viewer in the hosted viewer: the link's token, no key, elsewhere
        with httpx.Client(base_url=vault.url, timeout=30, headers=READER_ELSEWHERE) as reader:
            while not stop.is_set():
                started = time.perf_counter()
                assert reader.get(f"/v/{token}/pages/1").status_code == 200
                pages.append(time.perf_counter() - started)

    before = held(vault)
    thread = threading.Thread(target=read)
    thread.start()
    try:
        while not pages:
            time.sleep(0.01)
        took = call_without_pause(vault, heavy)
    finally:
        stop.set()
        thread.join(30)
    after = held(vault)
    assert after[HELD] > before[HELD], "no call of the heavy account was held"
    seconds = after[HELD_SECONDS] - before[HELD_SECONDS]
    assert seconds > 0.1, f"held {seconds:.3f} s in all"
    assert max(took) < 1.0, f"a held call took {max(took):.2f} s (each is held at most 0.5 s)"
    assert max(pages) < 1.0, f"a page waited {max(pages):.2f} s"


def test_an_account_reading_its_own_pages_over_the_api_holds_no_one(
        vault: VaultProcess, heavy: str) -> None:
    """The lever the fair share must not offer: one account reading its own pages with its key
    in a loop would otherwise hold every other account's API calls, and never its own."""
    _, key = vault.new_account("Self Reader Co")
    vault.secrets.append(key)
    with vault.client(key) as api:
        token = str(create_link(api, upload_ok(api, docs.pdf())["id"])["token"])
    vault.secrets.append(token)
    stop, pages = threading.Event(), []

    def read_own_pages() -> None:
        with vault.client(key) as reader:
            while not stop.is_set():
                assert reader.get(f"/views/{token}/pages/1").status_code == 200
                pages.append(1)

    time.sleep(1.1)  # no viewer's page of anyone in the last second
    before = held(vault)
    thread = threading.Thread(target=read_own_pages)
    thread.start()
    try:
        while not pages:
            time.sleep(0.01)
        call_without_pause(vault, heavy)
    finally:
        stop.set()
        thread.join(30)
    assert held(vault) == before, "another account's calls were held for self-read pages"


def test_an_account_reading_its_own_link_in_the_hosted_viewer_holds_no_one(
        vault: VaultProcess, heavy: str) -> None:
    """The same lever through the hosted viewer: the account makes a link with its key and
    reads its pages with the token alone, from where its calls come from (as a member's Preview
    is read from their browser). Those pages are the account's own reading, not a viewer's."""
    _, key = vault.new_account("Own Viewer Co")
    vault.secrets.append(key)
    with vault.client(key) as api:
        token = str(create_link(api, upload_ok(api, docs.pdf())["id"])["token"])
    vault.secrets.append(token)
    stop, pages = threading.Event(), []

    def read_own_link() -> None:
        with httpx.Client(base_url=vault.url, timeout=30) as reader:  # from 127.0.0.1
            while not stop.is_set():
                assert reader.get(f"/v/{token}/pages/1").status_code == 200
                pages.append(1)

    time.sleep(1.1)  # no viewer's page of anyone in the last second
    before = held(vault)
    thread = threading.Thread(target=read_own_link)
    thread.start()
    try:
        while not pages:
            time.sleep(0.01)
        call_without_pause(vault, heavy)
    finally:
        stop.set()
        thread.join(30)
    assert len(pages) > 1, "the account read none of its own pages beside the calls"
    assert held(vault) == before, "another account's calls were held for its own link's pages"
