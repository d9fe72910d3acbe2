"""The tamper-evident audit log: how fast entries are sequenced and how often checkpoints are
signed (services.audit, docs/audit.md)."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import boolean, integer, number, text


@dataclass(frozen=True)
class AuditSettings:
    audit_merge_delay_seconds: float = setting(
        "audit.merge_delay_seconds", number(0.05, 60.0), 1.0, "VAULTD_AUDIT_MERGE_DELAY_SECONDS",
        "How long a new log entry may wait for its index in the audit tree (the merge delay).")
    audit_late_arrival_seconds: float = setting(
        "audit.late_arrival_seconds", number(0.0, 3600.0), 5.0,
        "VAULTD_AUDIT_LATE_ARRIVAL_SECONDS",
        "How far behind the newest entry each round looks again for entries that landed late "
        "(stamped by a process's clock before their insert).")
    audit_lease_seconds: float = setting(
        "audit.lease_seconds", number(2.0, 3600.0), 15.0, "VAULTD_AUDIT_LEASE_SECONDS",
        "How long one process holds the sequencer before another may take it over.")
    audit_checkpoint_every_entries: int = setting(
        "audit.checkpoint_every_entries", integer(1, 10**9), 1000,
        "VAULTD_AUDIT_CHECKPOINT_EVERY_ENTRIES",
        "A signed checkpoint after this many new entries of an account...")
    audit_checkpoint_every_seconds: float = setting(
        "audit.checkpoint_every_seconds", number(0.0, 86400.0), 60.0,
        "VAULTD_AUDIT_CHECKPOINT_EVERY_SECONDS",
        "...or once its oldest unsigned entry is this old.")
    audit_origin: str = setting(
        "audit.origin", text, "vaultd.local/audit", "VAULTD_AUDIT_ORIGIN",
        "The checkpoints' origin prefix (`<origin>/<account id>`) and the signing key's name.")
    audit_enabled: bool = setting(
        "audit.enabled", boolean, True, "VAULTD_AUDIT_ENABLED",
        "Whether this process runs the audit log's sequencer (off: it neither sequences nor "
        "signs; the routes still serve the tree other processes extend).")
