"""Confinement of render workers: see render.sandbox.confine and docs/security.md."""
