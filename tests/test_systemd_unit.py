"""deploy/vaultd.service: systemd accepts it, it hardens what can be hardened, and it leaves the
render sandbox what the workers need (their own user and network namespaces, seccomp and
Landlock). Checked with the real systemd-analyze (setup.sh --test installs systemd)."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "deploy" / "vaultd.service"
INSTALLED_AT = "/opt/vaultd/venv/bin/vaultd"
# What render/sandbox/confine.py calls to confine a worker (setrlimit: through prlimit64).
SANDBOX_SYSCALLS = ("unshare", "prctl", "seccomp", "prlimit64", "landlock_create_ruleset",
                    "landlock_add_rule", "landlock_restrict_self")


def directives() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", "[")):
            name, _, value = line.partition("=")
            found.setdefault(name.strip(), []).append(value.strip())
    return found


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture
def unit_here(tmp_path: Path) -> Path:
    """The unit with its ExecStart at this checkout's vaultd: verify checks the file exists."""
    assert INSTALLED_AT in UNIT.read_text()
    here = tmp_path / "vaultd.service"
    here.write_text(UNIT.read_text().replace(INSTALLED_AT, str(Path(sys.executable).parent
                                                               / "vaultd")))
    return here


def test_systemd_analyze_verify_accepts_the_unit(unit_here: Path) -> None:
    result = analyze("verify", str(unit_here))
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr


def test_systemd_rates_the_units_exposure_ok(unit_here: Path) -> None:
    # --threshold=30: exit code 1 above an exposure of 3.0 ("OK" is 2.0 to 4.9 and lower).
    result = analyze("security", "--offline=true", "--threshold=30", str(unit_here))
    assert result.returncode == 0, result.stdout[-2000:]


def test_the_unit_restarts_on_failure_with_room_for_connections() -> None:
    found = directives()
    assert found["Restart"] == ["on-failure"]
    assert int(found["LimitNOFILE"][0]) >= 65536
    assert found["NoNewPrivileges"] == ["yes"] and found["CapabilityBoundingSet"] == [""]


def test_the_data_directory_is_the_only_writable_path() -> None:
    found = directives()
    assert found["ProtectSystem"] == ["strict"] and found["ProtectHome"] == ["yes"]
    assert found["ReadWritePaths"] == ["/var/lib/vaultd"]
    assert found["Environment"].count("VAULTD_DATA_DIR=/var/lib/vaultd") == 1
    assert found["PrivateTmp"] == ["yes"]


def test_the_workers_may_still_make_their_user_and_network_namespaces() -> None:
    allowed = directives()["RestrictNamespaces"]
    assert allowed == ["user net"]  # an allow-list: yes (none) would cost two sandbox layers


@functools.cache
def expand(name: str) -> frozenset[str]:
    """A syscall, or a systemd group (@...) expanded recursively."""
    if not name.startswith("@"):
        return frozenset({name})
    listing = analyze("syscall-filter", name).stdout.splitlines()[1:]
    names = [line.strip() for line in listing if re.fullmatch(r"\s+[@\w-]+", line)]
    return frozenset().union(*(expand(n) for n in names))


def test_the_system_call_filter_lets_the_workers_confine_themselves() -> None:
    found = directives()
    allowed = frozenset().union(*(expand(name) for value in found["SystemCallFilter"]
                                  for name in value.split()))
    assert len(allowed) > 350  # the groups were expanded
    assert [s for s in SANDBOX_SYSCALLS if s not in allowed] == []
    assert found["SystemCallErrorNumber"] == ["EPERM"]  # a refused call is a missing layer
