"""A real OpenID Connect provider for the tests: `oidc-provider` (npm), started per test module
on a free loopback port (`tests/oidc_provider/provider.mjs`, installed by
`scripts/install-oidc-provider.sh`), and a browser that signs in through it with httpx.

The provider's test-only routes set its accounts and its misbehaviour (a wrong clock, a token
endpoint answering as another client); the login is completed by naming the account."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from tests.vault_process import free_port
from tests.waiting import wait_until

SCRIPT_DIR = Path(__file__).resolve().parent / "oidc_provider"
CALLBACK_PATH = "/console/auth/oidc/callback"


def provider_installed() -> bool:
    return shutil.which("node") is not None and (
        SCRIPT_DIR / "node_modules" / "oidc-provider" / "package.json").exists()


def require_provider() -> None:
    if not provider_installed():
        pytest.fail("oidc-provider is not installed: bash scripts/install-oidc-provider.sh")


@dataclass
class Client:
    client_id: str
    client_secret: str
    redirect_uri: str


@dataclass
class OidcProvider:
    """One provider process; `issuer` may be another address that relays to `port`."""

    issuer: str
    clients: list[Client]
    work_dir: Path
    kid: str = "signing-key-1"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def own_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.work_dir / f"oidc-provider-{self.port}.log"

    def start(self) -> OidcProvider:
        config = self.work_dir / f"oidc-provider-{self.port}.json"
        config.write_text(json.dumps({
            "issuer": self.issuer, "port": self.port, "kid": self.kid,
            "clients": [{"client_id": c.client_id, "client_secret": c.client_secret,
                         "redirect_uris": [c.redirect_uri]} for c in self.clients]}))
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(["node", str(SCRIPT_DIR / "provider.mjs"),
                                             str(config)], stdout=log, stderr=subprocess.STDOUT)
        wait_until(self._answers, timeout=30, interval=0.1, what="oidc-provider answering")
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"oidc-provider exited:\n{self.log_path.read_text()[-3000:]}")
        try:
            return httpx.get(f"{self.own_url}/.well-known/openid-configuration",
                             timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def add_account(self, account_id: str, email: str, *, verified: bool = True) -> None:
        self._control("accounts", {"id": account_id, "email": email, "email_verified": verified})

    def set_mode(self, **mode: Any) -> None:
        """Misbehaviour until the next call: clockOffsetSeconds, tokenClientAs (a Client)."""
        if isinstance(mode.get("tokenClientAs"), Client):
            client = mode["tokenClientAs"]
            mode["tokenClientAs"] = {"client_id": client.client_id,
                                     "client_secret": client.client_secret}
        self._control("mode", mode)

    def _control(self, what: str, body: dict[str, Any]) -> None:
        response = httpx.post(f"{self.own_url}/_test/{what}", json=body, timeout=10)
        assert response.status_code == 204, response.text


class Browser:
    """A browser without a screen: one cookie jar, redirects followed by hand so each hop of
    the sign-in can be looked at (or kept, to be replayed)."""

    def __init__(self, vault_url: str) -> None:
        self.vault_url = vault_url
        self.http = httpx.Client(timeout=30, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def start(self) -> str:
        """vaultd's start route: the provider's authorization URL it redirects to."""
        response = self.http.get(f"{self.vault_url}/console/auth/oidc/start")
        assert response.status_code == 302, response.text
        return response.headers["location"]

    def log_in_at_provider(self, authorization_url: str, account_id: str) -> str:
        """The provider's login as `account_id`; the callback URL it sends the browser to
        (not yet followed)."""
        url = authorization_url
        for _ in range(10):
            response = self.http.get(url)
            assert response.is_redirect, (response.status_code, response.text)
            url = urljoin(url, response.headers["location"])
            if url.startswith(self.vault_url + CALLBACK_PATH):
                return url
            if "/interaction/" in url:
                url = f"{url}?account={account_id}"
        raise AssertionError("the provider never redirected back to vaultd")

    def callback(self, url: str) -> httpx.Response:
        return self.http.get(url)

    def sign_in(self, account_id: str) -> httpx.Response:
        return self.callback(self.log_in_at_provider(self.start(), account_id))
