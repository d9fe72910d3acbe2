"""What the docs name exists: every link between them (file and heading), every route written
as `METHOD /path`, every setting written as `section.name`, every `vault-admin` command. A doc
that drifts from the code fails here, not in a reader's hands."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from admin_cli.main import app as admin_app
from vaultd.config import FIELDS
from vaultd.services.webhooks.webhooks import EVENTS
from vaultd.web.app import served_routes

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
ROUTE = re.compile(r"`(GET|POST|PUT|PATCH|DELETE|HEAD) (/[^`\s?]*)(?:\?[^`]*)?`")
SETTING = re.compile(r"`([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)(?: = [^`]*)?`")
COMMAND = re.compile(r"vault-admin((?: +[a-z][a-z0-9-]*)+)")
FILE_ENDINGS = {"py", "c", "h", "pyi", "md", "toml", "json", "html", "js", "css", "sh", "yaml",
                "txt", "jsonl", "service"}
PLACEHOLDER = re.compile(r"(:[A-Za-z]+|\{[^}/]+\}|<[^>/]+>|\.\.\.)")


def _lines(doc: Path) -> Iterator[tuple[int, str]]:
    """The doc's lines outside fenced code blocks (examples there may show anything)."""
    fenced = False
    for number, line in enumerate(doc.read_text().splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for _, line in _lines(doc) if line.startswith("#")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_links_reach_a_file_and_its_heading(doc: Path) -> None:
    broken = []
    for number, line in _lines(doc):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, mailto:: outside the repository
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve() if path else doc
            if not resolved.exists():
                broken.append(f"{doc.name}:{number}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{doc.name}:{number}: {target} (no such heading)")
    assert broken == []


def _route_patterns() -> list[re.Pattern[str]]:
    patterns = []
    for pattern, _ in served_routes():
        # Each capture group stands for one path segment (or the rest of the path).
        patterns.append(re.compile(re.sub(r"\((?:[^()]|\([^()]*\))*\)", "[^/]+", pattern)
                                   .rstrip("$") + "/?$"))
    return patterns


def _normalise(path: str) -> str:
    return PLACEHOLDER.sub("X", path)


def test_every_route_named_exists() -> None:
    patterns = _route_patterns()
    # The Prometheus listener is a server of its own, on its own port (vaultd.metrics).
    patterns.append(re.compile(r"/metrics$"))
    missing = []
    for doc in DOCS:
        for number, line in _lines(doc):
            for _, path in ROUTE.findall(line):
                candidates = {_normalise(path)}
                if not path.startswith(("/v1", "/v/", "/r/", "/console", "/assets", "/health",
                                        "/metrics")) and path != "/":
                    candidates.add(_normalise("/v1" + path))  # the spec's paths omit /v1
                if not any(p.match(c) for p in patterns for c in candidates):
                    missing.append(f"{doc.name}:{number}: {path}")
    assert missing == []


def _names_code(dotted: str) -> bool:
    """`render.forensic`, `watermark.apply`: a package or module, or a module's member."""
    *module, member = dotted.split(".")
    if member in FILE_ENDINGS:
        return True  # `watermark.py`: a file's name
    for top in (ROOT, *(ROOT / package for package in ("vaultd", "vaultd/services", "render",
                                                       "backends"))):
        whole = top.joinpath(*module, member)
        if whole.is_dir() or whole.with_suffix(".py").exists():
            return True
        source = top.joinpath(*module).with_suffix(".py")
        if source.exists() and re.search(rf"^(?:def |class |async def )?{member}\b",
                                         source.read_text(), re.M):
            return True
    return False


def test_every_setting_named_exists() -> None:
    keys = {field.key for field in FIELDS}
    sections = {key.rpartition(".")[0] for key in keys if "." in key}
    unknown = []
    for doc in DOCS:
        for number, line in _lines(doc):
            for name in SETTING.findall(line):
                if _names_code(name) or name in EVENTS:
                    continue  # code, or a webhook event (`audit.checkpoint`)
                if name.rpartition(".")[0] in sections and name not in keys:
                    unknown.append(f"{doc.name}:{number}: {name}")
    assert unknown == []


def _subcommands(command: object) -> dict[str, object] | None:
    """A group's commands by name (None: not a group). Typer's groups are click's, possibly
    of the click Typer carries, so they are told by their `commands`."""
    commands = getattr(command, "commands", None)
    return commands if isinstance(commands, dict) else None


def _commands_written(doc: Path) -> Iterator[tuple[int, str]]:
    """Code the doc shows: fenced lines whole, and the `spans` of the other lines."""
    fenced = False
    for number, line in enumerate(doc.read_text().splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            yield number, line
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield number, span


def test_every_vault_admin_command_named_exists() -> None:
    root = typer.main.get_command(admin_app)
    unknown = []
    for doc in DOCS:
        for number, line in _commands_written(doc):
            for words in COMMAND.findall(line):
                command: object = root
                for word in words.split():
                    commands = _subcommands(command)
                    if commands is None:
                        break  # past the command: its arguments
                    if word not in commands:
                        unknown.append(f"{doc.name}:{number}: vault-admin{words}")
                        break
                    command = commands[word]
    assert unknown == []
