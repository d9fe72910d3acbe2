#!/usr/bin/env bash
# Builds vaultd's container image and smoke-tests it over HTTP, as an operator would run it:
# the render sandbox complete under deploy/container-seccomp.json and refused to start without
# it, upload, link, page, trace, doctor, metrics, a restart on the same volume, and no secret
# in any image layer; then deploy/vaultd.service under systemd in a container made from the
# image (scripts/systemd-unit-test.sh). Needs root (dockerd, apt-get) or a running docker.
# Environment: BASE_IMAGE (default: debian:bookworm-slim when present, else one built with
# debootstrap by scripts/build-base-image.sh), KEEP_IMAGE=0 to remove the image afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
started=$(date +%s)
say() { echo "container-test: $*"; }
fail() { echo "container-test: FAILED: $*" >&2; exit 1; }

# --- docker ---------------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
  fi
  say "starting dockerd"
  nohup dockerd >/tmp/vaultd-container-test-dockerd.log 2>&1 &
  DOCKERD_PID=$!  # stopped again at exit: this script started it
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || fail "dockerd did not start (see /tmp/vaultd-container-test-dockerd.log)"
fi

# --- build ----------------------------------------------------------------------------------
if [ -z "${BASE_IMAGE:-}" ]; then
  BASE_IMAGE=debian:bookworm-slim
  if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    BASE_IMAGE=vaultd-base:bookworm-slim
    bash scripts/build-base-image.sh "$BASE_IMAGE"
  fi
fi
# Wheels fetched on the host, with its pip settings (certificates, mirrors, constraints):
# the image never needs them, and a proxy's CA never enters a layer.
PY=${PYTHON:-$ROOT/.venv/bin/python}
# The same requirements as the image's (every registered backend's extra: backends.requirements).
"$PY" -m backends.requirements pyproject.toml 'setuptools>=69' > build-requirements.tmp
mkdir -p build/wheels
"$PY" -m pip wheel -q --disable-pip-version-check --wheel-dir build/wheels -r build-requirements.tmp 2>&1 | grep -v "is ignored" || true
rm -f build-requirements.tmp

# A canary in every place a secret could come from: none may reach a layer of the image.
# (Layers are read as one stream of concatenated tar files: -i reads past each one's end.)
CANARY="vaultd-canary-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
mkdir -p vault-data
cleanup_canaries() { rm -f vault-data/canary.key render/canary.key .env.canary; rmdir vault-data 2>/dev/null || true; }
trap cleanup_canaries EXIT
echo "$CANARY" > vault-data/canary.key
echo "$CANARY" > render/canary.key
echo "VAULTD_MASTER_KEY=$CANARY" > .env.canary
IMAGE=vaultd:test
say "building $IMAGE on $BASE_IMAGE"
# The build stage tagged too: the previous one, untagged, can then be pruned, and this one
# stays as the next build's cache.
build_image() {
  docker build "$@" --build-arg BASE_IMAGE="$BASE_IMAGE" \
    --build-arg PIP_OPTIONS="--no-index --find-links /src/wheels" . \
    >build/docker-build.log 2>&1 || { tail -30 build/docker-build.log; fail "docker build"; }
}
build_image --target build -t vaultd:build-stage
build_image -t "$IMAGE"
cleanup_canaries
built=$(date +%s)
say "built in $((built - started)) s"

if docker save "$IMAGE" | tar -xO --wildcards '*/layer.tar' 2>/dev/null | tar -tvi 2>/dev/null \
    | grep -E "canary|master\.key|db-credentials|\.venv/|vault-data" ; then
  fail "a file that must stay out of the image is in a layer"
fi
# The canary, and anything shaped like an API key (sd_live_ + 43 characters).
leaked=$(docker save "$IMAGE" | tar -xO --wildcards '*/layer.tar' | tar -xOi 2>/dev/null \
  | grep -aoE "$CANARY|sd_live_[A-Za-z0-9_-]{43}" | head -3 | cut -c1-16 || true)
[ -z "$leaked" ] || fail "a secret is in an image layer: $leaked..."
docker history --no-trunc "$IMAGE" | grep -qiE "$CANARY|MASTER_KEY|SECRET|PASSWORD" \
  && fail "docker history names a secret"
docker inspect -f '{{.Config.User}}' "$IMAGE" | grep -qx vaultd || fail "the image runs as root"
say "no secret in the image; it runs as user vaultd"

# --- run ------------------------------------------------------------------------------------
NAME=vaultd-ct-$$
VOLUME=vaultd-ct-data-$$
SECCOMP="$ROOT/deploy/container-seccomp.json"
port_of() { docker port "$NAME" "$1" | head -1 | sed 's/.*://'; }
cleanup() {
  cleanup_canaries
  docker rm -fv "$NAME" "$NAME-bare" >/dev/null 2>&1 || true
  docker volume rm "$VOLUME" >/dev/null 2>&1 || true
  [ "${KEEP_IMAGE:-1}" = 1 ] || docker rmi "$IMAGE" >/dev/null 2>&1 || true
  # Earlier builds of this image, untagged by this one (the cache keeps their layers).
  docker image prune -f --filter label=vaultd.stage >/dev/null 2>&1 || true
  if [ -n "${DOCKERD_PID:-}" ]; then kill "$DOCKERD_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

# Without the profile Docker's own seccomp refuses unshare(): "required" must refuse to start.
set +e
bare=$(docker run --name "$NAME-bare" -e VAULTD_RENDER_SANDBOX=required "$IMAGE" 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "without the seccomp profile, required started (exit $code): $bare"
grep -q 'render.sandbox is "required" but these layers are missing: net_namespace, own_identity' \
  <<<"$bare" || fail "without the profile: $bare"
say "without the seccomp profile: refused to start, naming net_namespace, own_identity"

run() {
  docker run -d --name "$NAME" --security-opt seccomp="$SECCOMP" \
    -e VAULTD_RENDER_SANDBOX=required -e VAULTD_METRICS_HOST=0.0.0.0 -e VAULTD_METRICS_PORT=9100 \
    -p 127.0.0.1::8080 -p 127.0.0.1::9100 -v "$VOLUME:/data" "$IMAGE" >/dev/null
  for _ in $(seq 120); do
    [ "$(docker inspect -f '{{.State.Health.Status}}' "$NAME")" = healthy ] && break
    [ "$(docker inspect -f '{{.State.Running}}' "$NAME")" = true ] || fail "vaultd exited: $(docker logs "$NAME" 2>&1 | tail -5)"
    sleep 1
  done
  [ "$(docker inspect -f '{{.State.Health.Status}}' "$NAME")" = healthy ] || fail "not healthy: $(docker logs "$NAME" 2>&1 | tail -5)"
  B="http://127.0.0.1:$(port_of 8080)/v1"
  METRICS="http://127.0.0.1:$(port_of 9100)/metrics"
}
field() { "$PY" -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
fetch() { local out=$1; shift; curl -s -o "$out" -w "%{http_code}" "$@"; }
status() { fetch /dev/null "$@"; }

run
say "healthy (HEALTHCHECK on /healthz)"
# Captured, then searched: `doctor | grep -q` let grep exit at the match while doctor (through
# docker exec) was still writing, and pipefail failed the run on that broken pipe (seen once).
doctor=$(docker exec "$NAME" vault-admin doctor) || fail "doctor failed: $doctor"
grep -q "every layer active" <<<"$doctor" || fail "doctor: $doctor"
say "vault-admin doctor: every layer active"

ACCOUNT=$(docker exec "$NAME" vault-admin --json accounts create "Container Co" --plan pro | field id)
KEY=$(docker exec "$NAME" vault-admin --json keys create "$ACCOUNT" | field key)
AUTH="Authorization: Bearer $KEY"
WORK=$(mktemp -d)
"$PY" -c "import sys; from tests import documents; sys.stdout.buffer.write(documents.pdf(pages=2))" > "$WORK/doc.pdf"
FILE=$(curl -sf -X POST "$B/files" -H "$AUTH" -H "Content-Type: application/pdf" \
       -H "x-file-name: smoke.pdf" --data-binary @"$WORK/doc.pdf" | field id)
TOKEN=$(curl -sf -X POST "$B/views" -H "$AUTH" -H "Content-Type: application/json" \
        -d "{\"fileId\": \"$FILE\", \"viewerEmail\": \"ann@client.example\"}" | field token)
code=$(fetch "$WORK/page.jpg" "$B/views/$TOKEN/pages/2" -H "$AUTH")
[ "$code" = 200 ] || fail "page 2: $code $(head -c 300 "$WORK/page.jpg"); $(docker logs "$NAME" 2>&1 | tail -5)"
[ "$(head -c 3 "$WORK/page.jpg" | od -An -tx1 | tr -d ' ')" = ffd8ff ] || fail "page 2 is not a JPEG"
found=$(curl -sf -X POST "$B/trace" -H "$AUTH" -H "Content-Type: image/jpeg" --data-binary @"$WORK/page.jpg")
echo "$found" | "$PY" -c "import json, sys; m = json.load(sys.stdin)['matches']; assert m[0]['fileId'] == '$FILE' and m[0]['page'] == 2, m" \
  || fail "trace did not lead back to the page: $found"
say "upload, link, page, trace: the leaked page leads back to its view"

scrape=$(curl -sf "$METRICS")
grep -q 'vaultd_http_requests_total{method="GET",route="/v1/views/{}/pages/{}",status="200"} 1.0' \
  <<<"$scrape" || fail "metrics did not count the page"
echo "$scrape" | grep -q "$TOKEN" && fail "the token is in the metrics"
[ "$(status "${B%/v1}/metrics")" = 404 ] || fail "/metrics answered on the public port"
docker logs "$NAME" 2>&1 | grep -qF "$KEY" && fail "the API key is in the log"
say "metrics on their own port count the page; none on the public port; no key in the log"

docker rm -fv "$NAME" >/dev/null
run
[ "$(status "$B/views/$TOKEN/pages/1" -H "$AUTH")" = 200 ] || fail "the link did not survive a restart"
curl -sf "$B/files/$FILE" -H "$AUTH" | grep -q smoke.pdf || fail "the file did not survive a restart"
say "a new container on the same volume serves the same link"
rm -rf "$WORK"
docker rm -fv "$NAME" >/dev/null
bash scripts/systemd-unit-test.sh "$IMAGE"   # deploy/vaultd.service under a real systemd
say "passed in $(( $(date +%s) - started )) s (build $((built - started)) s)"
