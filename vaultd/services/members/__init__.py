"""An account's people: members and their roles, sign-in, sessions, and who did what."""
