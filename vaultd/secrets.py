"""Secrets handed to clients (API keys, view tokens): generated from a CSPRNG, stored as SHA-256.

Lookups go by hash (an indexed equality match), so no comparison ever runs over the secret.
"""

from __future__ import annotations

import hashlib
import re
import secrets

API_KEY_PREFIX = "sd_live_"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


def new_token() -> str:
    """32 random bytes as 43 base64url characters."""
    return secrets.token_urlsafe(32)


def new_api_key() -> str:
    return API_KEY_PREFIX + new_token()


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def is_token(value: str) -> bool:
    return bool(_TOKEN.match(value))


def is_api_key(value: str) -> bool:
    return value.startswith(API_KEY_PREFIX) and is_token(value[len(API_KEY_PREFIX):])
