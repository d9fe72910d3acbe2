"""The `mixed` shape's draw (`bench.scale_shape_mixed`): the same seed draws the same shape,
other seeds other shapes, and what it draws is a history the services could have written: no
record of a file before its upload or after its deletion, the busy file never deleted, every
file's links numbered in order after the busy file's own. Written end to end, through the
routes, by `tests/test_bench_scale_shapes.py`."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from bench import scale_shape_mixed as mixed
from vaultd.timefmt import utcnow

BUSY_LINKS = 7  # the busy file's links before the shape (its `linkSeq`)
TOP = 40  # the account's files before the shape


def drawn(seed: int, size: int = 3000) -> tuple[mixed.Plan, mixed.Drawn]:
    return mixed.draw(seed, size, {"_id": "busy", "linkSeq": BUSY_LINKS}, TOP,
                      lambda at, seq: {"_id": f"file-{seq}", "createdAt": at, "seq": seq},
                      lambda file_id, at, seq, life: {"fileId": file_id, "seq": seq,
                                                      "createdAt": at, "expiresAt": at + life})


def test_a_seed_draws_one_shape_and_other_seeds_others() -> None:
    first_plan, first = drawn(5)
    again_plan, again = drawn(5)
    assert first_plan == again_plan
    assert [doc["seq"] for doc in first.files] == [doc["seq"] for doc in again.files]
    assert ({file_id: len(links) for file_id, links in first.links.items()}
            == {file_id: len(links) for file_id, links in again.links.items()})
    assert len({str(drawn(seed)[0]).partition(":")[2] for seed in range(8)}) == 8
    assert str(first_plan).startswith("drawn from seed 5: ")


@pytest.mark.parametrize("seed", range(12))
def test_what_is_drawn_is_a_history_the_services_could_write(seed: int) -> None:
    plan, shape = drawn(seed)
    uploads: dict[str, datetime] = {"busy": datetime.min.replace(tzinfo=utcnow().tzinfo)}
    for doc in [*shape.files, *(gone for gone, _ in shape.deleted)]:
        uploads[doc["_id"]] = doc["createdAt"]
    deletions = {doc["_id"]: at for doc, at in shape.deleted}
    assert "busy" not in deletions
    numbers = sorted(int(doc["seq"]) for doc in [*shape.files, *(d for d, _ in shape.deleted)])
    assert numbers == list(range(TOP + 1, shape.top + 1))  # each upload numbered once
    records = (len(numbers) + len(shape.deleted) + len(shape.views)
               + sum(len(links) for links in shape.links.values()) + shape.links_deleted)
    assert records == 3000  # each drawn once
    end = utcnow() - timedelta(hours=2)

    def alive(file_id: str, at: datetime) -> bool:
        return uploads[file_id] <= at and (file_id not in deletions or at < deletions[file_id])

    for file_id, at, through_room in shape.views:
        assert end - mixed.YEAR - timedelta(seconds=5) <= at <= end + timedelta(seconds=5)
        assert alive(file_id, at)
        assert not through_room or file_id == "busy"  # the room holds the busy file alone
    assert set(shape.links) == {"busy", *(doc["_id"] for doc in shape.files)}
    for file_id, links in shape.links.items():
        first = BUSY_LINKS if file_id == "busy" else 0
        assert [link["seq"] for link in links] == list(range(first + 1, first + 1 + len(links)))
        assert all(alive(file_id, link["createdAt"]) for link in links)
        assert all(link["expiresAt"] > link["createdAt"] for link in links)
    assert 4 <= plan.spells <= 40 and 0.8 <= plan.zipf <= 1.6
    assert abs(sum(plan.shares.values()) - 1) < 1e-9


def test_the_spells_leave_quiet_time_between_them() -> None:
    """Bursts and quiet spells: the busiest hour of the year holds far more than its even
    share, and most hours hold nothing."""
    for seed in range(6):
        times = mixed.times(random.Random(seed), 8, 20_000, utcnow())
        by_hour = Counter(int(at.timestamp()) // 3600 for at in times)
        assert max(by_hour.values()) > 50 * 20_000 / (365 * 24)
        assert len(by_hour) < 0.5 * 365 * 24
        assert times == sorted(times)


def test_popularity_falls_with_the_rank() -> None:
    rng = random.Random(3)
    ranks = Counter(mixed._zipf_rank(rng, 1000, 1.2) for _ in range(50_000))
    assert min(ranks) == 0 and max(ranks) < 1000
    assert ranks[0] > ranks[1] > ranks[9] > ranks[99]
    assert ranks[0] / ranks[9] == pytest.approx(10 ** 1.2, rel=0.5)
    assert Counter(mixed._zipf_rank(rng, 1, 1.0) for _ in range(100)) == {0: 100}


def test_a_file_s_records_end_with_its_deletion() -> None:
    """The draw that deletes most: the busy file is kept, and what follows a deletion never
    names the deleted file (checked on the seed whose deletions outnumber its uploads)."""
    _, shape = max((drawn(seed) for seed in range(12)),
                      key=lambda pair: len(pair[1].deleted) - len(pair[1].files))
    assert len(shape.deleted) > len(shape.files)
    gone: dict[str, Any] = {doc["_id"]: at for doc, at in shape.deleted}
    assert not any(file_id in gone and at >= gone[file_id] for file_id, at, _ in shape.views)
    assert not set(gone) & set(shape.links)
