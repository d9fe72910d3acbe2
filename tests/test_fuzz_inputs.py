"""Fuzzing (hypothesis) of everything a client controls: the upload and viewer headers, the list
query, the JSON of POST /views and every path segment, over HTTP against a real vaultd. The pure
parsers behind them are fuzzed in process, with many more examples, in test_fuzz_parsers.py.

Properties: never a 5xx, every 4xx is JSON with a string `error` and no traceback, and the
server stays healthy. Where the spec fixes the answer (a status, a recorded IP, a decoded name),
an independent oracle checks it exactly. Bounded: the module runs in well under a minute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests import render_fixtures as fx
from tests.fuzz_strategies import (
    NOT_A_FILE_ID,
    NOT_JSON,
    TTL_NOT_A_NUMBER,
    TTL_OUT_OF_RANGE,
    any_text,
    assert_clean,
    bad_escape,
    cleaned_name,
    expected_ip,
    header_text,
    http,
    ip_like,
    json_values,
    latest_entry,
    link_body,
    numberish,
    percent_junk,
    raw_headers,
)
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.inprocess import inprocess_vault
from tests.vault_process import VaultProcess, assert_no_secrets_in_log
from vaultd.services.files import uploads

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)


# --- one vaultd for the module ------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with inprocess_vault(tmp_path_factory.mktemp("fuzz") / "data") as server:
        yield server


@pytest.fixture(scope="module")
def api(fuzz_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = fuzz_vault.new_account("Fuzz Ltd", plan="pro")
    with fuzz_vault.client(key) as client:
        yield client


@pytest.fixture(scope="module")
def web(fuzz_vault: VaultProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fuzz_vault.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def shared(fuzz_vault: VaultProcess, api: httpx.Client) -> dict[str, str]:
    """A one-page delivery image and a live link to it."""
    file = upload_ok(api, fx.png((48, 32)), kind="delivery", name="fuzz target.png")
    token = create_link(api, file["id"], "fuzz@example.com")["token"]
    fuzz_vault.secrets.append(token)
    return {"file": file["id"], "token": token}


TINY_PNG = fx.png((8, 8))


# --- headers ------------------------------------------------------------------------------------


@http(40)
@given(value=st.one_of(header_text, percent_junk, any_text.map(lambda t: quote(t, safe=""))))
@example(value="caf%E9%")
@example(value="%")
def test_any_file_name_header_is_stored_cleanly_or_refused_as_400(
    api: httpx.Client, value: str
) -> None:
    response = api.post("/files", content=TINY_PNG, headers=raw_headers({
        "Content-Type": "image/png", "x-file-name": value}))
    assert_clean(response)
    assert response.status_code == (400 if bad_escape(value) else 201), response.text
    if response.status_code == 201:
        name = response.json()["name"]
        assert 0 < len(name) <= 200 and name.isprintable() and name == name.strip()


@http(25)
@given(text=any_text)
def test_a_uri_encoded_file_name_round_trips(api: httpx.Client, text: str) -> None:
    response = api.post("/files", content=TINY_PNG, headers={
        "Content-Type": "image/png", "x-file-name": quote(text, safe="")})
    assert response.status_code == 201, response.text
    assert response.json()["name"] == cleaned_name(text)


@http(30)
@given(value=st.one_of(header_text, st.sampled_from(
    ["source", "delivery", "Source", "DELIVERY", "source,delivery", "", "sourc", "délivery"])))
def test_the_file_kind_header_is_source_or_delivery_or_400(api: httpx.Client,
                                                           value: str) -> None:
    response = api.post("/files", content=TINY_PNG, headers=raw_headers({
        "Content-Type": "image/png", "x-file-kind": value}))
    assert_clean(response)
    if value in ("source", "delivery"):
        assert response.status_code == 201 and response.json()["kind"] == value
    else:
        assert response.status_code == 400, response.text


@http(30)
@given(value=st.one_of(header_text, st.sampled_from([
    "application/pdf; charset=binary", "IMAGE/PNG", "image/png ;x=y", "image/png,image/jpeg",
    "multipart/form-data; boundary=x", "*/*", "image/svg+xml", ""])))
def test_the_content_type_header_is_accepted_or_415(api: httpx.Client, value: str) -> None:
    response = api.post("/files", content=TINY_PNG,
                        headers=raw_headers({"Content-Type": value}))
    assert_clean(response)
    media = value.split(";", 1)[0].strip().lower()
    accepted = media in uploads.ACCEPTED_CONTENT_TYPES
    assert response.status_code == (201 if accepted else 415), response.text


@http(40)
@given(value=ip_like)
def test_the_viewer_ip_header_is_recorded_canonical_or_not_at_all(
    api: httpx.Client, shared: dict[str, str], value: str
) -> None:
    response = api.get(f"/views/{shared['token']}",
                       headers=raw_headers({"x-viewer-ip": value}))
    assert_clean(response)
    assert response.status_code == 200
    entry = latest_entry(api, shared["file"])
    assert entry["action"] == "view"
    assert entry.get("ip") == expected_ip(value)


@http(8)
@given(value=ip_like)
def test_the_viewer_ip_header_on_a_page_is_recorded_canonical_or_not_at_all(
    api: httpx.Client, shared: dict[str, str], value: str
) -> None:
    response = api.get(f"/views/{shared['token']}/pages/1",
                       headers=raw_headers({"x-viewer-ip": value}))
    assert_clean(response)
    assert response.status_code == 200 and response.content[:3] == b"\xff\xd8\xff"
    entry = latest_entry(api, shared["file"])
    assert (entry["action"], entry.get("ip")) == ("page", expected_ip(value))


@http(30)
@given(value=st.one_of(header_text, st.emails().filter(lambda e: e.isascii() and len(e) < 200)))
def test_the_viewer_email_header_on_download_is_recorded_valid_or_not_at_all(
    api: httpx.Client, shared: dict[str, str], value: str
) -> None:
    response = api.get(f"/files/{shared['file']}/download",
                       headers=raw_headers({"x-viewer-email": value}))
    assert_clean(response)
    assert response.status_code == 200
    entry = latest_entry(api, shared["file"])
    assert entry["action"] == "download"
    recorded = entry.get("viewerEmail")
    assert recorded is None or ("@" in recorded and recorded.isprintable())


# --- query --------------------------------------------------------------------------------------


def expected_list_status(page: str | None, per_page: str | None) -> set[int]:
    def verdict(value: str | None, high: int) -> set[int]:
        if value is None or (re.fullmatch(r"[0-9]{1,9}", value) and 1 <= int(value) <= high):
            return {200}
        if re.search(r"[\x21-\x2f\x3a-\x7e]", value) or re.fullmatch(r"[0-9]+", value):
            return {400}  # an ASCII non-digit, or plain digits out of bounds
        return {200, 400}  # whitespace (Tornado strips it) or non-ASCII digits
    page_ok, per_page_ok = verdict(page, 10**9), verdict(per_page, 100)
    if page_ok == {400} or per_page_ok == {400}:
        return {400}
    return {200} if page_ok == per_page_ok == {200} else {200, 400}


@http(80)
@given(page=st.none() | numberish, per_page=st.none() | numberish)
@example(page="²", per_page=None)
@example(page=None, per_page="①")
def test_list_paging_answers_200_or_400_never_5xx(api: httpx.Client, page: str | None,
                                                  per_page: str | None) -> None:
    params = {k: v for k, v in {"page": page, "perPage": per_page}.items() if v is not None}
    response = api.get("/files", params=params)
    assert_clean(response)
    assert response.status_code in expected_list_status(page, per_page), (params, response.text)
    if response.status_code == 200:
        body = response.json()
        assert isinstance(body["total"], int) and isinstance(body["files"], list)


# --- JSON bodies --------------------------------------------------------------------------------


@http(60)
@given(value=json_values)
def test_any_json_value_that_is_not_a_link_request_is_a_400(api: httpx.Client,
                                                            value: Any) -> None:
    body = json.dumps(value, allow_nan=True)
    response = api.post("/views", content=body, headers={"Content-Type": "application/json"})
    assert_clean(response)
    assert response.status_code == 400


@st.composite
def link_requests(draw: st.DrawFn, file_id: str) -> dict[str, Any]:
    return link_body(draw, file_id)


@http(100)
@given(data=st.data())
def test_link_requests_with_odd_field_values_are_201_400_or_404(
    fuzz_vault: VaultProcess, api: httpx.Client, shared: dict[str, str], data: st.DataObject
) -> None:
    body = data.draw(link_requests(shared["file"]))
    response = api.post("/views", content=json.dumps(body, allow_nan=True),
                        headers={"Content-Type": "application/json"})
    assert_clean(response)
    file_id, ttl = body["fileId"], body.get("ttlSeconds", 3600)
    is_ours = isinstance(file_id, str) and file_id.lower() == shared["file"]
    if response.status_code == 201:
        fuzz_vault.secrets.append(response.json()["token"])
        assert is_ours
        assert type(ttl) in (int, float) and 60 <= ttl <= 2_592_000
    elif response.status_code == 404:
        assert isinstance(file_id, str) and not is_ours
    else:
        assert response.status_code == 400, response.text


@pytest.mark.parametrize("raw", [
    b"[" * 8_000 + b"]" * 8_000,
    b'{"a":' * 2_500 + b"1" + b"}" * 2_500,
    b"[" * 16_000,
])
def test_deeply_nested_json_is_a_400_not_a_crash(api: httpx.Client, raw: bytes) -> None:
    response = api.post("/views", content=raw, headers={"Content-Type": "application/json"})
    assert_json_error(response, 400, NOT_JSON)  # the parser's recursion limit is not a crash


@pytest.mark.parametrize(("ttl", "message"), [
    (b"1e400", TTL_NOT_A_NUMBER), (b"-1e400", TTL_NOT_A_NUMBER), (b"NaN", TTL_NOT_A_NUMBER),
    (b"Infinity", TTL_NOT_A_NUMBER), (b"-Infinity", TTL_NOT_A_NUMBER),
    (b"1" * 5000, NOT_JSON),  # past Python's limit on integer digits
    (b"-0", TTL_OUT_OF_RANGE), (b"1e-400", TTL_OUT_OF_RANGE),
    (b"60.0000000000000001", None)])
def test_extreme_numbers_for_the_ttl_are_400_or_accepted(
    fuzz_vault: VaultProcess, api: httpx.Client, shared: dict[str, str], ttl: bytes,
    message: str | re.Pattern[str] | None
) -> None:
    raw = b'{"fileId": "%s", "viewerEmail": "n@example.com", "ttlSeconds": %s}' % (
        shared["file"].encode(), ttl)
    response = api.post("/views", content=raw, headers={"Content-Type": "application/json"})
    if ttl == b"60.0000000000000001":  # parses as 60.0, the minimum
        assert response.status_code == 201, response.text
        fuzz_vault.secrets.append(response.json()["token"])
    else:
        assert message is not None
        assert_json_error(response, 400, message)


@pytest.mark.parametrize(("raw", "message"), [
    (b"\xff\xfe{\x00}\x00", NOT_A_FILE_ID),  # UTF-16 with a BOM: JSON allows it, an empty object
    (b"\xef\xbb\xbf{}", NOT_A_FILE_ID),  # UTF-8 with a BOM, likewise
    (b'{"a": "\xff"}', NOT_JSON),
    (b'{"fileId": "\\ud800"}', NOT_A_FILE_ID),
    (b"", NOT_JSON), (b" ", NOT_JSON), (b"{}" * 3, NOT_JSON),
    (b"null", "request body must be a JSON object")])
def test_undecodable_json_bodies_are_400(api: httpx.Client, raw: bytes, message: str) -> None:
    response = api.post("/views", content=raw, headers={"Content-Type": "application/json"})
    assert_json_error(response, 400, message)


# --- path segments ------------------------------------------------------------------------------


def as_segment(text: str) -> str:
    # quote() keeps dots, and a client would resolve "." and ".." away; keep them in the path.
    return quote(text, safe="").replace(".", "%2E")


segments = st.one_of(
    st.text(min_size=1, max_size=60),
    st.uuids().map(str),
    st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            min_size=43, max_size=43),
    st.sampled_from([".", "..", "%", "null", "undefined", "0", "-1", " ", "\x00", "%00"]),
)

FILE_ROUTES = [("GET", "/v1/files/{}"), ("GET", "/v1/files/{}/download"),
               ("GET", "/v1/files/{}/access-log"), ("DELETE", "/v1/files/{}")]
TOKEN_ROUTES = [("GET", "/v1/views/{}"), ("DELETE", "/v1/views/{}"),
                ("GET", "/v1/views/{}/pages/1"), ("GET", "/v/{}/status"),
                ("GET", "/v/{}/pages/1")]


@http(60)
@given(segment=segments)
def test_unknown_file_ids_in_paths_are_404_everywhere(
    api: httpx.Client, web: httpx.Client, shared: dict[str, str], segment: str
) -> None:
    if segment.lower() == shared["file"]:
        return
    auth = {"Authorization": api.headers["Authorization"]}
    for method, route in FILE_ROUTES:
        response = web.request(method, route.format(as_segment(segment)), headers=auth)
        assert_clean(response)
        assert response.status_code == 404, (method, route, response.text)
    response = web.post(f"/v1/files/{as_segment(segment)}/revoke-views", headers=auth)
    assert response.status_code == 200 and response.json() == {"revoked": 0}


@http(60)
@given(segment=segments)
def test_unknown_tokens_in_paths_are_404_everywhere(
    fuzz_vault: VaultProcess, api: httpx.Client, web: httpx.Client, shared: dict[str, str],
    segment: str,
) -> None:
    if segment == shared["token"]:
        return
    key = api.headers["Authorization"]
    for method, route in TOKEN_ROUTES:
        response = web.request(method, route.format(as_segment(segment)),
                               headers={"Authorization": key})
        assert_clean(response)
        assert response.status_code == 404, (method, route, response.text)
    page = web.get(f"/v/{as_segment(segment)}")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")


@http(40)
@given(number=numberish)
@example(number="²")
@example(number="٣")
@example(number="1")
def test_page_numbers_are_served_only_when_they_are_decimal_and_in_range(
    api: httpx.Client, web: httpx.Client, shared: dict[str, str], number: str
) -> None:
    if re.fullmatch(r"[0-9]{1,9}", number):
        expected = {200} if int(number) == 1 else {404}
    elif number.isdecimal() and not number.isascii():
        expected = {200, 404}  # other scripts' digits (١): lenient either way, never a 5xx
    else:
        expected = {404}
    for client, prefix in ((api, "/views"), (web, "/v")):
        response = client.get(f"{prefix}/{shared['token']}/pages/{as_segment(number)}")
        assert_clean(response)
        assert response.status_code in expected, (prefix, number, response.text)


@pytest.mark.parametrize("raw", ["%FF", "%C0%AF", "%ED%A0%80", "%E2%82"])
def test_path_segments_that_are_not_utf8_get_json_errors(api: httpx.Client, web: httpx.Client,
                                                         shared: dict[str, str], raw: str) -> None:
    # Tornado refuses to decode them into arguments: its 400, in our JSON.
    for path in (f"/files/{raw}", f"/views/{raw}", f"/views/{shared['token']}/pages/{raw}"):
        assert_json_error(api.get(path), 400, "bad request")
    assert_json_error(web.get(f"/v/{shared['token']}/pages/{raw}"), 400, "bad request")


def test_the_server_is_healthy_and_logged_no_uncaught_exception_after_fuzzing(
    fuzz_vault: VaultProcess, api: httpx.Client
) -> None:
    health = httpx.get(f"{fuzz_vault.url}/healthz", timeout=10).json()
    assert health["status"] == "ok" and health["renderSandbox"]["complete"] is True
    assert api.get("/account").status_code == 200
    log = fuzz_vault.log_text()
    assert "Uncaught exception" not in log, log[log.index("Uncaught exception"):][:3000]


def test_the_server_log_holds_none_of_the_tokens_and_keys_used_in_fuzzing(
    fuzz_vault: VaultProcess, api: httpx.Client
) -> None:
    assert_no_secrets_in_log(fuzz_vault)
