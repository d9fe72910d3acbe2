"""The built-in session gates, one module each, registered here in the order a reader meets
them: the email first (the passcode and the agreement are then given by the verified reader),
the agreement last (its name is typed by a reader who passed everything else)."""

from vaultd.services.gates.kinds import agreement, passcode, verify_email
from vaultd.services.gates.registry import register

for gate in (verify_email.GATE, passcode.GATE, agreement.GATE):
    register(gate)
