"""Keeping stored data whole: backup, restore, storage verify/gc/migrate, re-wrapping,
crash recovery, the database disk's reserve."""
