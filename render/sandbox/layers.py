"""The sandbox's layers, as a bit mask a worker reports in its READY message."""

from __future__ import annotations

from enum import IntFlag


class Layer(IntFlag):
    NO_NEW_PRIVS = 1
    SECCOMP = 2
    LANDLOCK_FS = 4
    LANDLOCK_NET = 8
    LANDLOCK_SCOPE = 16
    NET_NAMESPACE = 32
    OWN_IDENTITY = 64  # another uid (vaultd as root) or a user namespace
    RLIMITS = 128
    CLEAN_ENV = 256


ALL_LAYERS = Layer(sum(Layer))

# Variables a worker must never inherit: vaultd's own (the master key, backend settings) and the
# cloud SDKs' credential chains (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AZURE_CLIENT_SECRET).
SECRET_ENV_PREFIXES = ("VAULTD_", "AWS_", "AZURE_")

DESCRIPTIONS = {
    Layer.NO_NEW_PRIVS: "PR_SET_NO_NEW_PRIVS: no privilege gain through exec",
    Layer.SECCOMP: "seccomp-bpf allow-list: no socket, exec, ptrace, mount, unshare, kill",
    Layer.LANDLOCK_FS: "Landlock: no file writes, reads only of the interpreter, libraries, fonts",
    Layer.LANDLOCK_NET: "Landlock: no TCP bind or connect",
    Layer.LANDLOCK_SCOPE: "Landlock: no signals or abstract sockets outside the worker",
    Layer.NET_NAMESPACE: "own network namespace: no interface but a downed loopback",
    Layer.OWN_IDENTITY: "own uid (vaultd as root) or own user namespace",
    Layer.RLIMITS: "hard rlimits: address space, open files, processes, CPU time",
    Layer.CLEAN_ENV: "no VAULTD_*, AWS_* or AZURE_* variable in the environment",
}


def names(mask: int) -> list[str]:
    return [layer.name.lower() for layer in Layer if mask & layer and layer.name]


def report(mask: int) -> dict[str, bool]:
    """Each layer by name: active or not."""
    return {layer.name.lower(): bool(mask & layer) for layer in Layer if layer.name}
