"""Downloads carry `Content-Disposition: attachment` with a name safe to save: hostile names
uploaded through `x-file-name` (URI-encoded, as the spec says) come back without path
separators, control or bidi characters, in an ASCII `filename=` and an RFC 8187
`filename*=UTF-8''...` form; `X-File-Name` keeps the stored name, as the spec says."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import upload_ok
from tests.vault_process import VaultProcess
from vaultd.web.attachment import ascii_file_name, safe_file_name

# The whole header, strictly: both forms, nothing else, the ASCII one free of quoting characters
# and the other made only of RFC 8187 attr-chars and %XX escapes.
DISPOSITION = re.compile(r"attachment; filename=\"([ !#$&'-\[\]-~]+)\"; "
                         r"filename\*=UTF-8''((?:[A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})+)")
BIDI_AND_FORMAT = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c" \
                  "\u200b\ufeff"


def download_names(api: httpx.Client, file_id: str) -> tuple[str, str, str]:
    """(ASCII filename, decoded filename*, decoded X-File-Name) of a download."""
    response = api.get(f"/files/{file_id}/download")
    assert response.status_code == 200, response.text
    [raw] = [value for key, value in response.headers.raw if key.lower() == b"content-disposition"]
    assert raw.isascii(), raw
    match = DISPOSITION.fullmatch(raw.decode("ascii"))
    assert match, raw
    utf8_name = unquote(match[2], encoding="utf-8", errors="strict")
    return match[1], utf8_name, unquote(response.headers["x-file-name"], errors="strict")


def uploaded(api: httpx.Client, name: str) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(1), kind="delivery", name=name)  # URI-encoded by the helper


def assert_safe(name: str) -> None:
    assert not set(name) & set("/\\\r\n\t\0" + BIDI_AND_FORMAT), repr(name)
    assert all(ch.isprintable() for ch in name) and name == name.strip(" .") and name


@pytest.mark.parametrize(("name", "ascii_name", "utf8_name"), [
    ("../../etc/passwd", "_.._etc_passwd", "_.._etc_passwd"),
    ("a\\b", "a_b", "a_b"),
    ('q"u;o=te "x".pdf', "q_u_o=te _x_.pdf", 'q"u;o=te "x".pdf'),
    ("Résumé 报告.pdf", "Resume __.pdf", "Résumé 报告.pdf"),
    ("\uff0fetc\uff0fpasswd", "_etc_passwd", "\uff0fetc\uff0fpasswd"),  # fullwidth solidus
    ("...", "document", "document"),  # nothing left once the dots are gone
    ("%41 100% sure.pdf", "_41 100_ sure.pdf", "%41 100% sure.pdf"),
])
def test_hostile_names_download_under_a_safe_name(
        api: httpx.Client, name: str, ascii_name: str, utf8_name: str) -> None:
    created = uploaded(api, name)
    ascii_got, utf8_got, spec_name = download_names(api, created["id"])
    assert (ascii_got, utf8_got) == (ascii_name, utf8_name)
    assert spec_name == created["name"] == name  # X-File-Name: the stored name, encoded
    assert_safe(ascii_got) and assert_safe(utf8_got)


@pytest.mark.parametrize("name", ["invoice_\u202efdp.exe", "report\r\nSet-Cookie: a=b.pdf",
                                  "\u2066tab\there\u2069.pdf"])
def test_control_and_bidi_characters_never_reach_the_header(api: httpx.Client,
                                                            name: str) -> None:
    created = uploaded(api, name)
    ascii_got, utf8_got, _ = download_names(api, created["id"])
    expected = "".join(ch for ch in name if ch.isprintable())
    assert ascii_got == utf8_got == expected
    assert_safe(utf8_got)


def test_a_name_stored_with_bidi_and_control_characters_is_cleaned_at_download(
        api: httpx.Client, vault: VaultProcess) -> None:
    # Upload already drops them; a record written another way (an older vaultd, a restore)
    # must not get them into the header either.
    created = uploaded(api, "placeholder.pdf")
    stored = "inv\u202eoice\u2066/..\\\r\n\x7f\u200bfdp.exe\u2028"
    vault.run_service(lambda db: db.files.update_one({"_id": created["id"]},
                                                     {"$set": {"name": stored}}))
    ascii_got, utf8_got, spec_name = download_names(api, created["id"])
    assert ascii_got == utf8_got == "invoice_.._fdp.exe"
    assert spec_name == stored  # the spec's header: percent-encoded, so CR/LF cannot split it


def test_a_very_long_name_is_cut_to_the_stored_length(api: httpx.Client) -> None:
    name = "é" * 150 + "x" * 150 + ".pdf"
    created = uploaded(api, name)
    ascii_got, utf8_got, _ = download_names(api, created["id"])
    assert utf8_got == created["name"] == name[:200]
    assert ascii_got == "e" * 150 + "x" * 50


def test_a_name_of_only_format_characters_falls_back() -> None:
    assert safe_file_name(BIDI_AND_FORMAT + " . ") == "document"
    assert ascii_file_name("报告") == "__" and ascii_file_name("\u0301") == "document"
