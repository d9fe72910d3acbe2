"""The relying party's registration, read once at start-up from the settings `auth.oidc.*`.

A half-set configuration stops start-up with one line naming the setting: an operator who set
the issuer meant sign-in to work, and finding out at the first sign-in is too late."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from vaultd.config import ConfigError, Settings

SECRET_ENV = "VAULTD_AUTH_OIDC_CLIENT_SECRET"
CALLBACK_PATH = "/console/auth/oidc/callback"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class OidcClient:
    """Who vaultd is at the provider; `client_secret` is kept out of every repr."""

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    redirect_uri: str
    scopes: str
    provider_name: str


def plain_http_allowed(address: str) -> bool:
    """https everywhere, but for a provider on this machine (tests, a local Keycloak): a token
    fetched in clear from across a network could be read or swapped on the way."""
    parts = urlsplit(address)
    return parts.scheme == "https" or (parts.scheme == "http"
                                       and (parts.hostname or "") in _LOOPBACK_HOSTS)


def oidc_client(settings: Settings, environ: Mapping[str, str] | None = None) -> OidcClient | None:
    """The registration, or None when OIDC is off (neither issuer nor client id set)."""
    issuer, client_id = settings.auth_oidc_issuer, settings.auth_oidc_client_id
    if not issuer and not client_id:
        if settings.auth_oidc_client_secret_file:
            raise ConfigError("config: auth.oidc.client_secret_file is set but auth.oidc.issuer "
                              "and auth.oidc.client_id are not")
        return None
    if not issuer:
        raise ConfigError("config: auth.oidc.issuer is required when auth.oidc.client_id is set")
    if not client_id:
        raise ConfigError("config: auth.oidc.client_id is required when auth.oidc.issuer is set")
    if not plain_http_allowed(issuer):
        raise ConfigError("config: auth.oidc.issuer must be an https:// address "
                          "(http:// only on loopback)")
    if not settings.public_url:
        raise ConfigError("config: public_url is required when auth.oidc.issuer is set (the "
                          "provider redirects browsers back to it)")
    return OidcClient(issuer=issuer, client_id=client_id,
                      client_secret=_client_secret(settings, environ),
                      redirect_uri=settings.public_url + CALLBACK_PATH,
                      scopes=settings.auth_oidc_scopes,
                      provider_name=settings.auth_oidc_provider_name)


def _client_secret(settings: Settings, environ: Mapping[str, str] | None) -> str:
    name = settings.auth_oidc_client_secret_file
    if not name:
        secret = (os.environ if environ is None else environ).get(SECRET_ENV, "").strip()
        if not secret:
            raise ConfigError(f"config: auth.oidc.client_secret_file or {SECRET_ENV} is required "
                              "when auth.oidc.issuer is set")
        return secret
    path = Path(name)
    try:
        mode = path.stat().st_mode
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ConfigError(f"config: auth.oidc.client_secret_file {name} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"config: auth.oidc.client_secret_file {name} cannot be read "
                          f"({reason})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # As ssh does with a private key: a secret others can read is no longer the vault's.
        raise ConfigError(f"config: auth.oidc.client_secret_file {name} is readable by others "
                          f"(mode {stat.S_IMODE(mode):04o}); chmod 600 it")
    if not secret:
        raise ConfigError(f"config: auth.oidc.client_secret_file {name} is empty")
    return secret
