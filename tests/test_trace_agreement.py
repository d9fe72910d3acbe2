"""`vault-admin trace` reads what `POST /v1/trace` reads (`bench.trace_agreement`): on leaks of
each kind the leak benches make (a transformation, a photo framed on the page, a phone photo, a
rescaled copy, a washed page) and on pages this vault never served, the API's answer, the
command's for that account and the command's over every account are the same; each kind names
the view it was made from (at least once: a photo's reading may miss) and never another."""

from __future__ import annotations

import pytest

from bench.trace_agreement import run

pytestmark = pytest.mark.slow  # a vaultd, and three traces of every leak

KINDS = ["attack: none", "attack: screenshot + tone", "family: crop", "phone photo",
         "rescaled 60% + jpeg q60", "wash: observed chips, no key"]


def test_the_command_and_the_api_answer_every_kind_of_leak_alike() -> None:
    tallies = run(pages=1, seed=5, only=KINDS)
    marked = {name: tally for name, tally in tallies.items() if not name.startswith("unmarked")}
    unmarked = {name: tally for name, tally in tallies.items() if name.startswith("unmarked")}
    assert sorted(marked) == sorted(KINDS)
    assert {name: tally.differences for name, tally in tallies.items()} == \
        {name: [] for name in tallies}
    assert all(tally.agree == tally.leaks > 0 for tally in tallies.values())
    # Not agreement on nothing: both served pages, as served, name their views; every kind
    # names the view it was made from at least once (a photo's reading may miss, as in the
    # benches) and never another; a page never served is named by no one.
    assert (marked["attack: none"].right, marked["attack: none"].leaks) == (2, 2)
    assert {name: tally.right > 0 and tally.wrong == 0 for name, tally in marked.items()} == \
        {name: True for name in KINDS}
    assert unmarked and all(tally.named == {"api": 0, "account": 0, "any": 0}
                            for tally in unmarked.values())
