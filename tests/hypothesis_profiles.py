"""The fast loop's Hypothesis profile: `--hypothesis-profile=fast-loop` (docs/testing.md, "The
fast loop") draws at most `max_examples` examples a fuzz test, the whole suite the number each
test names. Registered when `tests/conftest.py` imports this module, before Hypothesis's pytest
plugin loads the profile named on the command line; the fuzz tests' settings are made after
that, at collection, so `examples` sees the profile loaded."""

from __future__ import annotations

from hypothesis import settings

FAST_LOOP = "fast-loop"

settings.register_profile(FAST_LOOP, max_examples=50)


def examples(count: int) -> int:
    """`count` examples; under the fast loop's profile at most its `max_examples` (a test's own
    count would otherwise win over the profile's)."""
    if settings.get_current_profile_name() == FAST_LOOP:
        return min(count, settings.get_profile(FAST_LOOP).max_examples)
    return count
