"""The installed version, as `--version`, `GET /` and the logs report it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    try:
        return version("vaultd")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


VERSION = installed_version()
