#!/usr/bin/env bash
# apt-get, waiting for apt's locks when another process holds them (an unattended upgrade on a
# fresh machine, another install) rather than stopping at once: up to APT_LOCK_WAIT seconds
# (600 by default). dpkg's lock is waited for by apt itself (DPkg::Lock::Timeout); the package
# lists' lock of `apt-get update` is not (apt 2.6 fails at once), so a run refused for a lock is
# tried again, saying so, until the wait is spent. Arguments go to apt-get.
set -uo pipefail
wait_for=${APT_LOCK_WAIT:-600}
deadline=$((SECONDS + wait_for))
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
said=""
while true; do
  apt-get -o DPkg::Lock::Timeout="$wait_for" "$@" 2>"$errors"
  status=$?
  if [ "$status" -eq 0 ] || ! grep -q "Could not get lock" "$errors" || [ "$SECONDS" -ge "$deadline" ]; then
    cat "$errors" >&2
    exit "$status"
  fi
  if [ -z "$said" ]; then
    echo "apt-get-wait: $(grep -m1 'Could not get lock' "$errors" | sed 's/^E: //'); waiting for it (up to ${wait_for} s)" >&2
    said=1
  fi
  sleep 1  # apt offers no way to be told when the lock is free: asked again each second
done
