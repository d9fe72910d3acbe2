"""Per-account caps on requests in progress, in this process: uploads and leak traces.

An upload holds a temporary blob until it is finished, and a trace holds its image (up to 25
MiB) in memory until a worker has decoded it; without a cap, one account (even one already at
its plan limit) can hold many at once. The count is per vaultd process: with several processes
behind a balancer the cap applies to each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vaultd.errors import TooManyRequests

RETRY_AFTER_SECONDS = 5


@dataclass
class Slot:
    """One request's place in its account's count. Given back once, however often a handler's
    exits (finished, client gone, decode done) call `release`."""

    slots: AccountSlots
    account_id: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.slots.give_back(self.account_id)


@dataclass
class AccountSlots:
    per_account: int
    what: str  # the requests counted, plural: "uploads", "traces"
    _held: dict[str, int] = field(default_factory=dict)

    def take(self, account_id: str) -> Slot:
        """A slot, or TooManyRequests (429 with Retry-After)."""
        held = self._held.get(account_id, 0)
        if held >= self.per_account:
            raise TooManyRequests(
                f"too many {self.what} in progress for this account (at most "
                f"{self.per_account}); retry when one has finished",
                retry_after=RETRY_AFTER_SECONDS,
            )
        self._held[account_id] = held + 1
        return Slot(self, account_id)

    def give_back(self, account_id: str) -> None:
        left = self._held.get(account_id, 0) - 1
        if left > 0:
            self._held[account_id] = left
        else:
            self._held.pop(account_id, None)

    def held(self, account_id: str) -> int:
        return self._held.get(account_id, 0)
