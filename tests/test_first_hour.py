"""An operator's first hour: the mistakes a newcomer makes are caught with one line that names
what is wrong, and the tools say what they are. Real processes, real sockets."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.admin_zygote import run_admin
from tests.typed_command import split_typed
from tests.vault_process import ROOT, VaultProcess, base_env, free_port
from tests.vaultd_zygote import run_vaultd_to_end
from vaultd.version import VERSION

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


def vaultd(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m vaultd.main *args` run to its end: a process of its own, forked from the
    zygote that imported vaultd once (`tests.vaultd_zygote`, a fresh one where it must be)."""
    return run_vaultd_to_end("vaultd.main", list(args), base_env(env), cwd, timeout)


def admin(*args: str, cwd: Path = ROOT,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m admin_cli.main *args`, forked alike (`tests.admin_zygote`)."""
    return run_admin(list(args), base_env(env), cwd, 120)


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


# --- vault-admin and the data directory ----------------------------------------------------------


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault made by `vault-admin init` (what init prints is the init test's), shared by the
    tests that need one to exist: each `init` is a fresh process."""
    data = tmp_path_factory.mktemp("initialised") / "the-vault"
    created = admin("--data-dir", str(data), "init")
    assert created.returncode == 0, created.stderr
    return data


def test_a_data_dir_without_a_vault_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    typo = tmp_path / "vault-dta"
    line = one_line(admin("--data-dir", str(typo), "accounts", "create", "Acme"), 1)
    assert line == (f"vault-admin: no vault in {typo} (set --data-dir, VAULTD_DATA_DIR or "
                    "data_dir in --config; vault-admin init creates a new one)")
    assert not typo.exists()


def test_running_from_another_directory_names_the_default_it_looked_in(tmp_path: Path) -> None:
    line = one_line(admin("keys", "list", "some-account", cwd=tmp_path), 1)
    assert line.startswith(f"vault-admin: no vault in {tmp_path / 'vault-data'} ")
    assert not (tmp_path / "vault-data").exists()


def test_vaultd_data_dir_and_config_are_honoured_like_vaultd(initialised: Path,
                                                             tmp_path: Path) -> None:
    vault_dir = initialised
    from_env = admin("accounts", "create", "Env Co", cwd=tmp_path,
                     env={"VAULTD_DATA_DIR": str(vault_dir)})
    assert from_env.returncode == 0, from_env.stderr
    config = tmp_path / "vaultd.toml"
    config.write_text(f'data_dir = "{vault_dir}"\n')
    listed = admin("--config", str(config), "accounts", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "Env Co" in listed.stdout, listed.stderr


def test_init_creates_the_key_says_to_back_it_up_and_refuses_a_second_time(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    first = admin("--data-dir", str(data), "init")
    assert first.stdout.splitlines() == [
        f"created a vault in {data}", f"master key: {data / 'master.key'}",
        "Back it up now, apart from the database: losing it loses every file."]
    assert (data / "master.key").stat().st_mode & 0o777 == 0o600 and (data / "db").is_dir()
    again = one_line(admin("--data-dir", str(data), "init"), 1)
    assert again == f"vault-admin: {data} already holds a vault"
    shown = admin("--data-dir", str(data), "master-key", "show-path")
    assert shown.stdout.splitlines() == [
        f"master key: {data / 'master.key'}",
        "Back it up apart from the database and the blobs: losing it loses every file."]
    assert "--json" not in shown.stdout
    as_json = admin("--data-dir", str(data), "--json", "master-key", "show-path")
    assert as_json.stdout.startswith("{") and '"source": "file"' in as_json.stdout


def test_show_path_with_an_inline_key_says_there_is_no_file(initialised: Path) -> None:
    data = initialised
    inline = "k1:" + "A" * 43
    shown = admin("--data-dir", str(data), "master-key", "show-path",
                  env={"VAULTD_MASTER_KEY": inline})
    assert shown.stdout.strip() == "master key: from VAULTD_MASTER_KEY (the environment), no file"
    assert inline not in shown.stdout


# --- vaultd start-up ---------------------------------------------------------------------------


def test_first_start_says_where_the_new_master_key_is_and_a_restart_does_not(
    tmp_path: Path,
) -> None:
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    server.stop()
    key = (tmp_path / "data" / "master.key").resolve()
    announced = (f"generated a new master key at {key}: back it up now, apart from the "
                 "database; losing it loses every file (vault-admin master-key show-path "
                 "shows where it is)")
    log = server.log_text()
    assert f"vaultd: {announced}" in log  # printed for the operator
    assert f"WARNING vaultd: {announced}" in log  # and in the log
    server.start()
    server.stop()
    assert server.log_text().count(announced) == 2  # not again on the second start


def test_a_start_names_the_console_and_until_there_is_an_account_how_to_make_its_first_admin(
    tmp_path: Path,
) -> None:
    """The quick start's first command ends at the console: vaultd prints where it is and, on a
    vault nobody can sign in to yet, the command that makes the first admin (the sign-in link
    is that command's to print: a credential never goes to vaultd's output). vaultd was given
    its port and data directory on its command line, which `vault-admin` does not see: the
    command spells them out, and typed as printed, in an environment without them, it makes
    a link to this vaultd."""
    server = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        command = (f"VAULTD_PORT={server.port} vault-admin --data-dir "
                   f"{server.data_dir.resolve()} members add-first-admin <your email>")
        first = (f"vaultd: the console is at http://127.0.0.1:{server.port}/console; this vault "
                 f"has no account yet: make yourself its first admin with `{command}`, which "
                 "prints a one-time sign-in link")
        assert printed(server.log_text(), "the console is at") == [first]
        made = as_typed(command.replace("<your email>", "ops@example.com"))
        assert made.returncode == 0, made.stderr
        link = made.stdout.splitlines()[0]
        assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/console/auth/link/[\w-]{{20,}}",
                            link)
        with httpx.Client(timeout=10) as browser:  # the link signs its opener in, here
            opened = browser.get(link)
            assert (opened.status_code, opened.headers["location"]) == (303, "/console")
            session = browser.get(f"{server.url}/console/auth/session")
            assert session.status_code == 200 and session.json()["email"] == "ops@example.com"
    finally:
        server.stop()
    # Started again behind a proxy: the address alone (there is an account now), and the one
    # people reach (`public_url`), as links name it.
    proxied = VaultProcess(server.data_dir, env={"VAULTD_RENDER_WORKERS": "1",
                                                 "VAULTD_PUBLIC_URL": "https://vault.example/"})
    proxied.start()
    proxied.stop()
    assert printed(proxied.log_text(), "the console is at") == [
        first, "vaultd: the console is at https://vault.example/console"]
    assert link.rsplit("/", 1)[1] not in proxied.log_text()  # the link's token: not logged


def as_typed(command: str) -> subprocess.CompletedProcess[str]:
    """A `vault-admin` command line as an operator types it in a shell: its leading
    `NAME=value` words are its environment (on top of one with no VAULTD_ setting)."""
    env, tool, args = split_typed(command)
    assert tool == "vault-admin", command
    return admin(*args, env=env)


def printed(log: str, about: str) -> list[str]:
    """The lines vaultd printed for its operator (`vaultd: ...`, not its log's records) that
    say `about`."""
    return [line for line in log.splitlines() if line.startswith("vaultd: ") and about in line]


def test_a_second_vaultd_on_the_same_data_dir_names_the_first_ones_pid(tmp_path: Path) -> None:
    first = VaultProcess(tmp_path / "data", env={"VAULTD_RENDER_WORKERS": "1"}).start()
    try:
        started = time.monotonic()
        result = vaultd("--port", str(free_port()), "--data-dir", str(first.data_dir))
        assert time.monotonic() - started < 20  # no embedded database was started and waited for
        assert one_line(result, 2) == (
            f"vaultd: data directory {first.data_dir} is in use by another vaultd "
            f"(pid {first.process.pid}); stop it first, or use another --data-dir")
        assert httpx.get(f"{first.url}/healthz").status_code == 200  # the first one is untouched
    finally:
        first.stop()


def test_an_unusable_data_dir_is_named(tmp_path: Path) -> None:
    result = vaultd("--port", "0", "--data-dir", "/proc/vault")
    assert one_line(result, 2) == (
        "vaultd: data_dir /proc/vault: cannot use it: No such file or directory")


def test_a_port_in_use_is_named_before_the_database_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        result = vaultd("--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert one_line(result, 2) == (
        f"vaultd: cannot listen on 127.0.0.1:{port}: Address already in use (set --port or "
        "VAULTD_PORT, --host or VAULTD_HOST)")
    assert not (tmp_path / "data" / "db").exists()  # refused before the database started
    assert not (tmp_path / "data" / "master.key").exists()
    assert time.monotonic() - started < 20


def test_vault_admin_reports_a_data_dir_held_by_a_vaultd_whose_database_is_not_up(
    initialised: Path,
) -> None:
    data = initialised
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"f = open({str(data / 'vaultd.lock')!r}, 'w')\n"
        "fcntl.flock(f, fcntl.LOCK_EX)\n"
        "f.write(f'{os.getpid()} vaultd\\n'); f.flush()\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        line = one_line(admin("--data-dir", str(data), "accounts", "list"), 1)
        assert line == (f"vault-admin: data directory {data} is in use by another vaultd (pid "
                        f"{holder.pid}), whose database does not answer; retry once it is up")
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


# --- --version, -h and the index ---------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_both_tools_answer_help(flag: str) -> None:
    server = vaultd(flag)
    assert server.returncode == 0 and "vaultd: the encrypted document vault server" in server.stdout
    assert "--data-dir" in server.stdout and "VAULTD_DATA_DIR" in server.stdout
    tool = admin(flag)
    assert tool.returncode == 0 and "vault-admin: administer a vaultd installation" in tool.stdout
    assert "--data-dir DATA_DIR" in tool.stdout and "VAULTD_DATA_DIR" in tool.stdout
    assert "--data-dir DATA_DIR" in server.stdout  # the two tools present options alike
    command = admin("accounts", "create", flag)
    assert command.returncode == 0 and "Create an account." in command.stdout


def test_both_tools_print_their_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", VERSION)
    assert vaultd("--version").stdout == f"vaultd {VERSION}\n"
    assert admin("--version").stdout == f"vault-admin {VERSION}\n"


@pytest.mark.parametrize("path", ["/", "/v1"])
def test_the_root_names_the_version_the_contract_and_the_health_check(
    vault: VaultProcess, path: str
) -> None:
    response = httpx.get(f"{vault.url}{path}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"name": "vaultd", "version": VERSION, "api": "/v1",
                               "openapi": "/v1/openapi.json", "health": "/healthz"}
    index = response.json()
    assert httpx.get(f"{vault.url}{index['openapi']}").json()["openapi"] == "3.1.0"
    assert httpx.get(f"{vault.url}{index['health']}").json()["status"] == "ok"


def test_health_answers_like_healthz(vault: VaultProcess) -> None:
    health = httpx.get(f"{vault.url}/health").json()
    assert health["status"] == "ok"
    assert health == httpx.get(f"{vault.url}/healthz").json()
    refused = httpx.post(f"{vault.url}/")
    assert refused.status_code == 405 and refused.json() == {"error": "method not allowed"}
