"""What each role may do. The one policy every caller (API key or member session) is held to.

Three roles, from the most to the least:
- `admin`: everything, including the account itself (members, API keys, webhooks, branding);
- `member`: the account's content (files, links, rooms, traces) and reading everything;
- `auditor`: reads files, links, rooms, the access log, analytics and exports; changes nothing.

A route (or a service) names the one `Permission` it needs and calls `require`; the refusal is a
403 whose message names the role, so the person refused knows why. To add a permission: add it
to `Permission` with the words a refusal shows, then to the roles that hold it below.
"""

from __future__ import annotations

from enum import StrEnum

from vaultd.errors import Forbidden


class Role(StrEnum):
    ADMIN = "admin"
    MEMBER = "member"
    AUDITOR = "auditor"


class Permission(StrEnum):
    """Each value is the phrase a refusal ends with: "the auditor role cannot <value>"."""

    READ = "read this account's records"
    CHANGE_CONTENT = "change files, links or rooms"
    TRACE = "trace leaked images"
    MANAGE_ACCOUNT = "manage members, API keys, webhooks or branding"


ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.ADMIN: frozenset(Permission),
    Role.MEMBER: frozenset({Permission.READ, Permission.CHANGE_CONTENT, Permission.TRACE}),
    Role.AUDITOR: frozenset({Permission.READ}),
}


def allows(role: Role, permission: Permission) -> bool:
    return permission in ROLE_PERMISSIONS[role]


def require(role: Role, permission: Permission) -> None:
    """Refuse (403, naming the role) what `role` may not do."""
    if not allows(role, permission):
        raise Forbidden(f"the {role.value} role cannot {permission.value}")
