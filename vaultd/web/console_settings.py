"""The console's Settings page: the account's members and roles, its API keys (a new key shown
once), its webhooks, its branding, the member's own notifications, and the plan with its usage
as meters.

Every form posts to a route of its own, held to the same permission as the `/v1` route it
mirrors (members and keys: MANAGE_ACCOUNT; a member's own notifications: READ), then redirects
back with a flash line. The one exception is a new key: it is shown in the answer to its form
and nowhere else (never in a URL, a flash or a log), so that answer is the page itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultd.errors import Conflict
from vaultd.services.accounts.api_keys import ApiKeyInfo
from vaultd.services.members import activity, branding, keys, members
from vaultd.services.members.roles import Role
from vaultd.services.notifications import prefs
from vaultd.services.webhooks import webhook_test_event, webhooks
from vaultd.web.client_ip import viewer_ip
from vaultd.web.console_page import ConsolePage
from vaultd.web.permissions import MANAGE, READ

SETTINGS_PATH = "/console/settings"
NO_MAIL = "this server sends no mail (smtp.host is not set): notifications cannot be sent"
ROLES = tuple(role.value for role in Role)


@dataclass(frozen=True)
class KeyRow:
    """A key as the table shows it: who made it, and whether that member has since gone."""

    info: ApiKeyInfo
    creator: str
    creator_removed: bool


@dataclass(frozen=True)
class Meter:
    label: str
    used: int
    limit: int | None  # None: unlimited
    text: str  # what a screen reader and a reader of the text read


class SettingsBase(ConsolePage):
    section = "settings"

    def form(self, name: str) -> str:
        return self.get_body_argument(name, "") or ""

    def caller_ip(self) -> str | None:
        return viewer_ip(self.request, self.ctx.settings.proxy_trusted)

    async def show(self, status: int = 200, new_key: str | None = None,
                   new_secret: str | None = None) -> None:
        assert self.account is not None and self.actor is not None
        db, account_id = self.ctx.db, self.account.id
        people = await members.list_members(db, account_id)
        present = {doc["_id"] for doc in people}
        rows = [_key_row(info, present) for info in await keys.list_keys(db, account_id)]
        mine = (await prefs.read(db, self.actor.id) if self.actor.kind == "member"
                else prefs.as_json(None))
        self.page("settings.html", "Settings", status=status, people=people, roles=ROLES,
                  keys=rows, new_key=new_key, notifications=mine,
                  mail_on=bool(self.ctx.settings.smtp_host), plan=self.account.plan,
                  meters=self.meters(), me=self.actor.id, new_secret=new_secret,
                  hooks_on=self.account.plan.id in webhooks.PLANS_WITH_WEBHOOKS,
                  events=webhooks.EVENTS, endpoints=await self.endpoints(),
                  account=self.account,
                  branding_on=branding.plan_allows_branding(self.account))

    async def endpoints(self) -> list[dict[str, Any]]:
        """Each endpoint with its latest deliveries (at most 10 endpoints, 50 each)."""
        assert self.account is not None
        db, account_id = self.ctx.db, self.account.id
        return [{**endpoint, "deliveries": await webhooks.latest_deliveries(
                    db, account_id, endpoint["id"])}
                for endpoint in await webhooks.list_endpoints(db, account_id)]

    def meters(self) -> list[Meter]:
        assert self.account is not None and self.signed_in is not None
        account = self.signed_in.account
        assert account is not None  # a console page's session has its account chosen
        usage = account["usage"]
        plan = self.account.plan
        documents, stored = int(usage["documents"]), int(usage["storageBytes"])
        return [
            Meter("Documents", documents, plan.maxDocuments,
                  f"{documents} of {plan.maxDocuments} documents" if plan.maxDocuments
                  else f"{documents} documents (no limit)"),
            Meter("Storage", stored, plan.maxStorageBytes,
                  f"{_size(stored)} of {_size(plan.maxStorageBytes)}"),
        ]


def _key_row(info: ApiKeyInfo, present: set[str]) -> KeyRow:
    made_by = info.created_by or {}
    removed = made_by.get("kind") == "member" and made_by.get("id") not in present
    return KeyRow(info, made_by.get("label") or "the operator", removed)


def _size(count: int) -> str:
    value, unit = float(count), "bytes"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            break
        value /= 1000
    return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


class SettingsPage(SettingsBase):
    async def get(self) -> None:
        await self.show()


class CreateKeyForm(SettingsBase):
    async def post(self) -> None:
        assert self.actor is not None
        role = members.parse_role(self.form("role") or Role.ADMIN.value)
        _, key = await keys.create(self.ctx.db, self.actor, name=self.form("name"),
                                      role=role, ip=self.caller_ip())
        await self.show(201, new_key=key)


class RevokeKeyForm(SettingsBase):
    async def post(self, key_id: str) -> None:
        assert self.actor is not None
        await keys.revoke(self.ctx.db, self.actor, key_id, ip=self.caller_ip())
        self.done(SETTINGS_PATH, "key-revoked")


class InviteMemberForm(SettingsBase):
    async def post(self) -> None:
        assert self.actor is not None
        email = members.parse_email(self.form("email"))
        await members.add_member(self.ctx.db, self.actor, email,
                                 role=members.parse_role(self.form("role")),
                                 name=members.parse_name(self.form("name")), ip=self.caller_ip())
        self.done(SETTINGS_PATH, "member-invited")


class MemberRoleForm(SettingsBase):
    async def post(self, member_id: str) -> None:
        assert self.actor is not None
        await members.set_role(self.ctx.db, self.actor, member_id,
                               members.parse_role(self.form("role")), ip=self.caller_ip())
        self.done(SETTINGS_PATH, "role-changed")


class RemoveMemberForm(SettingsBase):
    async def post(self, member_id: str) -> None:
        assert self.actor is not None
        await members.remove_member(self.ctx.db, self.actor, member_id, ip=self.caller_ip())
        self.done(SETTINGS_PATH, "member-removed")


class CreateWebhookForm(SettingsBase):
    """The endpoint's signing secret is shown in the answer, once, as a new key is."""

    async def post(self) -> None:
        assert self.account is not None and self.actor is not None
        request = webhooks.parse_endpoint_request(
            {"url": self.form("url"), "events": self.get_body_arguments("events")})
        created = await webhooks.create_endpoint(self.ctx.db, self.ctx.store.keyring,
                                                 self.account, request)
        await activity.record(self.ctx.db, self.actor, "webhook.created", target=created["id"],
                              ip=self.caller_ip())
        await self.show(201, new_secret=created["secret"])


class DeleteWebhookForm(SettingsBase):
    async def post(self, endpoint_id: str) -> None:
        assert self.account is not None and self.actor is not None
        await webhooks.delete_endpoint(self.ctx.db, self.account.id, endpoint_id)
        await activity.record(self.ctx.db, self.actor, "webhook.deleted", target=endpoint_id,
                              ip=self.caller_ip())
        self.done(SETTINGS_PATH, "webhook-deleted")


class TestWebhookForm(SettingsBase):
    """Queues a test event for the endpoint; its attempt shows in the delivery log below."""

    async def post(self, endpoint_id: str) -> None:
        assert self.account is not None
        await webhook_test_event.send_test_event(self.ctx.db, self.account, endpoint_id)
        self.done(SETTINGS_PATH, "webhook-test-sent")


class BrandingForm(SettingsBase):
    async def post(self) -> None:
        assert self.account is not None and self.actor is not None
        await branding.change(self.ctx.db, self.actor, self.account, self.form("branding"),
                              ip=self.caller_ip())
        self.done(SETTINGS_PATH, "branding-saved")


class NotificationsForm(SettingsBase):
    """Checkboxes: an unchecked box sends nothing, so both fields are always set here."""

    async def post(self) -> None:
        assert self.account is not None and self.actor is not None
        wanted = {"firstOpen": self.form("firstOpen") == "on",
                  "dailyDigest": self.form("dailyDigest") == "on"}
        if any(wanted.values()) and not self.ctx.settings.smtp_host:
            raise Conflict(NO_MAIL)
        await prefs.change(self.ctx.db, self.account.id, self.actor.id, wanted)
        self.done(SETTINGS_PATH, "notifications-saved")


ROUTES = [
    (r"/console/settings", SettingsPage),
    (r"/console/settings/keys", CreateKeyForm),
    (r"/console/settings/keys/([^/]+)/revoke", RevokeKeyForm),
    (r"/console/settings/members", InviteMemberForm),
    (r"/console/settings/members/([^/]+)/role", MemberRoleForm),
    (r"/console/settings/members/([^/]+)/remove", RemoveMemberForm),
    (r"/console/settings/notifications", NotificationsForm),
    (r"/console/settings/webhooks", CreateWebhookForm),
    (r"/console/settings/webhooks/([^/]+)/delete", DeleteWebhookForm),
    (r"/console/settings/webhooks/([^/]+)/test", TestWebhookForm),
    (r"/console/settings/branding", BrandingForm),
]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/settings": {"GET": READ},
    r"/console/settings/keys": {"POST": MANAGE},
    r"/console/settings/keys/([^/]+)/revoke": {"POST": MANAGE},
    r"/console/settings/members": {"POST": MANAGE},
    r"/console/settings/members/([^/]+)/role": {"POST": MANAGE},
    r"/console/settings/members/([^/]+)/remove": {"POST": MANAGE},
    # A member's own mail choices, not the account's records: an auditor may choose theirs.
    r"/console/settings/notifications": {"POST": READ},
    r"/console/settings/webhooks": {"POST": MANAGE},
    r"/console/settings/webhooks/([^/]+)/delete": {"POST": MANAGE},
    r"/console/settings/webhooks/([^/]+)/test": {"POST": MANAGE},
    r"/console/settings/branding": {"POST": MANAGE},
}
