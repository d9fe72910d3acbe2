"""The requirements of an image that serves every built-in backend: the runtime dependencies of
pyproject.toml and the optional-dependency group of each backend in `backends.BUILT_IN`.

    python -m backends.requirements pyproject.toml [more requirement ...]

The Dockerfile and scripts/container-test.sh print their requirements with it, so a backend
added to the registry is in the image without naming it there. Standard library only: the
image's build stage runs it before any dependency is installed."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from backends import BUILT_IN


def image_requirements(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    groups = project.get("optional-dependencies", {})
    wanted = list(project["dependencies"])
    for name, spec in BUILT_IN.items():
        if not spec.extra:
            continue
        if spec.extra not in groups:
            raise SystemExit(f"backend {name}: pyproject.toml has no optional dependency group "
                             f"{spec.extra!r}")
        wanted += groups[spec.extra]
    return wanted


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m backends.requirements pyproject.toml [requirement ...]")
    print("\n".join(image_requirements(Path(argv[0])) + argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
