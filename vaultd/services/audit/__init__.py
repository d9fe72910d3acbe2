"""The tamper-evident audit log: an RFC 6962 Merkle tree per account over its access log and
activity log, signed checkpoints, proofs and verifiable exports (docs/audit.md)."""
