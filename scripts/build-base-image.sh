#!/usr/bin/env bash
# Builds a minimal Debian bookworm root file system with debootstrap and imports it as the
# container image's BASE_IMAGE (default tag vaultd-base:bookworm-slim). For machines that reach
# Debian's package mirror but no container registry; where debian:bookworm-slim can be pulled,
# use it instead (docker build --build-arg BASE_IMAGE=debian:bookworm-slim).
# Usage: scripts/build-base-image.sh [TAG]   (does nothing when TAG exists; needs root)
set -euo pipefail

TAG=${1:-vaultd-base:bookworm-slim}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "base image $TAG exists"
    exit 0
fi
if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
fi

ROOT=$(mktemp -d /tmp/vaultd-base.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
# minbase: essential packages and apt only, as in the official slim image.
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >/dev/null
echo "deb $MIRROR bookworm main" > "$ROOT/etc/apt/sources.list"
echo "deb $MIRROR bookworm-updates main" >> "$ROOT/etc/apt/sources.list"
# What the slim image leaves out: documentation, manuals, apt's caches and lists.
rm -rf "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* \
       "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/log/*.log
tar --numeric-owner -C "$ROOT" -c . \
    | docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' - "$TAG" >/dev/null
echo "built base image $TAG"
