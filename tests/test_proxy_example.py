"""examples/proxy (Option B) against a live vaultd: pages come through, the token stays behind."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import documents as docs
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.vault_process import ROOT, VaultProcess, base_env, free_port

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

APP = ROOT / "examples" / "proxy" / "app.py"
TOKEN_LIKE = re.compile(rb"[A-Za-z0-9_-]{43}")


@dataclass
class Proxy:
    process: subprocess.Popen[str]
    url: str
    log_path: Path
    printed: list[str]

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_proxy(vault: VaultProcess, key: str, tmp_path: Path, *args: str) -> Proxy:
    port = free_port()
    log_path = tmp_path / "proxy.log"
    env = base_env({"VAULTD_URL": f"{vault.url}/v1", "VAULTD_API_KEY": key})
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, str(APP), "--port", str(port), *args],
                                   cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log,
                                   text=True)
    printed = []
    assert process.stdout is not None
    for line in process.stdout:  # the app prints its documents, then "listening on"
        printed.append(line.strip())
        if line.startswith("listening on"):
            break
    else:
        raise AssertionError(f"the proxy exited early:\n{log_path.read_text()}")
    return Proxy(process, f"http://127.0.0.1:{port}", log_path, printed)


def stop_proxy(proxy: Proxy) -> None:
    proxy.process.terminate()
    proxy.process.wait(10)
    assert proxy.process.stdout is not None
    proxy.process.stdout.close()


@pytest.fixture
def shared(vault: VaultProcess, api: httpx.Client) -> dict:
    file = upload_ok(api, docs.pdf(pages=2), name="Quarterly report.pdf")
    link = create_link(api, file["id"], "erin@example.com", viewerName="Erin Hale")
    vault.secrets.append(link["token"])
    return {"file": file, "token": link["token"]}


@pytest.fixture
def proxy(vault: VaultProcess, account: tuple[str, str], shared: dict,
          tmp_path: Path) -> Iterator[Proxy]:
    links = tmp_path / "links.json"
    links.write_text(json.dumps({"q3-report": shared["token"]}))
    running = start_proxy(vault, account[1], tmp_path, "--links", str(links))
    yield running
    stop_proxy(running)


@pytest.fixture
def browser_side(proxy: Proxy) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


def test_a_page_comes_through_as_a_jpeg_watermarked_for_the_browsers_ip(
    browser_side: httpx.Client, api: httpx.Client, shared: dict
) -> None:
    assert browser_side.get("/doc/q3-report").status_code == 200
    response = browser_side.get("/doc/q3-report/pages/2")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/jpeg"
    assert "no-store" in response.headers["cache-control"]
    assert response.content[:3] == b"\xff\xd8\xff"
    # vaultd only knows an IP through x-viewer-ip: seeing one proves the proxy passed it on.
    entry = api.get(f"/files/{shared['file']['id']}/access-log").json()[0]
    assert entry == {"at": entry["at"], "fileId": shared["file"]["id"], "action": "page",
                     "viewerEmail": "erin@example.com", "ip": "127.0.0.1", "page": 2}


def test_the_viewer_page_points_at_the_proxys_own_routes(browser_side: httpx.Client) -> None:
    response = browser_side.get("/doc/q3-report")
    assert response.status_code == 200
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["referrer-policy"] == "no-referrer"
    html = response.text
    assert 'data-page-url="/doc/q3-report/pages/{n}"' in html
    assert 'data-status-url="/doc/q3-report/status"' in html
    assert "Quarterly report.pdf" in html and "Erin Hale" in html
    assert browser_side.get("/doc/q3-report/status").json() == {"active": True}
    assert browser_side.get("/assets/viewer.js").status_code == 200


def test_the_token_never_reaches_the_browser(browser_side: httpx.Client, proxy: Proxy,
                                             shared: dict) -> None:
    token = shared["token"].encode()
    paths = ["/doc/q3-report", "/doc/q3-report/pages/1", "/doc/q3-report/status",
             "/doc/q3-report/pages/9", "/doc/nope", "/assets/viewer.js", "/assets/viewer.css"]
    for path in paths:
        response = browser_side.get(path)
        assert token not in response.content, path
        assert not any(token.decode() in value for value in response.headers.values()), path
        if not path.endswith(("/pages/1", ".js", ".css")):
            assert not TOKEN_LIKE.search(response.content), path
    assert shared["token"] not in proxy.output()


def test_pages_out_of_range_and_unknown_documents_are_404(browser_side: httpx.Client) -> None:
    browser_side.get("/doc/q3-report")
    for path in ["/doc/q3-report/pages/0", "/doc/q3-report/pages/3",
                 "/doc/q3-report/pages/x", "/doc/unknown/pages/1", "/doc/unknown/status"]:
        assert_json_error(browser_side.get(path), 404, "not found")  # the example app's text
    page = browser_side.get("/doc/unknown")
    assert page.status_code == 404 and "This link is no longer available." in page.text
    assert browser_side.get("/doc/q3-report/pages/1").status_code == 200  # still alive


def test_a_revoked_link_stops_at_the_next_page(browser_side: httpx.Client, api: httpx.Client,
                                               shared: dict) -> None:
    assert browser_side.get("/doc/q3-report/pages/1").status_code == 200
    assert api.delete(f"/views/{shared['token']}").status_code == 204
    assert_json_error(browser_side.get("/doc/q3-report/pages/2"), 404, "not found")
    assert_json_error(browser_side.get("/doc/q3-report/status"), 404, "not found")
    page = browser_side.get("/doc/q3-report")
    assert page.status_code == 404 and "This link is no longer available." in page.text


def test_share_creates_a_link_at_start_without_printing_its_token(
    vault: VaultProcess, account: tuple[str, str], api: httpx.Client, tmp_path: Path
) -> None:
    file = upload_ok(api, docs.pdf(pages=1), name="Engagement letter.pdf")
    running = start_proxy(vault, account[1], tmp_path, "--share", file["id"],
                          "--viewer-email", "frank@example.com")
    try:
        url = running.printed[0].removeprefix("document: ")
        assert re.fullmatch(rf"{running.url}/doc/[0-9a-f]{{16}}", url)
        with httpx.Client(timeout=60) as client:
            assert client.get(url).status_code == 200
            assert client.get(f"{url}/pages/1").headers["content-type"] == "image/jpeg"
        assert not TOKEN_LIKE.search("\n".join(running.printed).encode())
        assert not TOKEN_LIKE.search(running.output().encode())
    finally:
        stop_proxy(running)
    assert api.get(f"/files/{file['id']}/access-log").json()[0]["viewerEmail"] == \
        "frank@example.com"


def test_it_runs_with_the_projects_virtualenv_as_its_readme_says() -> None:
    readme = (ROOT / "examples" / "proxy" / "README.md").read_text()
    assert ".venv/bin/python examples/proxy/app.py" in readme
    assert "\npython examples/proxy/app.py" not in readme
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(APP), "--help"],
                            cwd=ROOT, env=base_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--links" in result.stdout, result.stderr


def test_its_links_file_is_ignored_by_git() -> None:
    ignored = subprocess.run(["git", "check-ignore", "examples/proxy/links.json"], cwd=ROOT,
                             capture_output=True, text=True)
    assert ignored.returncode == 0 and ignored.stdout.strip() == "examples/proxy/links.json"


def test_vaultd_down_gives_a_friendly_502_and_the_proxy_keeps_running(
    tmp_path: Path, shared: dict, vault: VaultProcess, account: tuple[str, str]
) -> None:
    links = tmp_path / "links.json"
    links.write_text(json.dumps({"q3-report": shared["token"]}))
    gone = VaultProcess(tmp_path / "gone")
    gone.port = free_port()  # nothing listens there
    running = start_proxy(gone, account[1], tmp_path, "--links", str(links))
    try:
        with httpx.Client(base_url=running.url, timeout=30) as client:
            page = client.get("/doc/q3-report")
            assert page.status_code == 502
            assert "The document cannot be shown right now" in page.text
            assert "Traceback" not in page.text
            image = client.get("/doc/q3-report/pages/1")
            assert_json_error(image, 502, "the document service is not answering; retry shortly")
            assert image.headers["retry-after"] == "5"
        assert running.process.poll() is None
        output = running.output()
        assert "Traceback" not in output and f"cannot reach vaultd at {gone.url}/v1" in output
    finally:
        stop_proxy(running)


def test_share_with_vaultd_down_exits_with_one_line(tmp_path: Path,
                                                    account: tuple[str, str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = subprocess.run(
        [sys.executable, str(APP), "--port", str(free_port()), "--share", "some-file"], cwd=ROOT,
        env=base_env({"VAULTD_URL": url, "VAULTD_API_KEY": account[1]}), capture_output=True,
        text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"cannot reach vaultd at {url}: [Errno 111] Connection refused "
        "(is vaultd running? check VAULTD_URL)"]
