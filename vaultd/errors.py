"""Domain errors. Services raise these; only the HTTP layer maps them to status codes."""

from __future__ import annotations


class VaultError(Exception):
    """Base class; `message` is safe to show to the client."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(VaultError):
    status = 400


INVALID_KEY = "invalid or revoked API key"  # the same for every bad key: nothing to probe


class Unauthorized(VaultError):
    status = 401


class PlanLimitReached(VaultError):
    status = 402


class Forbidden(VaultError):
    status = 403


class NotFound(VaultError):
    status = 404


class Conflict(VaultError):
    """The request contradicts what is stored (a duplicate, the last admin): 409."""

    status = 409


class PayloadTooLarge(VaultError):
    status = 413


class UnsupportedMediaType(VaultError):
    status = 415


class TooManyRequests(VaultError):
    """The caller's own concurrency is at its cap; `retry_after` seconds is sent as Retry-After."""

    status = 429

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unprocessable(VaultError):
    status = 422


class StorageCorrupt(VaultError):
    """A stored blob or wrapped key failed authentication: an operator problem, not the client's."""

    status = 500


class ServiceUnavailable(VaultError):
    """Back-pressure or a dependency down; `retry_after` seconds is sent as Retry-After."""

    status = 503

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unconfirmed(VaultError):
    """A change was sent to the database, which did not confirm it: it may have been made, so a
    client reads before sending it again rather than retrying (504, no Retry-After)."""

    status = 504


class InsufficientStorage(ServiceUnavailable):
    """The blob store has no room for the file: nothing of it was kept (507, with Retry-After)."""

    status = 507


class BadGateway(VaultError):
    """A service outside the vault (the identity provider) could not be reached or answered
    something vaultd will not trust."""

    status = 502
