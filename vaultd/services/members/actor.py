"""Who is acting: the caller every request and CLI command is attributed to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vaultd.services.members.roles import Permission, Role, require

ActorKind = Literal["key", "member", "operator"]


@dataclass(frozen=True)
class Actor:
    """An API key, a signed-in member, or the operator at `vault-admin`.

    `id` is the key's id, the member's id, or "operator"; `label` is what the activity log
    shows a person (the member's email, the key's name)."""

    account_id: str
    role: Role
    kind: ActorKind
    id: str
    label: str

    def require(self, permission: Permission) -> None:
        require(self.role, permission)

    def as_record(self) -> dict[str, str]:
        """The actor as stored beside what it did (`actor` of log and activity entries)."""
        return {"kind": self.kind, "id": self.id, "label": self.label}


def operator(account_id: str) -> Actor:
    return Actor(account_id=account_id, role=Role.ADMIN, kind="operator", id="operator",
                 label="operator")
