"""A misconfigured `auth.oidc.*` stops start-up with one line naming the setting: half set,
a client secret file missing or readable by others, no public URL, a plain-http issuer across
a network. A whole configuration gives the relying party its registration, secret unseen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http_helpers import assert_json_error
from tests.vault_process import ROOT, VaultProcess, base_env
from vaultd.config import ConfigError, load_settings
from vaultd.services.members.oidc_config import oidc_client

ISSUER = "https://login.acme.example/realms/staff"
SECRET = "s3cret-value-of-the-client"


def secret_file(tmp_path: Path, mode: int = 0o600, text: str = SECRET) -> str:
    path = tmp_path / "client-secret"
    path.write_text(text + "\n")
    os.chmod(path, mode)
    return str(path)


def settings(**env: str) -> Any:
    return load_settings({}, env={"VAULTD_PUBLIC_URL": "https://vault.acme.example", **env})


def test_oidc_is_off_unless_issuer_and_client_id_are_set() -> None:
    assert oidc_client(settings(), environ={}) is None


def test_a_whole_configuration_gives_the_registration_with_its_secret_kept_from_repr(
        tmp_path: Path) -> None:
    client = oidc_client(settings(VAULTD_AUTH_OIDC_ISSUER=ISSUER + "/",
                                  VAULTD_AUTH_OIDC_CLIENT_ID="vaultd",
                                  VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE=secret_file(tmp_path)),
                         environ={})
    assert client is not None
    assert (client.issuer, client.client_secret) == (ISSUER, SECRET)
    assert client.redirect_uri == "https://vault.acme.example/console/auth/oidc/callback"
    assert client.scopes == "openid email profile"
    assert SECRET not in repr(client)


def test_the_secret_may_come_from_the_environment() -> None:
    client = oidc_client(settings(VAULTD_AUTH_OIDC_ISSUER=ISSUER,
                                  VAULTD_AUTH_OIDC_CLIENT_ID="vaultd"),
                         environ={"VAULTD_AUTH_OIDC_CLIENT_SECRET": SECRET})
    assert client is not None and client.client_secret == SECRET


@pytest.mark.parametrize(("env", "message"), [
    ({"VAULTD_AUTH_OIDC_ISSUER": ISSUER},
     "config: auth.oidc.client_id is required when auth.oidc.issuer is set"),
    ({"VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd"},
     "config: auth.oidc.issuer is required when auth.oidc.client_id is set"),
    ({"VAULTD_AUTH_OIDC_ISSUER": ISSUER, "VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd"},
     "config: auth.oidc.client_secret_file or VAULTD_AUTH_OIDC_CLIENT_SECRET is required when "
     "auth.oidc.issuer is set"),
    ({"VAULTD_AUTH_OIDC_ISSUER": "http://login.acme.example",
      "VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd"},
     "config: auth.oidc.issuer must be an https:// address (http:// only on loopback)"),
    ({"VAULTD_AUTH_OIDC_ISSUER": ISSUER, "VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd",
      "VAULTD_PUBLIC_URL": ""},
     "config: public_url is required when auth.oidc.issuer is set (the provider redirects "
     "browsers back to it)"),
    ({"VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE": "/etc/vaultd/oidc-secret"},
     "config: auth.oidc.client_secret_file is set but auth.oidc.issuer and auth.oidc.client_id "
     "are not"),
])
def test_a_half_set_configuration_is_refused_naming_the_setting(env: dict[str, str],
                                                                message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        oidc_client(settings(**env), environ={})
    assert str(refused.value) == message


def test_a_missing_or_world_readable_secret_file_is_refused(tmp_path: Path) -> None:
    base = {"VAULTD_AUTH_OIDC_ISSUER": ISSUER, "VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd"}
    missing = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError) as refused:
        oidc_client(settings(**base, VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE=missing), environ={})
    assert str(refused.value) == f"config: auth.oidc.client_secret_file {missing} does not exist"
    readable = secret_file(tmp_path, 0o644)
    with pytest.raises(ConfigError) as refused:
        oidc_client(settings(**base, VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE=readable), environ={})
    assert str(refused.value) == (f"config: auth.oidc.client_secret_file {readable} is readable "
                                  "by others (mode 0644); chmod 600 it")
    empty = secret_file(tmp_path, 0o600, text="  ")
    with pytest.raises(ConfigError) as refused:
        oidc_client(settings(**base, VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE=empty), environ={})
    assert str(refused.value) == f"config: auth.oidc.client_secret_file {empty} is empty"


def test_scopes_without_openid_and_email_are_refused() -> None:
    with pytest.raises(ConfigError) as refused:
        settings(VAULTD_AUTH_OIDC_SCOPES="profile")
    assert str(refused.value) == ("config: auth.oidc.scopes (VAULTD_AUTH_OIDC_SCOPES) is "
                                  "invalid: must include openid and email")


def test_vaultd_does_not_start_with_a_world_readable_secret_file(tmp_path: Path) -> None:
    readable = secret_file(tmp_path, 0o644)
    env = {"VAULTD_AUTH_OIDC_ISSUER": ISSUER, "VAULTD_AUTH_OIDC_CLIENT_ID": "vaultd",
           "VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE": readable,
           "VAULTD_PUBLIC_URL": "https://vault.acme.example"}
    result = subprocess.run(
        [sys.executable, "-m", "vaultd.main", "--data-dir", str(tmp_path / "data"), "--port",
         "0"], cwd=ROOT, env=base_env(env), capture_output=True, text=True, check=False,
        timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "auth.oidc.client_secret_file" in lines[0], result.stderr
    assert SECRET not in result.stderr + result.stdout
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_with_oidc_off_its_routes_say_so(vault: VaultProcess) -> None:
    # The shared vault: neither auth.oidc nor smtp.host set.
    methods = httpx.get(f"{vault.url}/console/auth/methods")
    assert methods.status_code == 200 and methods.json() == {"code": False, "oidc": None}
    for route in ("start", "callback?state=x&code=y"):
        response = httpx.get(f"{vault.url}/console/auth/oidc/{route}")
        assert_json_error(response, 404, "sign-in with an identity provider is not configured "
                                         "(auth.oidc)")
