"""The ID token's checks, attempted one forgery at a time with real keys and real signatures:
`alg: none`, an HMAC keyed with the provider's public key, a key the provider does not publish,
another issuer, several audiences without vaultd as the authorized party, a token from the
future, another sign-in's nonce, no email. A genuine token passes (the control)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from vaultd.errors import BadGateway, Forbidden
from vaultd.services.members.oidc_tokens import VerifiedIdentity, verify_id_token

ISSUER = "https://login.acme.example"
CLIENT = "vaultd-console"
NONCE = "n-0S6_WzA2Mj"
PROVIDER_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig"})
STRAY_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig"})


def claims(**changed: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": CLIENT, "sub": "248289761001", "iat": now, "exp": now + 300,
            "nonce": NONCE, "email": "Ann@Acme.example", "email_verified": True}
    return {key: value for key, value in {**base, **changed}.items() if value is not None}


def signed(body: dict[str, Any], key: RSAKey = PROVIDER_KEY, alg: str = "RS256") -> str:
    return jwt.encode({"alg": alg, "kid": "k1"}, body, key, algorithms=[alg])


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def forged(header: dict[str, Any], body: dict[str, Any], mac_key: bytes | None) -> str:
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(body).encode())}"
    signature = b"" if mac_key is None else hmac.new(mac_key, signing_input.encode(),
                                                     hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


async def published(kid: str | None) -> Any:
    return PROVIDER_KEY if kid == "k1" else None


async def verify(token: str) -> VerifiedIdentity:
    return await verify_id_token(token, issuer=ISSUER, client_id=CLIENT, nonce=NONCE,
                                 key_for=published)


async def refusal(token: str) -> str:
    with pytest.raises(BadGateway) as refused:
        await verify(token)
    return refused.value.message.removeprefix("the identity provider's ID token was refused: ")


async def test_a_genuine_token_gives_the_verified_address_lower_cased() -> None:
    identity = await verify(signed(claims()))
    assert identity == VerifiedIdentity(subject="248289761001", email="ann@acme.example")


async def test_alg_none_is_refused() -> None:
    token = forged({"alg": "none", "kid": "k1"}, claims(), None)
    assert await refusal(token) == "signature algorithm 'none' is not allowed"


async def test_an_hmac_keyed_with_the_provider_s_public_key_is_refused() -> None:
    public_pem = PROVIDER_KEY.as_pem(private=False)
    token = forged({"alg": "HS256", "kid": "k1"}, claims(), public_pem)
    assert await refusal(token) == "signature algorithm 'HS256' is not allowed"


async def test_a_signature_by_another_key_under_the_published_key_id_is_refused() -> None:
    assert await refusal(signed(claims(), STRAY_KEY)) == (
        "the signature does not verify with the provider's key")


async def test_a_key_id_the_provider_does_not_publish_is_refused() -> None:
    token = jwt.encode({"alg": "RS256", "kid": "k9"}, claims(), STRAY_KEY, algorithms=["RS256"])
    assert await refusal(token) == "signed with a key the provider does not publish"


async def test_a_tampered_payload_is_refused() -> None:
    header, _, signature = signed(claims()).split(".")
    body = b64(json.dumps(claims(email="mallory@acme.example")).encode())
    assert await refusal(f"{header}.{body}.{signature}") == (
        "the signature does not verify with the provider's key")


@pytest.mark.parametrize(("changed", "reason"), [
    ({"iss": "https://login.evil.example"}, "issued by another issuer"),
    ({"aud": "other-app"}, "issued to another client (audience)"),
    ({"aud": [CLIENT, "other-app"]}, "issued for another authorized party (azp)"),
    ({"aud": [CLIENT, "other-app"], "azp": "other-app"},
     "issued for another authorized party (azp)"),
    ({"exp": int(time.time()) - 120}, "expired"),
    ({"iat": int(time.time()) + 600, "exp": int(time.time()) + 900},
     "issued in the future (check the provider's clock)"),
    ({"exp": None}, "exp or iat missing"),
    ({"nonce": "another-sign-in"}, "nonce does not match this sign-in"),
    ({"nonce": None}, "nonce does not match this sign-in"),
    ({"sub": None}, "no subject"),
])
async def test_a_claim_that_does_not_hold_is_refused(changed: dict[str, Any],
                                                     reason: str) -> None:
    assert await refusal(signed(claims(**changed))) == reason


async def test_several_audiences_pass_with_vaultd_as_the_authorized_party() -> None:
    token = signed(claims(aud=[CLIENT, "other-app"], azp=CLIENT))
    assert (await verify(token)).email == "ann@acme.example"


async def test_a_clock_a_little_off_is_within_the_leeway() -> None:
    token = signed(claims(exp=int(time.time()) - 30, iat=int(time.time()) + 30))
    assert (await verify(token)).subject == "248289761001"


@pytest.mark.parametrize(("changed", "message"), [
    ({"email_verified": False}, "the identity provider has not verified this email address"),
    ({"email_verified": "true"}, "the identity provider has not verified this email address"),
    ({"email_verified": None}, "the identity provider has not verified this email address"),
    ({"email": None}, "the identity provider gave no email address: ask it for the email scope"),
])
async def test_an_address_the_provider_does_not_vouch_for_is_forbidden(
        changed: dict[str, Any], message: str) -> None:
    with pytest.raises(Forbidden) as refused:
        await verify(signed(claims(**changed)))
    assert refused.value.message == message


async def test_what_is_not_a_token_is_refused() -> None:
    assert await refusal("not.a.jwt") == "not a signed JWT"
    with pytest.raises(BadGateway) as refused:
        await verify_id_token(None, issuer=ISSUER, client_id=CLIENT, nonce=NONCE,
                              key_for=published)
    assert refused.value.message.endswith("no ID token in the token endpoint's answer")
