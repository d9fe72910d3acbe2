"""`bench.scale_shapes` keeps its reference vaults signed in to the console while a shape is
seeded: at 10^6 links the seeding took 83 minutes, the empty and full-page vaults' sessions sat
idle past `auth.session_idle_minutes`, and their console rows measured "not signed in".
`scale_shape_routes.kept_signed_in` signs a session in again where it has ended, and keeps one
that has not. One real vaultd, its session aged in its database as hours of idling age it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from bench import scale_shapes
from bench.scale_shape_routes import kept_signed_in, routes, sign_in
from bench.scale_shape_seeds import seed_base
from tests.vault_process import VaultProcess
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # a vaultd of its own


async def _idle_for(vault: VaultProcess, hours: float) -> None:
    db = scale_shapes._database(vault)
    try:
        await db.member_sessions.update_many(
            {}, {"$set": {"lastSeenAt": utcnow() - timedelta(hours=hours)}})
    finally:
        await db.close()


def test_a_reference_session_ended_by_idling_is_signed_in_again(tmp_path: Path) -> None:
    vault = scale_shapes._started(tmp_path, "empty")
    try:
        session = sign_in(vault, scale_shapes._seed(vault, seed_base))
        console = [route for route in routes() if route.console]
        assert kept_signed_in(vault, session) is session  # alive: kept, no new sign-in

        asyncio.run(_idle_for(vault, hours=2))
        sessions_page = next(route for route in console if "sessions" in route.path)
        ended = session.ask(sessions_page)
        assert ended.status == 401 and "not signed in" in ended.error, ended

        renewed = kept_signed_in(vault, session)
        # compared apart from the assertion, so that a failure prints no session id
        same_cookie = renewed.cookie == session.cookie
        assert renewed is not session and not same_cookie
        for route in console:
            answer = renewed.ask(route)
            assert answer.status == 200, (route.name, answer)
        assert renewed.ask(sessions_page).returned == 1  # the ended one is not listed
        renewed.close()
    finally:
        vault.stop()
