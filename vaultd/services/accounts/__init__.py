"""Accounts, API keys, plan quotas and the usage counters kept on the account (live links)."""
