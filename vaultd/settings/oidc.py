"""Sign-in with the company's identity provider (OpenID Connect): off unless both the issuer
and the client id are set. The client secret is never a setting: it is read from the file
named here or from `VAULTD_AUTH_OIDC_CLIENT_SECRET` (vaultd.services.members.oidc_config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultd.settings.declare import setting
from vaultd.settings.parsers import path, text, url


def scopes(value: Any) -> str:
    """Space-separated OAuth scopes; `openid` and `email` are what the sign-in stands on."""
    words = text(value).split()
    missing = [scope for scope in ("openid", "email") if scope not in words]
    if missing:
        raise ValueError(f"must include {' and '.join(missing)}")
    return " ".join(dict.fromkeys(words))


@dataclass(frozen=True)
class OidcSettings:
    auth_oidc_issuer: str = setting(
        "auth.oidc.issuer", url, "", "VAULTD_AUTH_OIDC_ISSUER",
        "The identity provider's issuer URL, exactly as its discovery document names it; "
        "empty: no OpenID Connect sign-in.")
    auth_oidc_client_id: str = setting(
        "auth.oidc.client_id", text, "", "VAULTD_AUTH_OIDC_CLIENT_ID",
        "The client id vaultd was registered under at the provider.")
    auth_oidc_client_secret_file: str = setting(
        "auth.oidc.client_secret_file", path, "", "VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE",
        "File holding the client secret (mode 0600 or 0400); empty: the secret is read from "
        "VAULTD_AUTH_OIDC_CLIENT_SECRET.")
    auth_oidc_provider_name: str = setting(
        "auth.oidc.provider_name", text, "SSO", "VAULTD_AUTH_OIDC_PROVIDER_NAME",
        'The name the sign-in page shows: "Sign in with <name>".')
    auth_oidc_scopes: str = setting(
        "auth.oidc.scopes", scopes, "openid email profile", "VAULTD_AUTH_OIDC_SCOPES",
        "Scopes asked of the provider (space-separated; openid and email are required).")
