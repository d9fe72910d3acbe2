#!/usr/bin/env bash
# Installs what vaultd needs on a Debian machine: system fonts for watermarks, a C compiler for
# the watermark's blend (optional: without one, vaultd blends with Pillow), and the package
# itself into .venv; `--office` adds LibreOffice (upload.office), `--test` everything the tests
# need. Idempotent; used by scripts/run.sh (when its stamp changed) and
# scripts/test.sh (always).
set -euo pipefail
cd "$(dirname "$0")/.."

# libseccomp2: the render workers' seccomp filter (through pyseccomp).
APT_PACKAGES=(fonts-dejavu-core fonts-droid-fallback gcc libseccomp2)
# LibreOffice without its GUI (~240 MB, about a minute): the Office converter, for vaults that
# turn upload.office on (`--office`) and for the tests (`--test`).
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--office" ]; then
  APT_PACKAGES+=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
fi
# The watermark's blend is a C extension: a compiler, and the interpreter's own headers.
include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$include/Python.h" ] || APT_PACKAGES+=(python3-dev)
if [ "${1:-}" = "--test" ]; then
  # OCR of watermarks, poppler's pdftoppm (benchmarks), Chromium for the browser tests, curl
  # (an upload with Expect: 100-continue, as curl sends it), systemd (`systemd-analyze verify`
  # of deploy/vaultd.service, tests/test_systemd_unit.py).
  APT_PACKAGES+=(tesseract-ocr poppler-utils chromium curl systemd)
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # Through apt-get-wait.sh: another apt holding its lock is waited for, not a failure.
  $SUDO bash scripts/apt-get-wait.sh update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO bash scripts/apt-get-wait.sh install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

# The tests' npm packages meanwhile (they need nothing from Python): the Azure Blob emulator
# for the backend tests, the OpenID Connect provider for the sign-in tests, axe-core for the
# console's browser tests. About half a minute, hidden behind pip's install.
npm_pids=()
if [ "${1:-}" = "--test" ]; then
  for installer in install-azurite install-oidc-provider install-axe; do
    bash "scripts/$installer.sh" &
    npm_pids+=($!)
  done
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  # --no-compile: pip would byte-compile every module of every package (about a minute of the
  # two a fresh test install takes, most of it modules no test imports); the tests' processes
  # write the bytecode of what they import at its first import instead. A service's install
  # keeps pip's bytecode: its user may not be able to write it later.
  .venv/bin/python -m pip install -q --no-compile -e ".[test]"
else
  .venv/bin/python -m pip install -q -e .
fi
for pid in "${npm_pids[@]}"; do
  wait "$pid"
done
bash scripts/stamp.sh > .venv/.setup-stamp   # scripts/run.sh skips this script while it matches
