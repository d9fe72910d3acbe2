"""The per-account rate of leak traces (trace.max_images_per_hour_per_account): images traced
in any hour, each image of a multipart trace counted; past it 429 with Retry-After, for that
account only."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.http_helpers import assert_json_error
from tests.inprocess import inprocess_vault
from tests.trace_helpers import blank_png, post_png
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.slow  # starts its own server (see docs/testing.md)

PER_HOUR = 3
LIMITED = re.compile(r"too many images traced for this account \(at most 3 an hour\); "
                     r"retry in \d+ s")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("trace-rate") / "data",
                         VAULTD_RENDER_WORKERS="1",
                         VAULTD_TRACE_MAX_IMAGES_PER_HOUR_PER_ACCOUNT=str(PER_HOUR)) as server:
        yield server


def _single(api: httpx.Client) -> httpx.Response:
    return post_png(api, blank_png())


def _batch(api: httpx.Client, count: int) -> httpx.Response:
    files = [("image", (f"{n}.png", blank_png(), "image/png")) for n in range(count)]
    return api.post("/trace", files=files, timeout=120)


def test_images_past_the_hourly_rate_get_429_for_that_account_only(
    vault: VaultProcess,
) -> None:
    _, key = vault.new_account()
    _, other_key = vault.new_account("Other Rate Co")
    with vault.client(key) as api, vault.client(other_key) as other:
        assert (_single(api).status_code, _batch(api, 1).status_code) == (200, 200)
        # Two images when one is left: refused whole, and not counted.
        refused = _batch(api, 2)
        assert_json_error(refused, 429, LIMITED)
        retry = int(refused.headers["Retry-After"])
        assert 3500 <= retry <= 3600
        assert refused.json()["error"].endswith(f"retry in {retry} s")
        assert _single(api).status_code == 200  # the third image of the hour
        assert_json_error(_single(api), 429, LIMITED)
        assert_json_error(_batch(api, 1), 429, LIMITED)
        # Another account's hour is its own.
        answers = [_single(other).status_code for _ in range(PER_HOUR)]
        assert answers == [200] * PER_HOUR
        assert_json_error(_single(other), 429, LIMITED)
