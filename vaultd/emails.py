"""Email addresses of viewers, checked with email-validator (syntax only, no DNS).

Special-use domains (.test, .local, .internal-style names) are accepted: companies share with
people on internal domains, and the address is only drawn and logged, never mailed by vaultd.
"""

from __future__ import annotations

import email_validator
from email_validator import EmailNotValidError, validate_email

email_validator.SPECIAL_USE_DOMAIN_NAMES = []


def normalize_email(value: str) -> str | None:
    """The normalised address, or None when `value` is not a valid email address."""
    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError:
        return None
