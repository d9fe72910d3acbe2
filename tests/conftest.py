"""Shared fixtures: one real vaultd (embedded SecantusDB, local blobs, real render pool) per
session, in the test process (`tests.inprocess`: no test of it signals or measures the server's
process), a fresh account and key per test, and a check that no secret reached the server log;
the session's Azurite and moto server for the modules that use them; the worker's shared
database server (`tests.worker_database`) emptied after each module and stopped at the end;
one TLS context per process for the tests' httpx clients (`tests.tls_context`).
The `forensic` and `long` modules count as `slow` (out of the fast loop), a module of slow tests
costly to collect is not collected where they would all be deselected, every test has a node id
of its own, the costliest modules start first (tests/suite_tiers.py), and the fast loop's
Hypothesis profile draws fewer examples (docs/testing.md, "The fast loop")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import hypothesis_profiles  # noqa: F401 - registers the fast loop's profile
from tests.blob_helpers import encrypt, pattern
from tests.inprocess import inprocess_vault
from tests.mail_server import MailServer
from tests.suite_tiers import LONG, SLOW_ONLY, deselects_slow_only, module_of, start_rank
from tests.tls_context import share_default_context
from tests.vault_process import VaultProcess
from tests.worker_database import WORKER_DATABASE
from vaultd.crypto.blob_format import CHUNK_SIZE, blob_context, new_data_key

if TYPE_CHECKING:
    from tests.azurite import Azurite
    from tests.moto_server import MotoServer

share_default_context()  # one TLS context per process for the tests' httpx clients


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A module of `SLOW_ONLY` is not even imported by a run that would deselect all its tests.
    if not collection_path.is_relative_to(config.rootpath):
        return None
    module = collection_path.relative_to(config.rootpath).as_posix()
    if module in SLOW_ONLY and deselects_slow_only(config.option.markexpr):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A forensic module's CPU is the leak reading's (numpy, Pillow, PDFium in the test
    # process): it belongs in the whole suite, and `-m "not slow"` (the fast loop) leaves it out.
    # A `long` module (tests/suite_tiers.py) is left out of CI's run, so out of the fast loop too.
    for item in items:
        _own_id(item)
        if item.get_closest_marker("forensic") is not None:
            item.add_marker(pytest.mark.slow)
        if module_of(item.nodeid) in LONG:
            item.add_marker(pytest.mark.long)
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: start_rank(item.nodeid))  # stable: a module's tests keep order


def _own_id(item: pytest.Item) -> None:
    """Schemathesis names each route's test `name[GET /files]` but, on pytest 9, leaves its node
    id without the route, so all 70 share one id; pytest-xdist hands tests out by id, and ran
    one of the 70. The id takes the route, as a parametrized test's does."""
    if isinstance(item, pytest.Function) and item.name != item.originalname \
            and item.nodeid.endswith(f"::{item.originalname}"):
        route = item.name.removeprefix(item.originalname)[1:-1]
        item._id = item.parent.id.child(item.originalname).with_params(route)  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    # Tests of the quota under concurrency send more parallel uploads than the default cap; the
    # audit log signs a checkpoint a second after an entry, so its proofs are there to read.
    # Its own embedded database: started once per worker, it would otherwise share the worker's
    # server with every module vaultd for the whole session, its background work (heartbeats,
    # the sequencer's rounds, deliveries) queued with theirs on a server that runs one
    # operation at a time (tests.worker_database).
    with inprocess_vault(tmp_path_factory.mktemp("vault") / "data", own_database=True,
                         VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT="16",
                         VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS="1") as server:
        yield server


@pytest.fixture(scope="module", autouse=True)
def worker_databases_dropped() -> Iterator[None]:
    """The databases of the vaultd a module started on the worker's shared server
    (tests.worker_database) go when the module is done: the server stays small."""
    yield
    WORKER_DATABASE.drop_released()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # After the session's fixtures (its vaultd) are torn down; an xdist worker may end without
    # running atexit, and the server's directory is removed here.
    WORKER_DATABASE.stop()


@pytest.fixture
def account(vault: VaultProcess) -> tuple[str, str]:
    return vault.new_account()


@pytest.fixture
def api(vault: VaultProcess, account: tuple[str, str]) -> Iterator[httpx.Client]:
    with vault.client(account[1]) as client:
        yield client


@pytest.fixture
def anon(vault: VaultProcess) -> Iterator[httpx.Client]:
    with vault.client() as client:
        yield client


# --- storage emulators (Azure and S3 backend tests): the session's server, per module -----------


@pytest.fixture(scope="module")
def azurite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Azurite:
    from tests.azurite import session_azurite  # imported here: most modules need no emulator

    return session_azurite(request.config, tmp_path_factory)


@pytest.fixture(scope="module")
def moto(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    from tests.moto_server import aws_credentials, session_moto  # imports the S3 SDK

    with aws_credentials():  # for the backends a module opens itself
        yield session_moto(request.config, tmp_path_factory)


# --- mail (email codes of link gates): a real SMTP server (aiosmtpd), one per module -----------


@pytest.fixture(scope="module")
def mail() -> Iterator[MailServer]:
    server = MailServer().start()
    yield server
    server.stop()


# --- blob format (test_blob_*.py): a data key, a context and encrypted samples ------------------


@pytest.fixture(scope="module")
def key() -> bytes:
    return new_data_key()


@pytest.fixture(scope="module")
def ctx() -> bytes:
    return blob_context("acct-1", "file-1")


@pytest.fixture(scope="module")
def megabyte(key: bytes, ctx: bytes) -> tuple[bytes, bytes]:
    plaintext = pattern(1_000_003)
    return plaintext, encrypt(plaintext, key, ctx)


@pytest.fixture(scope="module")
def three_chunks(key: bytes, ctx: bytes) -> tuple[bytes, bytes]:
    plaintext = pattern(2 * CHUNK_SIZE + 1000)
    return plaintext, encrypt(plaintext, key, ctx)
