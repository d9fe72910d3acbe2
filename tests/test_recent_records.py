"""The page path's short-lived records (vaultd.services.common.recent)."""

from __future__ import annotations

from tests.manual_clock import Clock
from vaultd.services.common.recent import TTL_SECONDS, RecentRecords
from vaultd.services.storage.rewrap import DROP_GRACE_SECONDS


def test_a_record_is_kept_for_its_ttl_only() -> None:
    clock = Clock(100.0)
    recent: RecentRecords[dict] = RecentRecords(ttl=1.0, clock=clock)
    assert recent.fresh("f1") is None
    recent.keep("f1", {"_id": "f1"})
    clock.now += 0.99
    assert recent.fresh("f1") == {"_id": "f1"}
    clock.now += 0.01
    assert recent.fresh("f1") is None
    recent.keep("f1", {"_id": "f1", "read": 2})
    assert recent.fresh("f1") == {"_id": "f1", "read": 2}


def test_the_oldest_records_go_beyond_capacity() -> None:
    recent: RecentRecords[str] = RecentRecords(capacity=2, clock=Clock(100.0))
    for record_id in ("f1", "f2", "f3"):
        recent.keep(record_id, record_id.upper())
    assert recent.fresh("f1") is None
    assert recent.fresh("f2") == "F2" and recent.fresh("f3") == "F3"


def test_a_kept_wrapped_key_expires_before_a_rotation_drops_the_old_master_key() -> None:
    # File records may carry a data key wrapped under the old master key until they expire.
    assert TTL_SECONDS < DROP_GRACE_SECONDS
