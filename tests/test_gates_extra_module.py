"""The worked example of docs/architecture.md ("Adding a gate"): a gate made only for the tests
(`tests/question_gate.py` and its screen), loaded by a vaultd of its own through the setting
`gates.extra_modules`, and used end to end as a reader would: a link created with it, its
policy shown back, the hosted viewer's screen and the API's session refusing pages until the
answer is given, then serving them (and in Chromium, with the keyboard). A server that does not
load the gate refuses its links (never serves them ungated), and a module that cannot be loaded
stops the start, named."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests import browser_session
from tests import documents as docs
from tests.browser_session import WAIT_MS, open_viewer
from tests.gate_helpers import COOKIE
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import ROOT, VaultProcess, base_env, running_vault

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

browser = browser_session.browser  # this module's fixture

MODULE = "tests.question_gate"
PROMPT = "Which harbour do the boats leave from?"
ANSWER = "North Quay"
QUESTION = {"prompt": PROMPT, "answer": ANSWER}
PENDING = "gates still pending: question (pass them in a viewer session)"
WRONG = "answer is not correct"
NOT_HERE = "this link needs a gate this server does not have (question): ask its owner"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("question-gate") / "data"


@pytest.fixture(scope="module")
def vault(data_dir: Path) -> Iterator[VaultProcess]:
    with running_vault(data_dir, VAULTD_GATES_EXTRA_MODULES=MODULE) as server:
        yield server


@pytest.fixture
def api(vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = vault.new_account(name="Harbour Board", plan="pro")
    with vault.client(key) as client:
        yield client


def question_link(api: httpx.Client, vault: VaultProcess, **policy: Any) -> str:
    file = upload_ok(api, docs.pdf(pages=2), name="Tides.pdf")
    token: str = create_link(api, file["id"], policy={"question": QUESTION, **policy})["token"]
    vault.secrets.append(token)
    return token


def test_the_link_keeps_the_question_and_shows_it_without_the_answer(
        api: httpx.Client, vault: VaultProcess) -> None:
    token = question_link(api, vault)
    shown = api.get(f"/views/{token}").json()["policy"]
    assert shown == {"question": PROMPT}
    stored = vault.run_service(lambda db: db.links.find_one({}, sort=[("createdAt", -1)]))
    assert stored["policy"]["question"]["prompt"] == PROMPT
    assert ANSWER not in str(stored) and ANSWER.casefold() not in str(stored)


def test_the_served_api_document_describes_the_gate(vault: VaultProcess) -> None:
    document = httpx.get(f"{vault.url}/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert list(schemas["LinkPolicy"]["properties"])[-1] == "question"
    assert schemas["LinkPolicy"]["properties"]["question"]["required"] == ["prompt", "answer"]
    assert schemas["LinkPolicyShown"]["properties"]["question"] == {"type": "string"}
    for kind in ("views", "room-views"):
        operation = document["paths"][f"/{kind}/{{token}}/sessions/{{sessionId}}/answer"]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body["required"] == ["answer"]
        assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Pending"}
        assert "question" in operation["summary"]
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()
           if isinstance(op, dict) and "operationId" in op]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("question", [
    "blue", {"prompt": PROMPT}, {"prompt": "", "answer": ANSWER},
    {"prompt": PROMPT, "answer": ANSWER, "hint": "boats"}, {"prompt": PROMPT, "answer": 7}])
def test_an_invalid_question_is_a_400_naming_the_field(api: httpx.Client, question: Any) -> None:
    file = upload_ok(api, docs.pdf(pages=1))
    response = api.post("/views", json={"fileId": file["id"], "viewerEmail": "a@example.com",
                                        "policy": {"question": question}})
    assert_json_error(response, 400, "policy.question must be an object with a prompt (1 to 200 "
                                     "characters) and an answer (1 to 100 characters)")


def test_the_hosted_viewer_asks_the_question_then_serves_the_pages(
        api: httpx.Client, vault: VaultProcess) -> None:
    token = question_link(api, vault)
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        screen = browser.get(f"/v/{token}")
        assert screen.status_code == 200
        vault.secrets.append(browser.cookies[COOKIE])
        assert 'id="question-form"' in screen.text and 'data-action="answer"' in screen.text
        assert PROMPT in screen.text and "Answer the question</li>" in screen.text
        assert "Tides.pdf" not in screen.text  # the document is for a reader who passed
        assert_json_error(browser.get(f"/v/{token}/pages/1"), 403, PENDING)
        assert_json_error(browser.post(f"/v/{token}/session/answer", json={"answer": "South"}),
                          403, WRONG)
        assert_json_error(browser.post(f"/v/{token}/session/answer", json={}), 400,
                          "answer is required")
        assert_json_error(browser.get(f"/v/{token}/pages/1"), 403, PENDING)
        passed = browser.post(f"/v/{token}/session/answer", json={"answer": " north  QUAY "})
        assert passed.status_code == 200 and passed.json() == {"pending": []}
        assert 'id="pages"' in browser.get(f"/v/{token}").text
        page = browser.get(f"/v/{token}/pages/2")
        assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"


def test_the_api_session_passes_the_question_after_the_passcode(
        api: httpx.Client, vault: VaultProcess) -> None:
    token = question_link(api, vault, passcode="low tide")
    opened = api.post(f"/views/{token}/sessions")
    assert opened.status_code == 201 and opened.json()["pending"] == ["passcode", "question"]
    session = opened.json()["sessionId"]
    vault.secrets.append(session)
    wrong = api.post(f"/views/{token}/sessions/{session}/answer", json={"answer": "East"})
    assert_json_error(wrong, 403, WRONG)
    given = api.post(f"/views/{token}/sessions/{session}/passcode", json={"passcode": "low tide"})
    assert given.json()["pending"] == ["question"]
    session = given.json()["sessionId"]
    vault.secrets.append(session)
    page = api.get(f"/views/{token}/pages/1", headers={"x-viewer-session": session})
    assert_json_error(page, 403, PENDING)
    answered = api.post(f"/views/{token}/sessions/{session}/answer", json={"answer": ANSWER})
    assert answered.status_code == 200 and answered.json()["pending"] == []
    session = answered.json()["sessionId"]
    vault.secrets.append(session)
    page = api.get(f"/views/{token}/pages/1", headers={"x-viewer-session": session})
    assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"


def test_a_room_link_takes_the_gate_as_a_file_link_does(api: httpx.Client,
                                                         vault: VaultProcess) -> None:
    file = upload_ok(api, docs.pdf(pages=1), name="Berths.pdf")
    room = create_room(api, "Harbour works")
    add_file(api, room["id"], file["id"])
    token = room_link(api, room["id"], policy={"question": QUESTION})["token"]
    vault.secrets.append(token)
    with httpx.Client(base_url=vault.url, timeout=60) as browser:
        screen = browser.get(f"/r/{token}")
        assert screen.status_code == 200 and 'data-action="answer"' in screen.text
        vault.secrets.append(browser.cookies[COOKIE])
        assert "Berths.pdf" not in screen.text
        assert_json_error(browser.get(f"/r/{token}/files/{file['id']}/pages/1"), 403, PENDING)
        assert_json_error(browser.post(f"/r/{token}/session/answer", json={"answer": "West"}),
                          403, WRONG)
        passed = browser.post(f"/r/{token}/session/answer", json={"answer": ANSWER})
        assert passed.status_code == 200 and passed.json() == {"pending": []}
        assert "Berths.pdf" in browser.get(f"/r/{token}").text
        page = browser.get(f"/r/{token}/files/{file['id']}/pages/1")
        assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"


def test_the_action_of_a_gate_the_link_lacks_is_refused(api: httpx.Client,
                                                        vault: VaultProcess) -> None:
    file = upload_ok(api, docs.pdf(pages=1))
    token = create_link(api, file["id"], policy={"passcode": "low tide"})["token"]
    vault.secrets.append(token)
    session = api.post(f"/views/{token}/sessions").json()["sessionId"]
    vault.secrets.append(session)
    assert_json_error(api.post(f"/views/{token}/sessions/{session}/answer",
                               json={"answer": ANSWER}), 400, "this link has no question gate")


def test_a_server_without_the_gate_refuses_its_links_and_the_field(
        api: httpx.Client, vault: VaultProcess, data_dir: Path) -> None:
    token = question_link(api, vault)
    key = api.headers["Authorization"]
    vault.stop()
    with running_vault(data_dir) as plain:
        plain.secrets.extend(vault.secrets)
        with httpx.Client(base_url=f"{plain.url}/v1", headers={"Authorization": key},
                          timeout=60) as client:
            assert_json_error(client.get(f"/views/{token}/pages/1"), 403, NOT_HERE)
            assert_json_error(client.post(f"/views/{token}/sessions"), 403, NOT_HERE)
            file = upload_ok(client, docs.pdf(pages=1))
            response = client.post("/views", json={"fileId": file["id"],
                                                   "viewerEmail": "a@example.com",
                                                   "policy": {"question": QUESTION}})
            assert_json_error(response, 400, "policy.question is not a known gate (gates: "
                              "verifyEmail, passcode, agreementId, allowedIps, notBefore, "
                              "maxOpens)")
        hosted = httpx.get(f"{plain.url}/v/{token}")
        assert hosted.status_code == 403 and NOT_HERE in hosted.text
        assert_json_error(httpx.get(f"{plain.url}/v/{token}/pages/1"), 403, NOT_HERE)
    vault.start()  # the module's other tests may run after this one


@pytest.fixture(scope="module")
def owner(vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = vault.new_account(name="Harbour Board")
    with vault.client(key) as client:
        yield client


@pytest.mark.browser  # after every test that makes an account: Playwright holds the thread's loop
def test_in_chromium_the_reader_answers_with_the_keyboard_and_reads_the_document(
        browser: Browser, owner: httpx.Client, vault: VaultProcess) -> None:
    file = upload_ok(owner, docs.pdf(pages=2), name="Tides.pdf")
    link = create_link(owner, file["id"], policy={"question": QUESTION})
    vault.secrets.append(link["token"])
    with open_viewer(browser, link["url"]) as viewer:
        page = viewer.page
        assert viewer.status == 200
        assert page.locator("label[for=answer-input]").inner_text() == PROMPT
        assert page.locator("[aria-current=step]").inner_text() == "Answer the question"
        assert page.evaluate("document.activeElement.id") == "answer-input"
        page.keyboard.type("South Quay")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.getElementById('gate-message').textContent !== ''",
                               timeout=WAIT_MS)
        assert page.locator("#gate-message").inner_text() == "Answer is not correct."
        page.keyboard.type(ANSWER)  # the wrong one is selected: typing replaces it
        page.keyboard.press("Enter")
        viewer.loaded(1)
        assert viewer.errors == [  # the wrong answer's 403, and nothing else
            "Failed to load resource: the server responded with a status of 403 (Forbidden)"]
        assert page.evaluate("window.__cspViolations") == []


def test_a_module_that_cannot_be_loaded_stops_the_start(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vaultd.main", "--port", "0", "--data-dir",
         str(tmp_path / "data")], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=base_env({"VAULTD_GATES_EXTRA_MODULES": "tests.no_such_gate"}))
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        "vaultd: gates.extra_modules: cannot import tests.no_such_gate: ModuleNotFoundError: "
        "No module named 'tests.no_such_gate'"]
