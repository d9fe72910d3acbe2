"""`Gates`: whether a link may be used now, by this reader, in named stages.

    known      every gate the policy stores is registered here (403 otherwise: never served
               without a gate whose module is no longer loaded, `registry.session_gates`)
    timing     not before `notBefore` (403 naming the time)
    address    the viewer's IP inside one of `allowedIps` (403)
    session    every session gate (`registry`: verifyEmail, passcode, agreement) passed in a
               current session of this link (403 naming what is pending); a link with `maxOpens`
               needs such a session even without session gates: the session is the unit its
               opens are counted in (`sessions.open_session`, `sessions.mark_passed`)

`admit_open` runs the first three on every request about a gated link that is not a page
(details, hosted page, a room's document page, a new session, a session's actions); both take
the policy of a file link or of a room link (`gated.GatedLink`) alike.
`admit_page` runs all four in the page path's authorise stage, on the link record it already
read: a link without a policy costs nothing more, and a gated link's session is read in the
same round trip as the link (`PagePath.authorise`).

Extending it: a gate a reader passes by doing something is a session gate, one module
registered in `registry` (docs/architecture.md, "Adding a gate"): nothing here changes. A
condition checked on every request without anything to pass is a policy field (`policy`) and a
stage method here called from `admit_open` or `admit_page`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from vaultd.errors import Forbidden
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.gates import sessions
from vaultd.services.gates.registry import session_gates
from vaultd.timefmt import iso_utc, utcnow

IP_REQUIRED = "this link is limited to listed addresses: the viewer's IP is needed (x-viewer-ip)"
IP_REFUSED = "this link cannot be used from the viewer's IP address"
OPEN_NEEDED = ("this link counts its opens: pages need a viewer session that opened it "
               "(open the link first)")


def pending_message(pending: list[str]) -> str:
    return f"gates still pending: {', '.join(pending)} (pass them in a viewer session)"


@dataclass(frozen=True)
class Gates:
    """Stateless: every verdict is from the link and session records given."""

    def admit_open(self, policy: PolicyDoc | None, ip: str | None) -> None:
        if policy is None:
            return
        self.known(policy)
        self.timing(policy)
        self.address(policy, ip)

    def admit_page(self, policy: PolicyDoc | None, link_id: str, ip: str | None,
                   session: ViewerSessionDoc | None) -> None:
        """`link_id`: the link the session must belong to (a room link's for its pages)."""
        if policy is None:
            return
        self.admit_open(policy, ip)
        self.session(policy, link_id, session)

    def known(self, policy: PolicyDoc) -> None:
        session_gates(policy)

    def timing(self, policy: PolicyDoc) -> None:
        not_before = policy.get("notBefore")
        if not_before is not None and utcnow() < not_before:
            raise Forbidden(f"this link cannot be used before {iso_utc(not_before)}")

    def address(self, policy: PolicyDoc, ip: str | None) -> None:
        networks = policy.get("allowedIps")
        if networks is None:
            return
        if ip is None:
            raise Forbidden(IP_REQUIRED)
        address = ipaddress.ip_address(ip)
        if not any(address in ipaddress.ip_network(net) for net in networks):
            raise Forbidden(IP_REFUSED)

    def session(self, policy: PolicyDoc, link_id: str,
                session: ViewerSessionDoc | None) -> None:
        """A link with session gates or `maxOpens` serves a session that was admitted: its
        last gate passed, or (no gate to pass) opened, either way counted as one open."""
        gates = session_gates(policy)
        if not gates and "maxOpens" not in policy:
            return
        current = session if sessions.is_current(session, link_id) else None
        left = sessions.pending(gates, current)
        if left:
            raise Forbidden(pending_message(left))
        if current is None:
            raise Forbidden(OPEN_NEEDED)
