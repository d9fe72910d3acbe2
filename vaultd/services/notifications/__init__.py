"""Members' mail notifications: a link's first open, and a daily digest (docs/console.md)."""
