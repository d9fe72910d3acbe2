"""Hypothesis strategies, oracles and checks shared by test_fuzz_inputs and test_fuzz_parsers."""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import unquote

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.http_helpers import assert_json_error
from tests.hypothesis_profiles import examples


def http(count: int) -> settings:
    """Over HTTP: few examples (each is a request or two), no per-example deadline."""
    return settings(deadline=None, max_examples=examples(count),
                    suppress_health_check=[HealthCheck.too_slow])


UNIT = settings(deadline=None, max_examples=examples(600),
                suppress_health_check=[HealthCheck.too_slow])

# --- strategies ---------------------------------------------------------------------------------

# What HTTP lets a header value carry: latin-1, no control characters but tab (Tornado refuses
# the rest before vaultd sees them), no whitespace at either end (h11 refuses to send it).
HEADER_CHARS = st.characters(codec="latin-1", exclude_characters=[
    *(chr(c) for c in range(32) if c != 9), "\x7f"])
header_text = st.text(HEADER_CHARS, max_size=300).map(lambda s: s.strip(" \t"))
percent_junk = st.from_regex(r"(%[0-9A-Fa-fGz]{0,2}|[A-Za-z0-9 ._~])*", fullmatch=True).map(
    lambda s: s.strip(" "))
any_text = st.text(max_size=80)  # any Unicode scalar (no surrogates: they cannot be UTF-8)
numberish = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=4),
    st.text(max_size=12),
    st.sampled_from(["", " 1", "1 ", "+1", "-0", "0x10", "1e2", "²", "٣", "１", "00000000001",
                     "1_0", "999999999", "1000000000", "0"]),
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**40), 10**40),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=12,
)
ABSENT = object()


def bad_escape(value: str) -> bool:
    """decodeURIComponent's rules: every '%' starts two hex digits, and the escaped bytes are
    UTF-8."""
    if re.search(r"%(?![0-9A-Fa-f]{2})", value) is not None:
        return True
    try:
        unquote(value, errors="strict")
    except UnicodeDecodeError:
        return True
    return False


def cleaned_name(text: str) -> str:
    kept = "".join(ch for ch in text if ch.isprintable()).strip()
    return kept[:200] or "document"


ip_like = st.one_of(
    st.ip_addresses().map(str),
    header_text,
    st.from_regex(r"[0-9a-fA-F:.%]{1,45}", fullmatch=True),
    st.sampled_from(["fe80::1%eth0", "::ffff:1.2.3.4", "1.2.3.4, 5.6.7.8", "01.2.3.4",
                     "1.2.3.256", "[::1]", "0:0:0:0:0:0:0:1", "127.1", "999.1.1.1", "::"]),
)


def link_body(draw: st.DrawFn, file_id: str) -> dict[str, Any]:
    fields = {
        "fileId": draw(st.one_of(st.just(file_id), st.just(file_id.upper()),
                                 st.uuids().map(str), json_values)),
        "viewerEmail": draw(st.one_of(st.emails(), any_text, json_values)),
        "viewerName": draw(st.one_of(st.just(ABSENT), st.text(max_size=130), json_values)),
        "ttlSeconds": draw(st.one_of(
            st.just(ABSENT), st.integers(-(10**30), 10**30), st.integers(0, 3_000_000),
            st.floats(allow_nan=True, allow_infinity=True), json_values,
            st.sampled_from([59, 60, 60.0, 59.999, 2_592_000, 2_592_000.5, 2_592_001, 1e308,
                             -0.0, True, False, "3600"]))),
    }
    return {k: v for k, v in fields.items() if v is not ABSENT}


def raw_headers(values: dict[str, str]) -> dict[bytes, bytes]:
    """Header values as latin-1 bytes, as they travel (httpx would encode str as ASCII)."""
    return {name.encode(): value.encode("latin-1") for name, value in values.items()}


# Generated inputs meet many rules: their messages are checked by the targeted tests, here only
# that there is one.
SOME_MESSAGE = re.compile(r"\S.*", re.DOTALL)
NOT_JSON = "request body is not valid JSON"
TTL_NOT_A_NUMBER = re.compile(r"ttlSeconds must be a number between 60 and \d+")
TTL_OUT_OF_RANGE = re.compile(r"ttlSeconds must be between 60 and \d+ on plan \w+")
NOT_A_FILE_ID = "fileId must be a file UUID"


def assert_clean(response: httpx.Response) -> None:
    """Never a 5xx; a 4xx is JSON with a string error; no traceback anywhere."""
    assert response.status_code < 500, f"{response.status_code}: {response.text[:500]}"
    assert "Traceback" not in response.text
    if response.status_code >= 400:
        assert_json_error(response, response.status_code, SOME_MESSAGE)


def latest_entry(api: httpx.Client, file_id: str) -> dict[str, Any]:
    return api.get(f"/files/{file_id}/access-log").json()[0]


def expected_ip(value: str) -> str | None:
    """The canonical form vaultd records for an `x-viewer-ip` value, or None (not recorded)."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None
