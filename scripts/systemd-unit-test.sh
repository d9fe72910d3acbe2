#!/usr/bin/env bash
# Runs deploy/vaultd.service under a real systemd (PID 1 of a container made from vaultd's
# image, whose virtual environment sits where the unit expects it: /opt/vaultd/venv) and checks
# that its hardening is applied and still leaves the render sandbox complete: every layer
# active, pages rendered. Called by scripts/container-test.sh with the image it built.
# Usage: scripts/systemd-unit-test.sh IMAGE
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=$1
NAME=vaultd-unit-$$
say() { echo "systemd-unit-test: $*"; }
fail() { echo "systemd-unit-test: FAILED: $*" >&2; exit 1; }
WORK=$(mktemp -d)
cleanup() { docker rm -fv "$NAME" >/dev/null 2>&1 || true; docker rmi "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

cp deploy/vaultd.service "$WORK/"
cat > "$WORK/Dockerfile" <<DOCKERFILE
FROM $IMAGE
USER root
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends systemd systemd-sysv >/dev/null && rm -rf /var/lib/apt/lists/*
COPY vaultd.service /etc/systemd/system/vaultd.service
RUN systemctl enable vaultd && systemctl mask systemd-logind console-getty
ENTRYPOINT []
CMD ["/lib/systemd/systemd"]
DOCKERFILE
docker build -q -t "$NAME" "$WORK" >/dev/null
"${PYTHON:-.venv/bin/python}" -c "import sys; from tests import documents; sys.stdout.buffer.write(documents.pdf(pages=2))" > "$WORK/doc.pdf"

# systemd as PID 1 needs to mount and to make namespaces: SYS_ADMIN, no Docker seccomp filter.
# The unit's own restrictions are systemd's to apply, as on a host.
docker run -d --name "$NAME" --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
  --tmpfs /run --tmpfs /run/lock -v /sys/fs/cgroup:/sys/fs/cgroup:ro "$NAME" >/dev/null
in_box() { docker exec "$NAME" "$@"; }
healthz() { in_box python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=3).read().decode())" 2>/dev/null; }
for _ in $(seq 90); do healthz >/dev/null && break; sleep 1; done
health=$(healthz) || fail "vaultd did not answer: $(in_box journalctl -u vaultd --no-pager | tail -5)"
echo "$health" | grep -q '"complete": true' || fail "sandbox incomplete under the unit: $health"
pid=$(in_box systemctl show -p MainPID --value vaultd)
status=$(in_box cat /proc/"$pid"/status)
echo "$status" | grep -q "^NoNewPrivs:.1" || fail "NoNewPrivileges not applied"
echo "$status" | grep -q "^Seccomp:.2" || fail "SystemCallFilter not applied"
echo "$status" | grep -q "^CapBnd:.0000000000000000" || fail "CapabilityBoundingSet not applied"
in_box grep -q " / / ro," /proc/"$pid"/mountinfo || fail "ProtectSystem=strict not applied"
say "vaultd runs under the unit: no_new_privs, systemd's seccomp filter, no capability, / read-only; every sandbox layer active"

docker cp "$WORK/doc.pdf" "$NAME:/tmp/doc.pdf"
admin() { in_box runuser -u vaultd -- /opt/vaultd/venv/bin/vault-admin --data-dir /var/lib/vaultd --json "$@"; }
field() { "${PYTHON:-.venv/bin/python}" -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
ACCOUNT=$(admin accounts create "Unit Co" --plan pro | field id)
KEY=$(admin keys create "$ACCOUNT" | field key)
in_box python3 - "$KEY" <<'PY' || fail "pages not rendered under the unit"
import json, sys, urllib.request
def call(method, path, data=None, headers=None):
    request = urllib.request.Request("http://127.0.0.1:8080/v1" + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + sys.argv[1], **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.read()
file_id = json.loads(call("POST", "/files", open("/tmp/doc.pdf", "rb").read(),
                          {"Content-Type": "application/pdf"}))["id"]
token = json.loads(call("POST", "/views", json.dumps({"fileId": file_id, "viewerEmail": "a@b.example"}).encode(),
                        {"Content-Type": "application/json"}))["token"]
for page in (1, 2):
    assert call("GET", f"/views/{token}/pages/{page}")[:3] == b"\xff\xd8\xff"
PY
say "upload and pages rendered under the unit"
