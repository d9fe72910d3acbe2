"""Plans, per spec section 8. The spec shows only Pro's id, price and support; the Free and
Business values here are ours and are documented in docs/operations.md (Plans)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

GB = 1024**3


@dataclass(frozen=True)
class Plan:
    id: str
    name: str
    priceCents: int
    maxDocuments: int | None
    maxStorageBytes: int
    maxViewSeconds: int
    customWatermark: bool
    accessLogExport: bool
    maxApiKeys: int
    support: str
    maxRooms: int | None = 0  # data rooms (services.rooms); None: unlimited
    minViewSeconds: int = 60

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body.pop("minViewSeconds")
        return body


PLANS: dict[str, Plan] = {
    "free": Plan("free", "Free", 0, 100, GB, 604_800, False, False, 2, "Community support"),
    "pro": Plan("pro", "Pro", 4900, 5000, 26_843_545_600, 2_592_000, True, False, 10,
                "Email support, next business day", maxRooms=10),
    "business": Plan("business", "Business", 24900, None, 200 * GB, 2_592_000, True, True, 50,
                     "Priority support, 4-hour response", maxRooms=None),
}


def get_plan(plan_id: str) -> Plan:
    try:
        return PLANS[plan_id]
    except KeyError:
        raise ValueError(f"unknown plan {plan_id!r} (plans: {', '.join(PLANS)})") from None
