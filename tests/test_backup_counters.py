"""A backup reads `number_counters` kind by kind in bounded windows (`db.WALK_SPACES`,
`services.common.id_ranges.KeySpace`): its ids name their kind before a uuid or an address
(`access_log:file:<uuid>`, `sessions:<address>`), so one walk of hex digits would find them all in
a handful of windows, and a walk by `_id > last` makes the embedded database read every counter
after `last` for each batch. Counters of every kind vaultd writes, made by its own scope names,
are backed up with no query reading more than a few windows' worth, and restored exactly.
A real embedded SecantusDB; what a query reads is measured on the server's side (`explain`)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from backends.local import LocalBackend
from tests import recorded_database
from tests.db_reads import examined
from vaultd.crypto.keyring import MasterKeyring
from vaultd.db import WALK_SPACES, Db, connect
from vaultd.db_indexes import ensure_indexes
from vaultd.services.common import id_ranges, numbered_log
from vaultd.services.members import activity_numbers, session_numbers
from vaultd.services.storage import backup, restore
from vaultd.services.webhooks import delivery_numbers
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

PER_KIND = 700  # each kind more than three windows' worth (id_ranges.BATCH = 200)
WINDOW = 3 * id_ranges.BATCH  # a window aims at BATCH records; the density varies around it
NAMES = ("ann", "bob", "chen", "dara", "eve", "femi", "gus", "hana", "ivan", "jo", "kai", "li",
         "mo", "nora", "omar", "pia", "quinn", "rui", "sam", "tia", "uma", "vik", "wen", "xia",
         "yusuf", "zoe")
DOMAINS = ("example.com", "client.example", "firm.co.uk", "mail.example.org")


def _addresses(draw: random.Random) -> list[str]:
    return [f"{draw.choice(NAMES)}{draw.choice(['', '.', '_', '-'])}{draw.choice(NAMES)}"
            f"{draw.randrange(1000)}@{draw.choice(DOMAINS)}" for _ in range(PER_KIND)]


def counter_ids() -> list[str]:
    """Counters of every kind, named as their writers name them."""
    draw = random.Random(46)
    ids = [numbered_log.HORIZON]
    for scope in numbered_log.ALL_SCOPES:
        ids += [scope.counter(str(uuid.uuid4()), draw.choice(["page", "download", "revoke"]))
                for _ in range(PER_KIND)]
    for _ in range(PER_KIND):
        account = str(uuid.uuid4())
        ids += [activity_numbers.scope(account),
                activity_numbers.action_scope(account, draw.choice(["file.upload", "link.made"]))]
        ids.append(delivery_numbers.scope("ep_" + uuid.uuid4().hex))
    ids += [session_numbers.scope(address) for address in _addresses(draw)]
    return sorted(set(ids))


def _in_a_space(counter: str) -> bool:
    return any(id_ranges.KeySpace(prefix, alphabet).bound(0) <= counter
               < id_ranges.KeySpace(prefix, alphabet).end
               for prefix, alphabet in WALK_SPACES["number_counters"])


def test_every_kind_of_counter_lies_in_a_declared_key_space() -> None:
    outside = [counter for counter in counter_ids() if not _in_a_space(counter)]
    assert outside == [numbered_log.HORIZON]  # one record: read in one range between two


async def test_a_backup_reads_the_counters_in_windows_and_restore_gives_them_back(
        db: Db, recorder: recorded_database.QueryRecorder, server: Any, tmp_path: Path) -> None:
    now = utcnow()
    ids = counter_ids()
    counters = [{"_id": counter, "seq": n, "since": now} for n, counter in enumerate(ids)]
    await db.raw("number_counters").insert_many(counters)
    ring = MasterKeyring.generate()
    blobs = LocalBackend(tmp_path / "blobs")
    await blobs.start()
    with recorder.recorded() as queries:
        made = await backup.create_backup(db, blobs, lambda: ring, tmp_path / "backup", "test")
    reads = [query for query in queries if query.collection == "number_counters"]
    assert made["collections"]["number_counters"] == len(ids)
    assert len(reads) >= len(ids) // WINDOW
    most = max([await examined(db, query) for query in reads])
    assert most <= WINDOW, f"one query of the backup read {most} counters"

    restored = connect(server.uri, "restored")
    try:
        await ensure_indexes(restored)
        await restored.raw("number_counters").delete_many({})  # what opening it numbered
        await restore.import_database(restored, tmp_path / "backup", made)
        back = await restored.raw("number_counters").find({}).sort("_id", 1).to_list()
        assert back == await db.raw("number_counters").find({}).sort("_id", 1).to_list()
        assert [counter["_id"] for counter in back] == ids
    finally:
        await restored.close()
