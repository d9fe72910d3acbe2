"""Azurite, the Azure Storage emulator, as a real child process for tests.

`scripts/install-azurite.sh` installs it into `node_modules/` at the repository root; a global
install on PATH works too. A missing Azurite is an error, not a skip: the Azure backend must be
tested wherever the suite runs.

`session_azurite` starts one server for the whole test session (each module's `azurite` fixture
asks for it, and uses containers of its own); it is stopped when pytest exits.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest

from tests.emulators import EmulatorProcess, session_emulator
from tests.vault_process import ROOT, free_port

# Azurite's fixed development account; its key is public (documented by Microsoft).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def find_binary() -> str:
    """The blob-only Azurite launcher (one port, less start-up), or the full one."""
    for name in ("azurite-blob", "azurite"):
        local = ROOT / "node_modules" / ".bin" / name
        if local.exists():
            return str(local)
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(
        "Azurite is not installed: run `bash scripts/install-azurite.sh` "
        "(npm install azurite@3 into node_modules/) to run the Azure backend tests"
    )


@dataclass
class Azurite(EmulatorProcess):
    """One Azurite blob service on a free loopback port, its data under `location`. A restart
    keeps the data (Azurite saves its metadata on a clean stop)."""

    binary: str = field(default_factory=find_binary)
    label: ClassVar[str] = "Azurite"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
                f"BlobEndpoint={self.endpoint};")

    @property
    def log_path(self) -> Path:
        return self.location.parent / f"{self.location.name}-azurite.log"

    @property
    def probe_url(self) -> str:
        return f"{self.endpoint}?comp=list"  # Azurite says 400 or 403 to an anonymous listing

    def env(self, container: str) -> dict[str, str]:
        """vaultd settings (environment) for this Azurite and `container`."""
        return {
            "VAULTD_STORAGE_BACKEND": "azure",
            "VAULTD_AZURE_CONNECTION_STRING": self.connection_string,
            "VAULTD_AZURE_CONTAINER": container,
        }

    def command(self) -> list[str]:
        cmd = [self.binary, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
               "--location", str(self.location), "--silent", "--skipApiVersionCheck", "--loose",
               "--disableTelemetry"]
        if Path(self.binary).name == "azurite":
            # The full launcher also starts queue and table services: keep them off fixed ports.
            cmd += ["--queuePort", str(free_port()), "--tablePort", str(free_port())]
        return cmd


def session_azurite(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Azurite:
    """The session's Azurite, started on first use and stopped at the end of the session."""
    return session_emulator(config, Azurite,
                            lambda: Azurite(tmp_path_factory.mktemp("azurite") / "data"))
