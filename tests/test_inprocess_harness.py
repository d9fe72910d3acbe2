"""The in-process harness (`tests.inprocess`): the session's vaultd is served by this process,
from the composition root vaultd.main uses (a page is rendered by its real workers, the CLI
reaches its embedded database), its log file holds vaultd's lines and none of the test's, and a
second one beside it serves its own vault, logs to its own file, and stops leaving the first
serving."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from tests import documents
from tests.http_helpers import create_link, upload_ok
from tests.inprocess import InProcessVault, inprocess_vault
from tests.vault_process import VaultProcess
from tests.waiting import wait_until


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _own_socket_inodes() -> set[str]:
    links = (os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
             if os.path.exists(f"/proc/self/fd/{fd}"))
    return {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}


def _descendants(pid: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text() if entry.isdigit() else ""
        except OSError:  # gone meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("PPid:"):
                parents[int(entry)] = int(line.split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def test_the_session_vault_listens_in_this_process(vault: VaultProcess) -> None:
    assert isinstance(vault, InProcessVault) and vault.process is None
    listening = _listening_inodes(vault.port)
    assert listening and listening <= _own_socket_inodes()
    commands = []
    for pid in _descendants(os.getpid()):
        try:
            commands.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
        except OSError:
            continue
    assert any(b"render.worker" in command for command in commands), commands
    assert any(b"secantus" in command for command in commands), commands


def test_a_page_is_drawn_and_the_cli_reads_the_same_database(
        vault: VaultProcess, api: httpx.Client, account: tuple[str, str]) -> None:
    file_id = upload_ok(api, documents.pdf(2), name="two.pdf")["id"]
    token = create_link(api, file_id)["token"]
    page = api.get(f"/views/{token}/pages/1")
    assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"
    listed = vault.admin_json("accounts", "list")
    assert account[0] in [row["id"] for row in listed]


def test_the_log_file_holds_vaultds_lines_and_not_the_tests(
        vault: VaultProcess, api: httpx.Client) -> None:
    assert api.get("/files/harness-log-probe").status_code == 404
    wait_until(lambda: "/v1/files/harness-log-probe" in vault.log_text(), timeout=10,
               what="the access log line in the log file")
    lines = [line for line in vault.log_text().splitlines() if "harness-log-probe" in line]
    assert lines and all("tornado.access: 404 GET" in line for line in lines), lines
    assert "httpx" not in vault.log_text()


def test_a_second_in_process_vault_serves_and_logs_apart_and_stops_alone(
        vault: VaultProcess, api: httpx.Client, account: tuple[str, str],
        tmp_path: Path) -> None:
    with inprocess_vault(tmp_path / "data") as second:
        assert second.port != vault.port and len(InProcessVault.running) == 2
        second_account, second_key = second.new_account()
        with second.client(second_key) as second_api:
            assert second_api.get("/files/second-log-probe").status_code == 404
            file_id = upload_ok(second_api, documents.pdf(1), name="one.pdf")["id"]
            token = create_link(second_api, file_id)["token"]
            assert second_api.get(f"/views/{token}/pages/1").status_code == 200
        assert api.get("/files/first-log-probe").status_code == 404
        for server, mine, other in ((second, "second", "first"), (vault, "first", "second")):
            wait_until(lambda s=server, m=mine: f"/v1/files/{m}-log-probe" in s.log_text(),
                       timeout=10, what=f"the {mine} vault's access log line")
            assert f"{other}-log-probe" not in server.log_text()
        # Each its own database: neither lists the other's account.
        listed = {row["id"] for row in second.admin_json("accounts", "list")}
        assert second_account in listed and account[0] not in listed
    assert InProcessVault.running == [vault]
    assert api.get("/account").status_code == 200
