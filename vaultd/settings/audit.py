"""The tamper-evident audit log: how fast entries are sequenced and how often checkpoints are
signed (services.audit, docs/audit.md)."""

from __future__ import annotations

from dataclasses import dataclass

from vaultd.settings.declare import setting
from vaultd.settings.parsers import boolean, choice, integer, number, text


@dataclass(frozen=True)
class AuditSettings:
    audit_merge_delay_seconds: float = setting(
        "audit.merge_delay_seconds", number(0.05, 60.0), 1.0, "VAULTD_AUDIT_MERGE_DELAY_SECONDS",
        "How long a new log entry may wait for its index in the audit tree (the merge delay).")
    audit_late_arrival_seconds: float = setting(
        "audit.late_arrival_seconds", number(0.0, 3600.0), 0.5,
        "VAULTD_AUDIT_LATE_ARRIVAL_SECONDS",
        "How long after its stamp a log entry may land before the log fence refuses it and "
        "its writer stamps it again; each round reads what is that recent again.")
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
    audit_copy_bucket: str = setting(
        "audit.copy_bucket", text, "", "VAULTD_AUDIT_COPY_BUCKET",
        "An S3 bucket with Object Lock on, where each signed checkpoint is also written, locked "
        "(empty: no copy). Reached with storage.s3's endpoint, region and addressing style.")
    audit_copy_prefix: str = setting(
        "audit.copy_prefix", text, "audit-checkpoints/", "VAULTD_AUDIT_COPY_PREFIX",
        "Key prefix of the checkpoint copies (`<prefix><account id>/<size>.checkpoint`).")
    audit_copy_lock_mode: str = setting(
        "audit.copy_lock_mode", choice("COMPLIANCE", "GOVERNANCE"), "COMPLIANCE",
        "VAULTD_AUDIT_COPY_LOCK_MODE",
        "The copies' Object Lock mode: COMPLIANCE (no one, the root account included, can "
        "delete a copy before its date) or GOVERNANCE (a holder of s3:BypassGovernanceRetention "
        "can).")
    audit_copy_retention_days: int = setting(
        "audit.copy_retention_days", integer(1, 36500), 400, "VAULTD_AUDIT_COPY_RETENTION_DAYS",
        "How long each copy is locked, from its checkpoint's time.")
