"""The deployment's key for hashing email codes: kept in `services.common.code_key`, which the
members' sign-in codes share."""

from vaultd.services.common.code_key import CODE_KEY_ID, code_key

__all__ = ["CODE_KEY_ID", "code_key"]
