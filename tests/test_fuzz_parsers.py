"""Fuzzing (hypothesis) of the pure parsers behind every client-controlled input, in process and
with many examples: each returns a clean value or raises a VaultError with a message."""

from __future__ import annotations

import ipaddress
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fuzz_strategies import (
    UNIT,
    ip_like,
    json_values,
    link_body,
    numberish,
    percent_junk,
)
from tests.hypothesis_profiles import examples
from vaultd.errors import VaultError
from vaultd.plans import get_plan
from vaultd.services.accounts.accounts import Account
from vaultd.services.common.access_log import valid_ip
from vaultd.services.files import uploads
from vaultd.services.links import links
from vaultd.web.files import parse_bounded_int

# --- the pure parsers, in process ---------------------------------------------------------------


def returns_or_vault_error(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except VaultError as error:
        assert isinstance(error.message, str) and error.message
        return error


@UNIT
@given(value=st.none() | st.text(max_size=300) | percent_junk)
@example(value="%")
@example(value="%E0%A4%A")
def test_parse_name_returns_a_clean_name_or_raises_a_vault_error(value: str | None) -> None:
    result = returns_or_vault_error(uploads.parse_name, value)
    if isinstance(result, str):
        assert 0 < len(result) <= 200 and result.isprintable() and result == result.strip()


@UNIT
@given(value=st.none() | st.text(max_size=30))
def test_parse_kind_returns_a_kind_or_raises_a_vault_error(value: str | None) -> None:
    result = returns_or_vault_error(uploads.parse_kind, value)
    assert isinstance(result, VaultError) or result in uploads.KINDS


@UNIT
@given(value=st.none() | st.text(max_size=60))
def test_parse_content_type_returns_an_accepted_type_or_raises_a_vault_error(
    value: str | None,
) -> None:
    result = returns_or_vault_error(uploads.parse_content_type, value)
    assert isinstance(result, VaultError) or result in uploads.ACCEPTED_CONTENT_TYPES


@UNIT
@given(head=st.binary(max_size=16))
def test_sniff_never_raises(head: bytes) -> None:
    assert uploads.sniff(head) in (None, "application/pdf", "image/jpeg", "image/png")


@UNIT
@given(raw=st.none() | numberish, low=st.integers(0, 5), high=st.integers(5, 10**9))
@example(raw="²", low=1, high=100)
@example(raw="٣", low=1, high=100)
def test_parse_bounded_int_returns_a_bounded_int_or_raises_a_vault_error(
    raw: str | None, low: int, high: int
) -> None:
    result = returns_or_vault_error(parse_bounded_int, raw, "n", low, low, high)
    assert isinstance(result, VaultError) or (type(result) is int and low <= result <= high)


@UNIT
@given(value=st.none() | ip_like | st.text(max_size=50))
def test_valid_ip_returns_a_canonical_address_or_none(value: str | None) -> None:
    result = valid_ip(value)
    assert result is None or str(ipaddress.ip_address(result)) == result


FREE = Account("acct", "Fuzz", get_plan("free"), None)


@st.composite
def link_request_bodies(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return draw(st.dictionaries(st.text(max_size=12), json_values, max_size=5))
    return link_body(draw, "5f0c1b1e-8d4e-4c8e-9a55-2f1f6f2b9a10")


@settings(deadline=None, max_examples=examples(300),
          suppress_health_check=[HealthCheck.too_slow])
@given(body=link_request_bodies())
def test_parse_link_request_returns_a_valid_request_or_raises_a_vault_error(
    body: dict[str, Any],
) -> None:
    result = returns_or_vault_error(links.parse_link_request, body, FREE)
    if isinstance(result, links.LinkRequest):
        assert 60 <= result.ttl_seconds <= FREE.plan.maxViewSeconds
        assert "@" in result.viewer_email
        # The spec bounds a given viewerName to 100 characters; without one (or a blank one)
        # the name is the email, which may be longer (hypothesis found one of 101).
        name = result.viewer_name
        assert 0 < len(name) <= 100 or name == result.viewer_email
        if not isinstance(body.get("viewerName"), str):
            assert name == result.viewer_email
