"""Sign-in with the company's identity provider, end to end: a real vaultd, a real OpenID
Connect provider (oidc-provider, tests/oidc_provider.py) and a browser driven with httpx.

Each attack is attempted against the real provider: a token issued to another client, a token
already expired (the provider's clock is wrong), a token signed by an impostor answering at the
provider's address with its own key, a replayed code, a replayed state, a state carried to
another browser, an unverified email, a person who is no member. Each is refused with its
status and message, and no session cookie is set."""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest

from tests.http_helpers import assert_json_error
from tests.member_records import insert_member
from tests.oidc_provider import CALLBACK_PATH, Browser, Client, OidcProvider, require_provider
from tests.tcp_relay import TcpRelay
from tests.vault_process import VaultProcess, assert_no_secrets_in_log, free_port
from vaultd.secrets import digest
from vaultd.services.members import activity, oidc_pending

pytestmark = [pytest.mark.slow]

STATE_REFUSED = ("sign-in state is unknown, already used, expired or from another browser: "
                 "start the sign-in again")
CODE_REFUSED = ("the identity provider refused the authorization code "
                "(used, expired or not issued for this sign-in)")
TOKEN_REFUSED = "the identity provider's ID token was refused: "
UNVERIFIED = "the identity provider has not verified this email address"
NOT_A_MEMBER = "this email address is not a member of any account on this vault"
SESSION_COOKIE = "vaultd_session"


@dataclass
class Setup:
    vault: VaultProcess
    provider: OidcProvider  # the real one, behind `relay`
    impostor: OidcProvider  # another key under the same key id, at the same issuer
    relay: TcpRelay  # the issuer's address: pointed at one or the other
    ours: Client
    other: Client
    account_id: str


@pytest.fixture(scope="module")
def oidc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    require_provider()
    work = tmp_path_factory.mktemp("oidc")
    relay_port, vault_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{relay_port}"
    callback = f"http://127.0.0.1:{vault_port}{CALLBACK_PATH}"
    ours = Client("vaultd-console", secrets.token_urlsafe(24), callback)
    other = Client("other-app", secrets.token_urlsafe(24), callback)
    provider = OidcProvider(issuer, [ours, other], work).start()
    impostor = OidcProvider(issuer, [ours, other], work).start()
    relay = TcpRelay(provider.port, port=relay_port).start()
    secret_file = work / "client-secret"
    secret_file.write_text(ours.client_secret + "\n")
    os.chmod(secret_file, 0o600)
    vault = VaultProcess(work / "data", fixed_port=vault_port, env={
        "VAULTD_RENDER_WORKERS": "1", "VAULTD_PUBLIC_URL": f"http://127.0.0.1:{vault_port}",
        "VAULTD_AUTH_OIDC_ISSUER": issuer, "VAULTD_AUTH_OIDC_CLIENT_ID": ours.client_id,
        "VAULTD_AUTH_OIDC_CLIENT_SECRET_FILE": str(secret_file),
        "VAULTD_AUTH_OIDC_PROVIDER_NAME": "Acme SSO"})
    vault.secrets += [ours.client_secret, other.client_secret]
    try:
        vault.start()
        account_id, _ = vault.new_account("Acme Corp")
        yield Setup(vault, provider, impostor, relay, ours, other, account_id)
    finally:
        vault.stop()
        relay.stop()
        provider.stop()
        impostor.stop()
    assert_no_secrets_in_log(vault)


@pytest.fixture(autouse=True)
def honest_provider(oidc: Setup) -> Iterator[None]:
    oidc.relay.target = oidc.provider.port
    oidc.provider.set_mode()
    yield
    oidc.relay.target = oidc.provider.port
    oidc.provider.set_mode()


@pytest.fixture
def browser(oidc: Setup) -> Iterator[Browser]:
    browser = Browser(oidc.vault.url)
    yield browser
    browser.close()


_people = itertools.count()


def member(oidc: Setup, name: str, *, verified: bool = True) -> str:
    """A person at the provider (and at the impostor), a member of the account: their id."""
    email = f"{name}@acme.example"
    oidc.vault.run_service(lambda db: insert_member(db, oidc.account_id, email))
    for provider in (oidc.provider, oidc.impostor):
        provider.add_account(name, email, verified=verified)
    return name


def no_session_cookie(response: httpx.Response) -> bool:
    return not any(SESSION_COOKIE in header for header in response.headers.get_list("set-cookie"))


def sessions_of(oidc: Setup, email: str) -> list[dict[str, object]]:
    async def read(db: object) -> list[dict[str, object]]:
        return [doc async for doc in db.member_sessions.find({"email": email})]  # type: ignore[attr-defined]

    result: list[dict[str, object]] = oidc.vault.run_service(read)
    return result


def test_the_sign_in_page_is_told_the_provider_s_name(oidc: Setup, browser: Browser) -> None:
    response = browser.http.get(f"{oidc.vault.url}/console/auth/methods")
    assert response.status_code == 200
    # No smtp.host here: codes cannot be mailed, so they are not offered.
    assert response.json() == {"code": False, "oidc": {"name": "Acme SSO"}}


def test_a_member_signs_in_and_gets_a_session(oidc: Setup, browser: Browser) -> None:
    ann = member(oidc, "ann")
    authorization = browser.start()
    query = parse_qs(urlsplit(authorization).query)
    assert authorization.startswith(f"http://127.0.0.1:{oidc.relay.port}/auth?")
    assert query["code_challenge_method"] == ["S256"] and query["client_id"] == ["vaultd-console"]
    assert query["scope"] == ["openid email profile"]
    response = browser.callback(browser.log_in_at_provider(authorization, ann))
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/console"
    assert SESSION_COOKIE in response.cookies
    opened = sessions_of(oidc, "ann@acme.example")
    assert [session["method"] for session in opened] == ["oidc"]
    assert opened[0]["_id"] == digest(response.cookies[SESSION_COOKIE])
    # The cookie opens the console as the member, in their one account.
    who = browser.http.get(f"{oidc.vault.url}/console/auth/session")
    assert who.status_code == 200, who.text
    assert who.json()["email"] == "ann@acme.example"
    assert who.json()["account"] == {"id": oidc.account_id, "name": "Acme Corp"}
    assert who.json()["member"]["role"] == "admin"
    # The sign-in is in the account's activity log as the member's; then they sign out.
    csrf = who.json()["csrfToken"]
    oidc.vault.secrets.append(csrf)
    out = browser.http.post(f"{oidc.vault.url}/console/auth/sign-out",
                            headers={"Origin": oidc.vault.url, "X-CSRF-Token": csrf})
    assert out.status_code == 204, out.text
    assert_json_error(browser.http.get(f"{oidc.vault.url}/console/auth/session"), 401,
                      "not signed in (or the session has ended): sign in again")
    logged = [(e["action"], e["actor"]["label"], e.get("detail")) for e in activity_of(oidc)
              if e["actor"]["label"] == "ann@acme.example"]
    assert logged == [("signout", "ann@acme.example", {"how": "signed out"}),
                      ("signin", "ann@acme.example", {"method": "oidc"})]


def activity_of(oidc: Setup) -> list[dict[str, Any]]:
    """The account's activity log, newest first (as GET /v1/activity pages it)."""
    async def read(db: Any) -> list[dict[str, Any]]:
        page = await activity.page(db, oidc.account_id, per_page=200)
        return [activity.entry_json(doc) for doc in page.entries]

    entries: list[dict[str, Any]] = oidc.vault.run_service(read)
    return entries


def test_the_database_holds_no_secret_of_a_pending_sign_in(oidc: Setup, browser: Browser) -> None:
    authorization = browser.start()
    query = parse_qs(urlsplit(authorization).query)
    state, nonce = query["state"][0], query["nonce"][0]

    async def read(db: object) -> list[dict[str, object]]:
        return [doc async for doc in db.database["oidc_pending"].find(  # type: ignore[attr-defined]
            {"_id": digest(state)})]

    records = oidc.vault.run_service(read)
    assert len(records) == 1
    stored = repr(records)
    for secret in (state, nonce, browser.http.cookies["vaultd_oidc"]):
        assert secret not in stored


def test_a_replayed_state_is_refused(oidc: Setup, browser: Browser) -> None:
    bob = member(oidc, "bob")
    callback = browser.log_in_at_provider(browser.start(), bob)
    assert browser.callback(callback).status_code == 303
    again = browser.callback(callback)
    assert_json_error(again, 400, STATE_REFUSED)
    assert no_session_cookie(again)


def test_a_state_carried_to_another_browser_is_refused_and_left_to_its_own(
        oidc: Setup, browser: Browser) -> None:
    cy = member(oidc, "cy")
    callback = browser.log_in_at_provider(browser.start(), cy)
    thief = Browser(oidc.vault.url)
    try:
        thief.start()  # a browser with a sign-in of its own, so a binding cookie
        stolen = thief.callback(callback)
        assert_json_error(stolen, 400, STATE_REFUSED)
        assert no_session_cookie(stolen)
        bare = httpx.get(callback)  # and one with no cookie at all
        assert_json_error(bare, 400, STATE_REFUSED)
    finally:
        thief.close()
    assert browser.callback(callback).status_code == 303  # the real sign-in still finishes


def test_a_state_past_its_ten_minutes_is_refused(oidc: Setup, browser: Browser) -> None:
    max_ = member(oidc, "max")
    callback = browser.log_in_at_provider(browser.start(), max_)
    state = parse_qs(urlsplit(callback).query)["state"][0]

    async def age(db: object) -> None:  # ten minutes pass (the TTL sweep has not run yet)
        await db.database["oidc_pending"].update_one(  # type: ignore[attr-defined]
            {"_id": digest(state)}, {"$set": {"expiresAt": datetime.now(UTC)}})

    oidc.vault.run_service(age)
    response = browser.callback(callback)
    assert_json_error(response, 400, STATE_REFUSED)
    assert no_session_cookie(response)


def test_a_replayed_code_is_refused(oidc: Setup, browser: Browser) -> None:
    dee = member(oidc, "dee")
    first = browser.log_in_at_provider(browser.start(), dee)
    assert browser.callback(first).status_code == 303
    code = parse_qs(urlsplit(first).query)["code"][0]
    oidc.vault.secrets.append(code)
    # A fresh sign-in in the same browser, answered with the code already used.
    second = browser.log_in_at_provider(browser.start(), dee)
    replayed = with_query(second, code=code)
    response = browser.callback(replayed)
    assert_json_error(response, 400, CODE_REFUSED)
    assert no_session_cookie(response)


def test_a_token_issued_to_another_client_is_refused(oidc: Setup, browser: Browser) -> None:
    eve = member(oidc, "eve")
    # The code is obtained for the other client, and the token endpoint answers as that client:
    # the ID token it returns names the other client as its audience.
    authorization = with_query(browser.start(), client_id=oidc.other.client_id)
    oidc.provider.set_mode(tokenClientAs=oidc.other)
    response = browser.callback(browser.log_in_at_provider(authorization, eve))
    assert_json_error(response, 502, TOKEN_REFUSED + "issued to another client (audience)")
    assert no_session_cookie(response)
    assert sessions_of(oidc, "eve@acme.example") == []


def test_an_expired_token_is_refused(oidc: Setup, browser: Browser) -> None:
    fay = member(oidc, "fay")
    # The provider's clock is 15 minutes behind: its 5-minute ID token has expired on arrival.
    oidc.provider.set_mode(clockOffsetSeconds=-900)
    response = browser.sign_in(fay)
    assert_json_error(response, 502, TOKEN_REFUSED + "expired")
    assert no_session_cookie(response)


def test_a_token_signed_by_an_impostor_at_the_provider_s_address_is_refused(
        oidc: Setup, browser: Browser) -> None:
    gus = member(oidc, "gus")
    assert browser.sign_in(gus).status_code == 303  # vaultd now holds the real keys
    oidc.relay.target = oidc.impostor.port  # same issuer, same key id, another key
    impostor_browser = Browser(oidc.vault.url)
    try:
        response = impostor_browser.sign_in(gus)
    finally:
        impostor_browser.close()
    assert_json_error(response, 502,
                      TOKEN_REFUSED + "the signature does not verify with the provider's key")
    assert no_session_cookie(response)


def test_an_unverified_email_is_refused(oidc: Setup, browser: Browser) -> None:
    hal = member(oidc, "hal", verified=False)
    response = browser.sign_in(hal)
    assert_json_error(response, 403, UNVERIFIED)
    assert no_session_cookie(response)
    assert sessions_of(oidc, "hal@acme.example") == []


def test_a_person_who_is_no_member_is_refused(oidc: Setup, browser: Browser) -> None:
    oidc.provider.add_account("ivy", "ivy@elsewhere.example")
    response = browser.sign_in("ivy")
    assert_json_error(response, 403, NOT_A_MEMBER)
    assert no_session_cookie(response)


def test_a_provider_that_cannot_be_reached_is_a_502(oidc: Setup, browser: Browser) -> None:
    jo = member(oidc, "jo")
    callback = browser.log_in_at_provider(browser.start(), jo)
    oidc.relay.target = free_port()  # nothing listens there: every connection is refused
    response = browser.callback(callback)
    assert_json_error(response, 502, "the identity provider cannot be reached (token)")
    assert no_session_cookie(response)


def test_a_provider_s_refusal_is_named_without_echoing_it(oidc: Setup, browser: Browser) -> None:
    authorization = browser.start()
    state = parse_qs(urlsplit(authorization).query)["state"][0]
    url = f"{oidc.vault.url}{CALLBACK_PATH}?" + urlencode(
        {"state": state, "error": "access_denied", "error_description": "<b>no</b>"})
    assert_json_error(browser.callback(url), 400,
                      "the identity provider refused the sign-in (access_denied)")
    forged = browser.start()
    state = parse_qs(urlsplit(forged).query)["state"][0]
    url = f"{oidc.vault.url}{CALLBACK_PATH}?" + urlencode({"state": state, "error": "<script>"})
    assert_json_error(browser.callback(url), 400,
                      "the identity provider refused the sign-in (an invalid error code)")


def test_two_sign_ins_started_in_two_tabs_both_finish(oidc: Setup, browser: Browser) -> None:
    kit = member(oidc, "kit")
    first, second = browser.start(), browser.start()  # one browser secret, two states
    assert browser.callback(browser.log_in_at_provider(second, kit)).status_code == 303
    assert browser.callback(browser.log_in_at_provider(first, kit)).status_code == 303
    assert len(sessions_of(oidc, "kit@acme.example")) == 2


@pytest.mark.parametrize(("answer", "message"), [
    ({"status": 200, "contentType": "text/html", "body": "<html>Sign in</html>"},
     "the identity provider's token answer is not a JSON object"),
    ({"status": 200, "contentType": "application/json",
      "body": '{"id_token": "' + "x" * 300_000 + '"}'},
     "the identity provider's token answer is too large"),
    ({"status": 500, "contentType": "application/json", "body": '{"error": "server_error"}'},
     "the identity provider's token endpoint answered HTTP 500"),
    ({"status": 200, "contentType": "application/json", "body": '{"access_token": "at"}'},
     TOKEN_REFUSED + "no ID token in the token endpoint's answer"),
])
def test_a_token_endpoint_answering_nonsense_is_a_502(oidc: Setup, browser: Browser,
                                                      answer: dict[str, object],
                                                      message: str) -> None:
    lee = member(oidc, f"lee{next(_people)}")  # a member once per account: one per case
    callback = browser.log_in_at_provider(browser.start(), lee)
    oidc.provider.set_mode(tokenAnswer=answer)
    response = browser.callback(callback)
    assert_json_error(response, 502, message)
    assert no_session_cookie(response)


def test_one_address_may_start_only_so_many_sign_ins_even_all_at_once(oidc: Setup) -> None:
    # Last in the module: it uses up 127.0.0.1's starts (concurrently, as two vaultd or two
    # event loops racing would), then gives them back.
    limit_key = oidc_pending.start_limit_key("127.0.0.1")

    async def forget_starts(db: Any) -> None:
        await db.raw("rate_limits").delete_one({"_id": limit_key})
        await db.database["oidc_pending"].delete_many({"ip": "127.0.0.1"})

    async def pending_from_here(db: Any) -> int:
        return int(await db.database["oidc_pending"].count_documents({"ip": "127.0.0.1"}))

    def start(_: int) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            return client.get(f"{oidc.vault.url}/console/auth/oidc/start")

    oidc.vault.run_service(forget_starts)
    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(start, range(80)))
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [302] * 60 + [429] * 20
        refused = next(answer for answer in answers if answer.status_code == 429)
        assert_json_error(refused, 429, "too many sign-ins started from this address; try "
                                        "again in a few minutes")
        assert refused.headers["retry-after"] == "60"
        assert oidc.vault.run_service(pending_from_here) == 60
    finally:
        oidc.vault.run_service(forget_starts)


def with_query(url: str, **replaced: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    return urlunsplit(parts._replace(query=urlencode({**query, **replaced})))


def test_the_console_sign_in_page_offers_the_provider_by_name(oidc: Setup) -> None:
    page = httpx.get(f"{oidc.vault.url}/console/sign-in", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert ('<a class="button" href="/console/auth/oidc/start">Sign in with Acme SSO</a>'
            in page.text)
    assert "Send code" not in page.text  # no smtp.host on this vault: no code to mail
