"""View links: creating, reading (with the records kept for a second), revoking."""
