"""What the docs name exists: every link between them (file and heading), every route written
as `METHOD /path`, every setting written as `section.name`, every `vault-admin` command, and every
`vault-admin` command written in them at least once; every
file or folder of the tree written as a path (`render/office/formats.py`, `web/templates/`) or
a source file's name (`canvas.py`). A doc that drifts from the code fails here, not in a
reader's hands."""

from __future__ import annotations

import os
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
# A path names the tree when it starts at one of its top folders or ends as a source file does;
# the docs write it from the top or from a package's folder down, as its context makes clear
# (`pool/zygote.py` in render's row), so it exists when some path of the tree ends with it.
TREE_TOPS = ("vaultd/", "render/", "backends/", "admin_cli/", "tests/", "bench/", "scripts/",
             "docs/", "deploy/", "config/", "examples/")
SOURCE_ENDINGS = (".py", ".c", ".h", ".pyi", ".html", ".js", ".css", ".sh", ".md", ".service")
PATH_LIKE = re.compile(r"[A-Za-z0-9_.\-/]+")
# Written as paths, not of this tree: constants that look like one, and other projects' files.
NOT_IN_THE_TREE = {
    "vaultd/master-key-fingerprint/v1": "an HMAC's context string (docs/operations.md)",
    "vaultd/backup-manifest-mac/v1": "an HMAC's context string (docs/operations.md)",
    "secantus/aggregate.py": "SecantusDB's source, an installed package",
}


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



def _leaf_commands(command: object, prefix: str = "") -> Iterator[str]:
    commands = _subcommands(command)
    if not commands:
        yield prefix.strip()
        return
    for name, sub in commands.items():
        yield from _leaf_commands(sub, f"{prefix} {name}")


def commands_named(lines: Iterator[tuple[int, str]]) -> set[str]:
    """Each `vault-admin group command` written, and the commands a line lists after `|`
    (`vault-admin keys list ACCOUNT_ID | revoke KEY_ID` names `keys list` and `keys revoke`)."""
    named = set()
    for _, line in lines:
        for match in re.finditer(r"vault-admin((?: +[a-z][a-z0-9-]*)+)([^#`]*)", line):
            words = match.group(1).split()
            named.update({words[0], " ".join(words[:2])})
            for part in match.group(2).split("|")[1:]:
                listed = part.split()
                if listed and listed[0] == words[0]:
                    listed = listed[1:]
                if listed:
                    named.add(f"{words[0]} {listed[0]}")
    return named


def test_every_vault_admin_command_is_named_in_the_docs() -> None:
    named = set().union(*(commands_named(_commands_written(doc)) for doc in DOCS))
    leaves = sorted(_leaf_commands(typer.main.get_command(admin_app)))
    assert "storage migrate" in leaves and "init" in leaves
    assert [command for command in leaves if command not in named] == []


def test_a_command_listed_after_a_bar_counts_as_named() -> None:
    lines = iter([(1, "vault-admin keys list ACCOUNT_ID | revoke KEY_ID  # | not-a-command"),
                  (2, "vault-admin backup DEST | backup verify DEST"), (3, "vault-admin init")])
    assert commands_named(lines) == {"keys", "keys list", "keys revoke", "backup",
                                     "backup verify", "init"}

def _tree() -> set[str]:
    """Every file and folder under the root, as relative paths (the browser tools' installs,
    the virtual environment and git's own folder left out)."""
    found = set()
    for folder, subfolders, names in os.walk(ROOT):
        relative = Path(folder).relative_to(ROOT)
        found.update(str(relative / name) for name in [*subfolders, *names])
        subfolders[:] = [name for name in subfolders
                         if name not in ("node_modules", ".venv", ".git", "__pycache__")]
    return found


def _names_a_path(span: str) -> bool:
    return bool(PATH_LIKE.fullmatch(span)) and (
        span.startswith(TREE_TOPS) or span.endswith(SOURCE_ENDINGS)) and ".." not in span and (
        not span.startswith("/"))  # an address the server answers: the routes' test


def missing_paths(docs: list[Path], tree: set[str]) -> list[str]:
    missing = []
    for doc in docs:
        for number, line in _lines(doc):
            for span in re.findall(r"`([^`]+)`", line):
                path = span.rstrip("/")
                if not _names_a_path(span) or span in NOT_IN_THE_TREE:
                    continue
                if path not in tree and not any(known.endswith("/" + path) for known in tree):
                    missing.append(f"{doc.name}:{number}: {span}")
    return missing


def test_every_path_named_exists() -> None:
    assert missing_paths(DOCS, _tree()) == []


def test_a_path_that_moved_is_found(tmp_path: Path) -> None:
    doc = tmp_path / "moved.md"
    doc.write_text("Typed in `vaultd/records.py`, from `office/formats.py`, drawn by\n"
                   "`canvas.py` under `web/templates/console/` at `/assets/viewer.js`;\n"
                   "`tests/office_documents.xlsx_that_hangs`, a `multipart/form-data` body.\n"
                   "```\nvaultd/anything.py in a fenced example\n```\n")
    tree = {"vaultd/records", "vaultd/records/__init__.py", "render/office/formats.py",
            "render/page/canvas.py", "vaultd/web/templates/console", "tests/office_documents.py"}
    assert missing_paths([doc], tree) == ["moved.md:1: vaultd/records.py",
                                          "moved.md:3: tests/office_documents.xlsx_that_hangs"]
