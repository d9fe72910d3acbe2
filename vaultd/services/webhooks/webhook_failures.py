"""What a failed webhook attempt tells the tenant, and what only the operator's log gets.

The tenant chooses the URL and reads each attempt's `error` (`GET /v1/webhooks/:id/deliveries`):
a detailed error would let them map the operator's network (what an internal name resolves to,
which ports answer, how). So the delivery record holds one of a few categories, and the detail
goes to vaultd's log with the attempt's id (`webhook_delivery.Deliverer`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The host does not resolve, or resolves to an address webhooks may not reach: one category for
# both, so that the answer does not say whether an internal name exists.
REFUSED_ADDRESS = "refused address"
# No HTTP status came back: connection refused, reset or closed, not an HTTP answer, or nothing
# within the attempt's 5 s.
NO_ANSWER = "no answer"
TLS_FAILURE = "TLS failure"  # the handshake or the certificate check failed
SECRET_UNAVAILABLE = "signing secret unavailable (master key)"  # nothing was sent
CATEGORIES = frozenset({REFUSED_ADDRESS, NO_ANSWER, TLS_FAILURE, SECRET_UNAVAILABLE})
_ANSWERED = re.compile(r"answered [1-9][0-9]{2}( \(redirects are not followed\))?")


@dataclass(frozen=True)
class Failure:
    category: str  # for the tenant: one of CATEGORIES, or answered(status)
    detail: str  # for the operator's log only


def answered(status: int) -> str:
    """The category of an answer that is not 2xx."""
    return f"answered {status}" + (" (redirects are not followed)" if 300 <= status < 400 else "")


def tenant_error(stored: str | None) -> str | None:
    """The category of a stored error. Records written before categories existed held the
    detail (`refused: db.internal resolves to a private address 10.0.0.5 ...`); they are shown
    by their category too, until retention prunes them."""
    if stored is None or stored in CATEGORIES or _ANSWERED.fullmatch(stored):
        return stored
    if stored.startswith(("refused:", "host ")):
        return REFUSED_ADDRESS
    if stored.startswith("SSL"):
        return TLS_FAILURE
    return NO_ANSWER
