"""`tests.hypothesis_profiles`: under the fast loop's profile a fuzz test draws at most the
profile's examples; under any other, the number it names (the whole suite's)."""

from __future__ import annotations

from hypothesis import settings

from tests.hypothesis_profiles import FAST_LOOP, examples


def test_the_fast_loops_profile_caps_a_tests_examples_and_no_other_does() -> None:
    loaded = settings.get_current_profile_name()
    try:
        settings.load_profile(FAST_LOOP)
        assert (examples(600), examples(50), examples(8)) == (50, 50, 8)
        settings.load_profile("default")
        assert (examples(600), examples(8)) == (600, 8)
    finally:
        settings.load_profile(loaded)
