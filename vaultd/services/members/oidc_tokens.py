"""The ID token: its signature against the provider's published keys, then its claims.

Verified with joserfc (docs/security.md, *Sign-in with an identity provider*). Every refusal
names the check that failed, never the token."""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jws import extract_compact

from vaultd.errors import BadGateway, Forbidden

# Asymmetric signatures only: `none` would accept anything, and an HMAC algorithm would take
# the provider's *public* key as its secret, which anyone can read.
ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                      "ES256", "ES384", "ES512")
# Clocks of two machines differ a little; a minute covers NTP-kept hosts and no more.
LEEWAY_SECONDS = 60
MAX_TOKEN_CHARS = 16 * 1024

KeyLookup = Callable[[str | None], Awaitable[Any]]


@dataclass(frozen=True)
class VerifiedIdentity:
    """Who the provider says signed in: its subject, and an email address it has verified."""

    subject: str
    email: str


def refused(reason: str) -> BadGateway:
    return BadGateway(f"the identity provider's ID token was refused: {reason}")


async def verify_id_token(token: Any, *, issuer: str, client_id: str, nonce: str,
                          key_for: KeyLookup, now: float | None = None) -> VerifiedIdentity:
    claims = await _verified_claims(token, key_for)
    _check_claims(claims, issuer=issuer, client_id=client_id, nonce=nonce,
                  now=time.time() if now is None else now)
    return _identity(claims)


async def _verified_claims(token: Any, key_for: KeyLookup) -> dict[str, Any]:
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise refused("no ID token in the token endpoint's answer")
    try:
        header = extract_compact(token.encode("ascii")).headers()
    except (JoseError, ValueError, UnicodeError):
        raise refused("not a signed JWT") from None
    algorithm, kid = header.get("alg"), header.get("kid")
    if algorithm not in ALLOWED_ALGORITHMS:
        raise refused(f"signature algorithm {str(algorithm)[:20]!r} is not allowed")
    if kid is not None and not isinstance(kid, str):
        raise refused("its key id is not a string")
    key = await key_for(kid)
    if key is None:
        raise refused("signed with a key the provider does not publish")
    try:
        decoded = jwt.decode(token, key, algorithms=[algorithm])
    except BadSignatureError:
        raise refused("the signature does not verify with the provider's key") from None
    except JoseError:
        raise refused("the signature does not verify with the provider's key") from None
    return dict(decoded.claims)


def _check_claims(claims: dict[str, Any], *, issuer: str, client_id: str, nonce: str,
                  now: float) -> None:
    if claims.get("iss") != issuer:
        raise refused("issued by another issuer")
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience
    if not isinstance(audiences, list) or client_id not in audiences:
        raise refused("issued to another client (audience)")
    # With several audiences, the party it was issued for must be vaultd (OIDC Core 3.1.3.7).
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise refused("issued for another authorized party (azp)")
    expires, issued = _time(claims.get("exp")), _time(claims.get("iat"))
    if expires is None or issued is None:
        raise refused("exp or iat missing")
    if expires <= now - LEEWAY_SECONDS:
        raise refused("expired")
    if issued > now + LEEWAY_SECONDS:
        raise refused("issued in the future (check the provider's clock)")
    token_nonce = claims.get("nonce")
    if not isinstance(token_nonce, str) or not hmac.compare_digest(token_nonce.encode(),
                                                                   nonce.encode()):
        raise refused("nonce does not match this sign-in")


def _time(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _identity(claims: dict[str, Any]) -> VerifiedIdentity:
    subject, email = claims.get("sub"), claims.get("email")
    if not isinstance(subject, str) or not subject:
        raise refused("no subject")
    if not isinstance(email, str) or "@" not in email:
        raise Forbidden("the identity provider gave no email address: ask it for the email scope")
    # Only an address the provider vouches for may stand for a member: anyone can type one in.
    if claims.get("email_verified") is not True:
        raise Forbidden("the identity provider has not verified this email address")
    return VerifiedIdentity(subject=subject, email=email.strip().lower())
