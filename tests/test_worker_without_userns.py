"""A render worker that may not have a user namespace (a container run without vaultd's seccomp
profile: Docker's default refuses `unshare`) and runs as a uid that is busy elsewhere (vaultd's
server threads and other workers share it) still starts threads, so it renders, with the layers
it has: RLIMIT_NPROC would count the whole uid there, so it is not set (render.sandbox.confine).
Real processes: a uid holding threads, and a worker confined as that uid under a seccomp filter
that refuses namespaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.confinement_fixtures import VAULTD_UID as UID
from tests.confinement_fixtures import uid_running_threads
from tests.vault_process import ROOT, base_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="becoming another uid needs root")

THREADS = 64  # more than a worker's RLIMIT_NPROC (16): what a serving vaultd's uid runs


@pytest.fixture
def busy_uid() -> Iterator[None]:
    with uid_running_threads(THREADS):
        yield


def test_a_worker_without_a_user_namespace_on_a_busy_uid_starts_threads(busy_uid: None) -> None:
    done = subprocess.run([sys.executable, "-m", "tests.worker_without_userns", str(UID)],
                          cwd=ROOT, env=base_env(), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # The situation itself: no namespace, no identity of its own.
    assert not result["layers"]["own_identity"] and not result["layers"]["net_namespace"]
    assert result["thread"] == "started"  # "can't start new thread" before
    # The layers it could have, it has.
    assert result["layers"]["seccomp"] and result["layers"]["rlimits"]
    assert result["layers"]["no_new_privs"]
