"""A deployable service installs with no C toolchain: `pip install` into a fresh
virtualenv with `CC=/bin/false` succeeds, and that install serves a watermarked page through
the Pillow blend. pip's cache keeps it to about 15-30 s once the wheels have been seen."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import ROOT, free_port

LEFT_OUT = shutil.ignore_patterns(".venv", ".git", "node_modules", "tests", "build", "*.so",
                                  "*.egg-info", "__pycache__", "vault-data", "test-artifacts")


def clean_env(**extra: str) -> dict[str, str]:
    # No PYTHONPATH and no VAULTD_*: the fresh install must stand on its own.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VAULTD_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("no-compiler")
    shutil.copytree(ROOT, root / "src", ignore=LEFT_OUT)
    # A virtualenv without a pip of its own, installed into by this one's (`--python`): the
    # same install, without ensurepip's copy of pip. --no-compile: pip byte-compiles none of
    # the dependencies' thousands of modules; Python compiles those the tests import. The C
    # toolchain is what this is about.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
                   check=True, timeout=120)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(root / "venv" / "bin" / "python"),
         "install", "-q", "--no-compile", str(root / "src")],
        cwd=root, env=clean_env(CC="/bin/false", CXX="/bin/false"), capture_output=True,
        text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    return root


def in_venv(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(root / "venv" / "bin" / args[0]), *args[1:]], cwd=root,
                          env=clean_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_without_a_compiler_the_install_blends_with_pillow(fresh_venv: Path) -> None:
    probe = in_venv(fresh_venv, "python", "-c",
                    "import render, render.kernels.blend as b; "
                    "print(b.IMPLEMENTATION, render.__file__)")
    implementation, location = probe.stdout.split()
    assert implementation == "Pillow", probe.stderr
    assert location.startswith(str(fresh_venv / "venv"))  # the installed copy, not the source
    assert not list((fresh_venv / "venv").rglob("_blend*.so"))


@pytest.fixture(scope="module")
def fresh_vaultd(fresh_venv: Path) -> Iterator[tuple[str, Path]]:
    data, port = fresh_venv / "data", free_port()
    log = open(fresh_venv / "vaultd.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [str(fresh_venv / "venv" / "bin" / "vaultd"), "--port", str(port), "--data-dir",
         str(data)], cwd=fresh_venv, env=clean_env(VAULTD_RENDER_WORKERS="1"), stdout=log,
        stderr=subprocess.STDOUT)
    log.close()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert process.poll() is None, (fresh_venv / "vaultd.log").read_text()
        yield url, data
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.slow
def test_that_install_serves_a_watermarked_page(fresh_venv: Path,
                                                fresh_vaultd: tuple[str, Path]) -> None:
    url, data = fresh_vaultd
    account = json.loads(in_venv(fresh_venv, "vault-admin", "--data-dir", str(data), "--json",
                                 "accounts", "create", "No Compiler Co").stdout)
    key = json.loads(in_venv(fresh_venv, "vault-admin", "--data-dir", str(data), "--json",
                             "keys", "create", account["id"]).stdout)["key"]
    with httpx.Client(base_url=f"{url}/v1", headers={"Authorization": f"Bearer {key}"},
                      timeout=60) as api:
        file = upload_ok(api, docs.pdf(pages=1))
        token = create_link(api, file["id"], "ann@client.example")["token"]
        page = api.get(f"/views/{token}/pages/1", headers={"x-viewer-ip": "203.0.113.7"})
    assert page.status_code == 200 and page.headers["content-type"] == "image/jpeg"
    image = Image.open(io.BytesIO(page.content)).convert("L")
    # The pattern's grey ink lies over the white page: many mid-grey pixels, not just text.
    greys = sum(count for level, count in enumerate(image.histogram()) if 40 < level < 215)
    assert greys > image.width * image.height // 200
    assert "watermark blend: Pillow" in (fresh_venv / "vaultd.log").read_text()
