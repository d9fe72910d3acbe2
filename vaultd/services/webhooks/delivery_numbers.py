"""A number per delivery attempt in its endpoint, so that an endpoint's latest deliveries
(`GET /v1/webhooks/:id/deliveries`) are read by number ranges (`services.common.numbered`): the
read costs the 50 it shows whatever the deliveries' times, where time windows read a whole burst
(a day's retries sent at once after an outage) once a window reached it.

The number comes from the endpoint's counter (`common.counters`, `deliveries:<endpoint id>`),
taken just before the attempt's record is inserted (a failed insert leaves a gap, stepped
over). Attempts recorded before numbers existed are numbered once at start-up, 0 and down.
"""

from __future__ import annotations

from datetime import UTC, datetime

from vaultd.db import Db
from vaultd.services.common import counters
from vaultd.services.common.numbered import number_unnumbered

DELIVERY_NUMBER_MIGRATION = "deliverySeq"


def scope(endpoint_id: str) -> str:
    """The endpoint's counter (`common.counters`)."""
    return f"deliveries:{endpoint_id}"


async def next_number(db: Db, endpoint_id: str) -> int:
    return await counters.next_number(db, scope(endpoint_id))


async def bounds(db: Db, endpoint_id: str) -> tuple[int, int]:
    """(top, floor): the endpoint's last number given and the lowest any attempt has."""
    return await counters.bounds(db, scope(endpoint_id))


async def number_deliveries_once(db: Db) -> None:
    """Attempts recorded before numbers existed get numbers below their endpoint's first new
    one (newest 0, then -1, -2... by time); a marker in `migrations` keeps later start-ups from
    looking again. Attempts of deleted endpoints are shown by no one and left as they are."""
    marks = db.raw("migrations")
    if await marks.find_one({"_id": DELIVERY_NUMBER_MIGRATION}) is not None:
        return
    async for endpoint in db.raw(db.webhook_endpoints.name).find({}, {"_id": 1}):
        await number_endpoint_deliveries(db, endpoint["_id"])
    await marks.update_one({"_id": DELIVERY_NUMBER_MIGRATION},
                           {"$set": {"at": datetime.now(UTC)}}, upsert=True)


async def number_endpoint_deliveries(db: Db, endpoint_id: str) -> None:
    """Numbers one endpoint's unnumbered attempts (see `number_deliveries_once`)."""
    lowest = await number_unnumbered(db.raw(db.webhook_deliveries.name),
                                     {"endpointId": endpoint_id}, "at", "seq")
    if lowest is not None:
        await counters.lower_floor(db, scope(endpoint_id), lowest)
