"""Email codes against a real SMTP server on loopback: the code is read from the delivered
mail; guessing, replaying and resending are limited as docs/security.md says."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests import documents as docs
from tests.gate_helpers import email_session, send_code
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.mail_server import MailServer, code_in, parts
from tests.ocr import read_text
from tests.vault_process import VaultProcess, running_vault
from tests.webhook_receiver import running_receiver

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

VIEWER = {"x-viewer-ip": "192.0.2.10"}
PENDING_EMAIL = "gates still pending: verifyEmail (pass them in a viewer session)"


@pytest.fixture(scope="module")
def mailing_vault(tmp_path_factory: pytest.TempPathFactory,
                  mail: MailServer) -> Iterator[VaultProcess]:
    # A watermark time zone other than the default: its abbreviation is on the page.
    with running_vault(tmp_path_factory.mktemp("gates") / "data",
                       VAULTD_WATERMARK_TIMEZONE="America/New_York",
                       VAULTD_WEBHOOKS_ALLOW_PRIVATE_NETWORKS="true",
                       VAULTD_WEBHOOKS_POLL_SECONDS="0.1", **mail.env()) as server:
        yield server


@pytest.fixture
def api(mailing_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = mailing_vault.new_account(name="Northwind Legal")
    with mailing_vault.client(key) as client:
        yield client


@pytest.fixture
def link(api: httpx.Client, mailing_vault: VaultProcess) -> str:
    file = upload_ok(api, docs.pdf(pages=1), name="Offer.pdf")
    token: str = create_link(api, file["id"], "ann.reader@example.com",
                             policy={"verifyEmail": True})["token"]
    mailing_vault.secrets.append(token)
    return token


def test_the_reader_who_reads_the_mail_gets_pages_marked_verified(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess,
        tmp_path: Path) -> None:
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    before = mail.inbox.count()
    code, session = send_code(api, f"/views/{link}", session, mail, mailing_vault, VIEWER)
    message = mail.inbox.messages[before]
    assert message["To"] == "ann.reader@example.com"
    assert message["Subject"] == "Your verification code for Northwind Legal"
    bodies = parts(message)
    assert code in bodies["text/plain"] and code in bodies["text/html"]
    assert "Northwind Legal" in bodies["text/html"]
    assert not any(word in text for text in bodies.values() for word in ("http", "/v/", link))
    verify = f"/views/{link}/sessions/{session}/verify"
    verified = api.post(verify, json={"code": code}).json()
    assert verified["pending"] == []
    session = verified["sessionId"]
    mailing_vault.secrets.append(session)
    page = api.get(f"/views/{link}/pages/1", headers={"x-viewer-session": session,
                                                      "x-viewer-ip": "192.0.2.10"})
    assert page.status_code == 200
    image = Image.open(io.BytesIO(page.content)).convert("L")
    strip = read_text(image.crop((0, image.height - 120, image.width, image.height)), tmp_path)
    assert "ann.reader@example.com (verified)" in strip
    assert re.search(r"\b(EST|EDT) \(UTC-0[45]:00\)", strip), strip
    steps = [e["detail"]["step"] for e in
             api.get(f"/files/{_file_of(api, link)}/access-log?action=verify").json()]
    assert steps == ["verified", "code-sent"]


def _file_of(api: httpx.Client, token: str) -> str:
    for file in api.get("/files").json()["files"]:
        return str(file["id"])
    raise AssertionError(token)


def test_a_forwarded_link_without_the_mailbox_gets_no_page(
        api: httpx.Client, link: str, mailing_vault: VaultProcess) -> None:
    # Someone else holding the link opens a session but cannot read ann's mail.
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    assert_json_error(api.get(f"/views/{link}/pages/1"), 403, PENDING_EMAIL)
    assert_json_error(api.get(f"/views/{link}/pages/1", headers={"x-viewer-session": session}),
                      403, PENDING_EMAIL)
    assert_json_error(api.post(f"/views/{link}/sessions/{session}/verify",
                               json={"code": "123456"}), 400,
                      "no code was sent in this session: ask for one")


def test_guessing_codes_stops_after_five_tries(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    code, session = send_code(api, f"/views/{link}", session, mail, mailing_vault, VIEWER)
    verify = f"/views/{link}/sessions/{session}/verify"
    wrong = [f"{(int(code) + step) % 1_000_000:06d}" for step in range(1, 6)]
    for guess in wrong:
        assert_json_error(api.post(verify, json={"code": guess}), 403, "code is not correct")
    assert_json_error(api.post(verify, json={"code": code}), 429,
                      "too many wrong codes: ask for a new one")
    assert_json_error(api.post(verify, json={"code": "12345"}), 400,
                      "code must be the six digits from the mail")


ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667"
                                           "\u0668\u0669")
FULL_WIDTH = str.maketrans("0123456789", "".join(chr(0xFF10 + n) for n in range(10)))


def test_a_code_in_other_scripts_digits_is_refused_as_malformed(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    """The mailed code itself, typed in Arabic-Indic or full-width digits: refused with the
    format's message, counting no try; the ASCII code still passes after it."""
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    code, session = send_code(api, f"/views/{link}", session, mail, mailing_vault, VIEWER)
    verify = f"/views/{link}/sessions/{session}/verify"
    for digits in (ARABIC_INDIC, FULL_WIDTH):
        typed = code.translate(digits)
        assert typed != code and typed.isdigit()
        assert_json_error(api.post(verify, json={"code": typed}), 400,
                          "code must be the six digits from the mail")
    for _ in range(4):  # the refused ones counted no try: four wrong ones leave the fifth
        assert_json_error(api.post(verify, json={"code": f"{(int(code) + 1) % 10**6:06d}"}),
                          403, "code is not correct")
    assert api.post(verify, json={"code": code}).json()["pending"] == []


def test_resending_waits_thirty_seconds(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    _, session = send_code(api, f"/views/{link}", session, mail, mailing_vault, VIEWER)
    response = api.post(f"/views/{link}/sessions/{session}/code")
    assert_json_error(response, 429,
                      "a code was sent less than 30 s ago: wait before asking again")
    assert response.headers["Retry-After"] == "30"


def test_a_code_from_one_session_does_not_verify_another(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    first = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    second = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    code, _ = send_code(api, f"/views/{link}", first, mail, mailing_vault, VIEWER)
    _, second = send_code(api, f"/views/{link}", second, mail, mailing_vault, VIEWER)
    response = api.post(f"/views/{link}/sessions/{second}/verify", json={"code": code})
    assert_json_error(response, 403, "code is not correct")


def test_an_smtp_failure_is_a_503_and_the_reader_may_ask_again(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    mail.stop()
    try:
        response = api.post(f"/views/{link}/sessions/{session}/code")
        assert_json_error(response, 503, "the verification code could not be sent; retry shortly")
    finally:
        mail.start()
    send_code(api, f"/views/{link}", session, mail, mailing_vault, VIEWER)


def test_the_policy_with_verify_email_is_accepted_when_smtp_is_set(
        api: httpx.Client, link: str) -> None:
    assert api.get(f"/views/{link}").json()["policy"] == {"verifyEmail": True}


def test_verifying_and_accepting_are_announced_by_signed_webhooks(
        api: httpx.Client, mail: MailServer, mailing_vault: VaultProcess) -> None:
    with running_receiver() as receiver:
        response = api.post("/webhooks", json={"url": receiver.url,
                                               "events": ["view.verified", "agreement.accepted"]})
        assert response.status_code == 201, response.text
        receiver.secret = response.json()["secret"]
        mailing_vault.secrets.append(receiver.secret)
        nda = api.post("/agreements", json={"name": "NDA", "text": "Quiet."}).json()
        file = upload_ok(api, docs.pdf(pages=1))
        token = create_link(api, file["id"], "cy.reader@example.com",
                            policy={"verifyEmail": True, "agreementId": nda["id"]})["token"]
        mailing_vault.secrets.append(token)
        session = api.post(f"/views/{token}/sessions").json()["sessionId"]
        mailing_vault.secrets.append(session)
        before = mail.inbox.count()
        sent = api.post(f"/views/{token}/sessions/{session}/code")
        assert sent.status_code == 202
        code = code_in(mail.inbox.wait_for(before + 1))
        verified = api.post(f"/views/{token}/sessions/{sent.json()['sessionId']}/verify",
                            json={"code": code})
        api.post(f"/views/{token}/sessions/{verified.json()['sessionId']}/agreement",
                 json={"name": "Cy Reader"}, headers={"x-viewer-ip": "192.0.2.77"})
        receiver.wait_for(lambda seen: len(seen) >= 2)
        verified, accepted = receiver.of_type("view.verified"), receiver.of_type(
            "agreement.accepted")
    assert len(verified) == 1 and len(accepted) == 1
    assert verified[0].verified and accepted[0].verified  # signed with the endpoint's secret
    assert verified[0].event["data"]["viewerEmail"] == "cy.reader@example.com"
    data = accepted[0].event["data"]
    assert {k: data[k] for k in ("name", "version", "sha256", "ip", "agreementId")} == {
        "name": "Cy Reader", "version": 1, "sha256": nda["sha256"], "ip": "192.0.2.77",
        "agreementId": nda["id"]}
    assert token not in accepted[0].body.decode() and session not in accepted[0].body.decode()


def test_a_forwarded_link_page_without_verification_is_not_marked_verified(
        api: httpx.Client, mailing_vault: VaultProcess, tmp_path: Path) -> None:
    file = upload_ok(api, docs.pdf(pages=1))
    token = create_link(api, file["id"], "bo.plain@example.com")["token"]
    mailing_vault.secrets.append(token)
    page = api.get(f"/views/{token}/pages/1", headers={"x-viewer-ip": "192.0.2.10"})
    image = Image.open(io.BytesIO(page.content)).convert("L")
    strip = read_text(image.crop((0, image.height - 120, image.width, image.height)), tmp_path)
    assert "bo.plain@example.com" in strip and "verified" not in strip


def test_a_link_sends_at_most_ten_codes_an_hour_to_one_address_and_locks_out_no_other(
        api: httpx.Client, link: str, mail: MailServer, mailing_vault: VaultProcess) -> None:
    # Ten sessions from one address may each ask once; its eleventh send of the hour is
    # refused, and the reader, from another address, still gets a code.
    stranger = {"x-viewer-ip": "198.51.100.33"}
    for _ in range(10):
        session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
        assert api.post(f"/views/{link}/sessions/{session}/code",
                        headers=stranger).status_code == 202
    session = email_session(api, f"/views/{link}", mailing_vault, VIEWER)
    response = api.post(f"/views/{link}/sessions/{session}/code", headers=stranger)
    assert_json_error(response, 429, "too many codes sent for this link from this address: try "
                                     "again within the hour")
    assert response.headers["Retry-After"] == "600"
    send_code(api, f"/views/{link}", email_session(api, f"/views/{link}", mailing_vault, VIEWER),
              mail, mailing_vault, VIEWER)


def test_one_address_gets_at_most_twenty_codes_an_hour(
        api: httpx.Client, mailing_vault: VaultProcess) -> None:
    file = upload_ok(api, docs.pdf(pages=1))
    tokens = []
    for _ in range(3):
        token = create_link(api, file["id"], "dee@example.com",
                            policy={"verifyEmail": True})["token"]
        mailing_vault.secrets.append(token)
        tokens.append(token)
    ip = {"x-viewer-ip": "198.51.100.200"}
    answers = []
    for token in tokens:
        for _ in range(7):
            session = api.post(f"/views/{token}/sessions").json()["sessionId"]
            mailing_vault.secrets.append(session)
            answers.append(api.post(f"/views/{token}/sessions/{session}/code", headers=ip))
    assert [a.status_code for a in answers] == [202] * 20 + [429]
    assert_json_error(answers[-1], 429,
                      "too many codes sent to this address: try again within the hour")
