"""`python -m bench.scale_shapes` end to end at a tiny size: every shape seeded into a real
vaultd beside an empty one and a full-page one, every route timed over HTTP on the three and
profiled in the database, and the tables printed (first once timed, then once profiled). The
checks hold the table to real measurements (each side's samples, the ratios of the p95s the
table shows), the full-page vault to full pages, and each shape to what it seeded, read back through
the routes: a shape that seeded nothing, or records a route cannot read, fails here. The
access log is seeded numbered, as vaultd numbers its own: the three log routes must read it by
those numbers (their profiled `find`s filter on them), not fall back to time windows.

Seven vaultd processes (the empty and full-page vaults and one per shape), so `slow`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench import scale_shape_mixed, scale_shape_settle, scale_shapes
from bench.scale_shape_routes import routes
from bench.scale_shape_seeds import MIXED_SEED, SHAPES
from bench.scale_shape_sessions import SESSIONS
from bench.scale_shape_settle import QUIET_WINDOWS
from bench.scale_shapes import LOADED, Row, ShapeRun, measure, table
from tests.seeded_log import numbered

# seven vaultd started, seeded and settled in the fixture (six took 4 minutes at a load
# average of 12, past the suite's 300 s at 22)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SIZE = 200  # ORDINARY_SHARE makes it 10 records of every other kind
ORDINARY = 10
SAMPLES = 3
# The settling's windows (the bench's 5 s): its counts' slack is per second and its probes as
# many a window, so a shorter window asks the same rates of a shape's vaultd.
WINDOW = 2.5
# What the full-page vault's routes return, in the order of `routes()`.
FULL_PAGES = (25, 0, 20, 20, 200, 50, 200, 50, 50, 50, 1)
CELL = re.compile(r"[\d.]+ / ([\d.]+)")
# Each log route and the number it reads by (`services.common.numbered_log`'s scopes).
LOG_NUMBERS = {"GET /v1/files/:id/access-log": "access_log.fileSeq",
               "GET /console/activity": "access_log.accountSeq",
               "GET /v1/rooms/:id/access-log": "access_log.roomSeq"}
# Each shape's table as printed once its routes were timed, before its profile was read.
TIMED_TABLES: list[str] = []


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ShapeRun]:
    work: Path = tmp_path_factory.mktemp("shapes")
    with pytest.MonkeyPatch.context() as patch:
        # One round of every route before the timing (beside `_interleaved`'s own two a side)
        # and one profiled call a route: warming the cache of a shape of 200 records takes
        # one, and every operation of the route is in the profile of one call.
        patch.setattr(scale_shapes, "SETTLING_ROUNDS", 1)
        patch.setattr(scale_shapes, "PROFILED_ROUNDS", 1)
        patch.setattr(scale_shape_settle, "WINDOW_SECONDS", WINDOW)
        measured = measure(list(SHAPES), SIZE, SAMPLES, work,
                           timed=lambda run: TIMED_TABLES.append(table(run)))
    return {run.shape: run for run in measured}


def _row(run: ShapeRun, prefix: str) -> Row:
    [row] = [row for row in run.rows if row.route.name.startswith(prefix)]
    return row


def _p95(cell: str) -> float:
    found = CELL.fullmatch(cell)
    assert found is not None, cell
    return float(found[1])


def test_every_shape_times_and_profiles_every_route_on_both_vaults(
        runs: dict[str, ShapeRun]) -> None:
    assert list(runs) == list(SHAPES)
    for run in runs.values():
        # timed once its restarted vaultd wrote about as little as the full page's
        assert run.quiet and run.settled_seconds >= QUIET_WINDOWS * WINDOW
        assert f"quiet {run.settled_seconds:.0f} s after its restart)" in table(run)
        assert [row.route.name for row in run.rows] == [route.name for route in routes()]
        for row in run.rows:
            assert not row.failed, row.failed
            assert row.empty.samples == row.page.samples == row.shaped.samples == SAMPLES
            for timing in (row.empty, row.page, row.shaped):
                assert 0 < timing.p50 <= timing.p95
            # the database profiled the route's own operations in its window
            assert row.longest_ms >= 0 and row.longest_what, row.route.name


def test_each_table_is_printed_once_timed_before_the_profile_is_read(
        runs: dict[str, ShapeRun]) -> None:
    assert len(TIMED_TABLES) == len(runs)
    for printed, run in zip(TIMED_TABLES, runs.values(), strict=True):
        body = [line for line in printed.splitlines() if line.startswith("| `")]
        assert len(body) == len(run.rows)
        assert all("| not profiled |" in line for line in body), printed
        assert "not profiled" not in table(run)


def test_the_table_shows_the_ratios_of_the_measured_p95s(runs: dict[str, ShapeRun]) -> None:
    for run in runs.values():
        lines = table(run).splitlines()
        assert lines[0].startswith(f"Shape `{run.shape}`, N = {SIZE}")
        body = [line for line in lines if line.startswith("| `")]
        assert len(body) == len(run.rows)
        for line, row in zip(body, run.rows, strict=True):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            empty_p95, page_p95, shaped_p95 = (_p95(cell) for cell in cells[1:4])
            assert cells[4] == f"{row.ratio:.2f}x" and cells[5] == f"{row.empty_ratio:.2f}x"
            assert abs(row.ratio - shaped_p95 / page_p95) <= 0.02 * row.ratio + 0.01
            assert abs(row.empty_ratio - shaped_p95 / empty_p95) <= (
                0.02 * row.empty_ratio + 0.01)
            assert cells[6] == (f"{row.returned_empty} / {row.returned_page} / "
                                f"{row.returned_shaped}")
            if row.route.depth:
                assert cells[8].startswith("deep page: reads the 975 before it")
            else:
                assert cells[8] == ("yes" if row.ratio <= 2 else "**no**")


def test_the_empty_vault_returns_almost_nothing_and_every_shape_its_ordinary_records(
        runs: dict[str, ShapeRun]) -> None:
    for run in runs.values():
        # The full-page vault fills every route's page (but the deep one's: 801 files).
        assert {row.route.name: row.returned_page for row in run.rows} == dict(
            zip([route.name for route in routes()], FULL_PAGES, strict=True))
        sessions = _row(run, "GET /console/auth/sessions")
        assert (sessions.returned_empty, sessions.returned_shaped) == (1, 50)
        assert run.seeded.records["member_sessions"] == SESSIONS
        # The empty vault's admin signed in by the link (its event); a shape's has the session
        # a sign-in would have written, and the seeded events.
        activity = _row(run, "GET /v1/activity")
        assert (activity.returned_empty, activity.returned_shaped) == (1, ORDINARY)
        assert _row(run, "GET /v1/account").returned_shaped == 1


def test_the_import_is_listed(runs: dict[str, ShapeRun]) -> None:
    run = runs["import"]
    assert run.seeded.records["files"] == SIZE + ORDINARY
    assert run.seeded.live_files == 1 + ORDINARY + SIZE
    first = _row(run, "GET /v1/files (page 1")
    assert (first.returned_empty, first.returned_shaped) == (1, 25)
    account_log = _row(run, "GET /console/activity")  # the imports' upload entries
    assert account_log.returned_shaped == 50


def test_the_hot_files_log_is_read(runs: dict[str, ShapeRun]) -> None:
    run = runs["hot-file"]
    assert run.seeded.records["access_log"] == SIZE + 2 * ORDINARY
    log = _row(run, "GET /v1/files/:id/access-log")
    assert (log.returned_empty, log.returned_shaped) == (1, 200)
    room = _row(run, "GET /v1/rooms/:id/access-log")  # a quarter came through the room
    assert room.returned_empty == 0
    assert room.returned_shaped == SIZE // 4 + (ORDINARY + 3) // 4


def test_the_deleted_files_are_gone_and_their_deletions_logged(
        runs: dict[str, ShapeRun]) -> None:
    run = runs["deleted"]
    assert run.seeded.live_files == 1 + ORDINARY + SIZE // 2
    assert run.seeded.records["files"] == ORDINARY + SIZE // 2
    first = _row(run, "GET /v1/files (page 1")
    assert first.returned_shaped == 25
    deliveries = _row(run, "GET /v1/webhooks/:id/deliveries")  # `file.deleted`, newest 50
    assert (deliveries.returned_empty, deliveries.returned_shaped) == (0, 50)
    assert run.seeded.records["webhook_deliveries"] == ORDINARY + SIZE // 2


def test_the_link_bursts_are_listed_by_state(runs: dict[str, ShapeRun]) -> None:
    run = runs["link-bursts"]
    assert run.seeded.records["links"] == SIZE + ORDINARY
    links = _row(run, "GET /v1/files/:id/views (page 1")
    assert (links.returned_empty, links.returned_shaped) == (0, 20)
    active = _row(run, "GET /v1/files/:id/views?state=active")
    assert active.returned_empty == 0 and active.returned_shaped > 0


def test_the_mixed_shape_is_written_as_drawn_and_read_back(runs: dict[str, ShapeRun]) -> None:
    """The draw is the seed's alone: drawn again here, it says what the shape holds."""
    run = runs["mixed"]
    assert run.seeded.plan is not None and run.seeded.plan.seed == MIXED_SEED
    assert table(run).splitlines()[1] == f"The shape's draw: {run.seeded.plan}."
    _, drawn = scale_shape_mixed.draw(
        MIXED_SEED, SIZE, {"_id": "busy", "linkSeq": ORDINARY}, 1 + ORDINARY,
        lambda at, seq: {"_id": f"file-{seq}", "createdAt": at, "seq": seq},
        lambda file_id, at, seq, life: {"fileId": file_id, "seq": seq})
    assert run.seeded.live_files == 1 + ORDINARY + len(drawn.files)
    assert run.seeded.records["files"] == ORDINARY + len(drawn.files)
    assert run.seeded.records["links"] == ORDINARY + sum(map(len, drawn.links.values()))
    assert run.seeded.records["access_log"] == (2 * ORDINARY + len(drawn.files)
                                                + 2 * len(drawn.deleted) + len(drawn.views))
    first = _row(run, "GET /v1/files (page 1")
    assert first.returned_shaped == min(25, run.seeded.live_files)
    links = _row(run, "GET /v1/files/:id/views (page 1")
    assert links.returned_shaped == 20  # the busy file's: ordinary ones at least


def test_every_shapes_log_is_read_by_its_numbers(runs: dict[str, ShapeRun]) -> None:
    """A log of more entries than its page is read by its numbers; one that fits in its page
    (the `import` shape's busy file and room) in one range of time from the horizon back
    (`numbered_log._small_scope`), never by its numbers."""
    for run in runs.values():
        for prefix, number in LOG_NUMBERS.items():
            row = _row(run, prefix)
            assert row.returned_shaped > 0, (run.shape, prefix)
            if row.returned_shaped < row.returned_page:
                assert number not in row.filtered, (run.shape, prefix, sorted(row.filtered))
                assert "access_log.at" in row.filtered, (run.shape, prefix)
            else:
                assert number in row.filtered, (run.shape, prefix, sorted(row.filtered))
    assert any(_row(run, prefix).returned_shaped < _row(run, prefix).returned_page
               for run in runs.values() for prefix in LOG_NUMBERS), "no log fit in its page"


def test_every_shapes_log_is_loaded_in_bulk_and_ends_with_vaultds_indexes(
        runs: dict[str, ShapeRun]) -> None:
    """The log is written with its indexes dropped and built after the insert: each shape
    ends with the indexes of the empty vault, whose records were inserted with vaultd's
    indexes in place (names, keys and options), and the table says what was loaded so."""
    for run in runs.values():
        logged = run.seeded.records["access_log"] + 1  # and the busy file's upload
        assert run.seeded.loader.loaded == {"access_log": logged}, run.shape
        assert set(run.indexes) == set(run.empty_indexes) == set(LOADED)
        for name in LOADED:
            assert run.indexes[name] == run.empty_indexes[name], (run.shape, name)
        assert len(run.indexes["access_log"]) > 10  # vaultd's, not the `_id` index alone
        assert f"indexes built after the insert: access_log {logged:,};" in table(run)


def test_the_log_is_numbered_in_its_order_in_every_scope() -> None:
    """Numbers follow time to the millisecond, then `_id`, dense from 1 in each scope; each
    counter holds its scope's last number and first entry's time, as the sequencer's round
    leaves them."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    entries = [{"_id": "b", "accountId": "acct", "fileId": "f1", "at": start
                + timedelta(microseconds=2500)},
               {"_id": "a", "accountId": "acct", "fileId": "f2", "roomId": "r",
                "at": start + timedelta(microseconds=2900)},  # the same millisecond: by `_id`
               {"_id": "c", "accountId": "acct", "fileId": "f1", "roomId": "r", "at": start}]
    counters = numbered(entries)
    assert [entry["_id"] for entry in entries] == ["c", "a", "b"]
    assert entries[1]["at"] == start + timedelta(milliseconds=2)
    assert [(entry.get("fileSeq"), entry["accountSeq"], entry.get("roomSeq"))
            for entry in entries] == [(1, 1, 1), (1, 2, 2), (2, 3, None)]
    assert counters == {"access_log:file:f1": (2, start),
                        "access_log:file:f2": (1, entries[1]["at"]),
                        "access_log:account:acct": (3, start), "access_log:room:r": (2, start)}
