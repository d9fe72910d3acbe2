"""The API base handler: authentication on by default, JSON everywhere, errors as {"error"}."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from http.client import responses
from typing import Any

from pymongo.errors import (
    ConnectionFailure,
    ExecutionTimeout,
    OperationFailure,
    PyMongoError,
    WTimeoutError,
)
from tornado.web import HTTPError, RequestHandler

from backends.base import BackendUnavailable, StorageFull
from vaultd.crypto.blob_format import BlobCorrupt
from vaultd.crypto.keyring import KeyUnavailable
from vaultd.db_deadline import request_deadline, wrote_in_request
from vaultd.errors import (
    InsufficientStorage,
    InvalidRequest,
    ServiceUnavailable,
    StorageCorrupt,
    TooManyRequests,
    Unauthorized,
    Unconfirmed,
    VaultError,
)
from vaultd.services.accounts.accounts import Account
from vaultd.services.accounts.api_keys import authenticate
from vaultd.services.common.acting import ACTING
from vaultd.services.common.pool_calls import Departure
from vaultd.services.members.actor import Actor
from vaultd.services.members.callers import key_caller, set_caller
from vaultd.services.members.roles import Permission
from vaultd.web.access_log_scrub import scrub_path
from vaultd.web.client_ip import viewer_ip
from vaultd.web.context import AppContext

log = logging.getLogger("vaultd.web")


_REASONS = {400: "bad request", 401: "unauthorized", 404: "not found", 405: "method not allowed",
            413: "payload too large", 429: "too many requests", 500: "internal server error"}


class BaseHandler(RequestHandler):
    """Every response is JSON; domain errors carry the text meant for the client."""

    public = False  # routes that need no API key say so explicitly (audited in make_app)
    # The handler checks the key itself, with what else it reads (the page path reads the key
    # and the link in one round trip). prepare() still refuses a missing key at once.
    deferred_auth = False
    # A path served by two handlers (the streamed upload and the listing): the methods this
    # one takes (empty: all), and the other's, which a 405 lists as allowed too.
    only_methods: tuple[str, ...] = ()
    shared_route_methods: tuple[str, ...] = ()
    # Whether the request's database work has the deadline `server.db_deadline_seconds` in all
    # (pymongo.timeout: each call gets what remains as its maxTimeMS), so that a call stuck
    # behind another tenant's long operation fails alone with a 503. Not for the routes that
    # wait on something else between their calls (a streamed body, a render, a streamed blob,
    # a revoke-all's batches).
    db_deadline: bool = True
    # Held for the account's fair share while another account's pages are read (at most
    # 0.5 s, taken from the deadline above: services.common.fair_share); not the routes whose
    # time is the client's (a streamed body up or down).
    paced = True

    def initialize(self, ctx: AppContext, route: str = "unmatched",
                   permissions: Mapping[str, Permission] | None = None) -> None:
        self.ctx = ctx
        # The route's template, for logs and the metrics label: never the path (tokens live there).
        self.route = route
        # What each method of this route needs (web.permissions, checked complete by make_app).
        self.permissions: Mapping[str, Permission] = permissions or {}
        self._mapped_error: VaultError | None = None  # set by log_exception for write_error
        self.account: Account | None = None
        self.actor: Actor | None = None  # who the request acts for, once authenticated
        self._counted = True
        # Told if the client closes its connection before the answer: a page still waiting
        # in the render queue is then dropped (services.common.pool_calls).
        self.departure = Departure()
        self._paced_account: str | None = None  # told to the fair share when the call ends
        self._paused = 0.0  # what the fair share held the call: not the call's own time
        ctx.active_requests += 1

    def on_finish(self) -> None:
        self._uncount()
        if self._paced_account is not None:
            self.ctx.fair_share.done(self._paced_account,
                                     self.request.request_time() - self._paused)
        if self.account is not None:  # the account's own address: its pages read from there
            # are its own reading, not another account's reader (services.common.fair_share)
            self.ctx.fair_share.caller_seen(
                self.account.id, viewer_ip(self.request, self.ctx.settings.proxy_trusted))
        # Any method name a client sends would be a new series: only the known ones are kept.
        method = self.request.method if self.request.method in self.SUPPORTED_METHODS else "other"
        self.ctx.metrics.request_done(self.route, method or "other", self.get_status(),
                                      self.request.request_time())

    def on_connection_close(self) -> None:
        # Tornado's own fails a streamed body's pending read, so the request's coroutine ends
        # now (quietly: Tornado returns on that error); without it an upload whose client left,
        # or whose body went idle, stayed suspended until shutdown, then logged a 500.
        super().on_connection_close()
        self._uncount()
        self.departure.leave()

    def _uncount(self) -> None:
        if self._counted:
            self._counted = False
            self.ctx.active_requests -= 1

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")

    async def _execute(self, transforms: Any, *args: bytes, **kwargs: bytes) -> None:
        seconds = self.ctx.settings.server_db_deadline_seconds if self.db_deadline else None
        with request_deadline(seconds):
            await super()._execute(transforms, *args, **kwargs)

    def compute_etag(self) -> None:
        # Pages carry their display time and must never be revalidated or re-served.
        return None

    async def prepare(self) -> None:
        if self.public:
            ACTING.set(None)  # a viewer's request: what it records is the viewer's
            set_caller(None)
            return
        if self.deferred_auth:
            self.bearer_key()  # the key is checked by the handler; the route needs only READ
        else:
            self.account, self.actor = await self.authenticate_caller()
            self.authorize(self.actor)
            ACTING.set(self.actor.as_record())
            set_caller(self.actor)  # the services hold it to its role again (members.caller)
            if self.paced:
                self._paced_account = self.account.id
                self._paused = await self.ctx.fair_share.turn(self.account.id)

    def bearer_key(self) -> str:
        header = self.request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthorized("missing API key: send Authorization: Bearer <API_KEY>")
        return key.strip()

    async def authenticate(self) -> Account:
        return await authenticate(self.ctx.db, self.bearer_key())

    async def authenticate_caller(self) -> tuple[Account, Actor]:
        """The caller's account and who acts: today the API key (its role and name)."""
        return await key_caller(self.ctx.db, self.bearer_key())

    def authorize(self, actor: Actor) -> None:
        """Refuse (403, naming the role) a method the actor's role may not use. A method the
        route does not serve needs nothing here: Tornado answers it 405."""
        permission = self.permissions.get(self.request.method or "")
        if permission is not None:
            actor.require(permission)

    def send_json(self, status: int, body: Any) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(body, ensure_ascii=False))

    def json_body(self) -> dict[str, Any]:
        media = self.request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise InvalidRequest("Content-Type must be application/json")
        try:
            body = json.loads(self.request.body or b"")
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise InvalidRequest("request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise InvalidRequest("request body must be a JSON object")
        return body

    def send_page(self, jpeg: bytes) -> None:
        """Each display is a fresh render: nothing may cache or re-serve it."""
        self.set_header("Content-Type", "image/jpeg")
        self.set_header("Cache-Control", "private, no-store")
        self.set_header("Referrer-Policy", "no-referrer")
        self.finish(jpeg)

    def send_empty(self, status: int = 204) -> None:
        self.set_status(status)
        self.finish()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        # Tornado calls this first for every exception a method raised, then write_error.
        # Domain errors and dependency outages are expected: they are mapped here (write_error
        # answers with the mapping) and logged without a traceback.
        self._mapped_error = (as_vault_error(value, after_write=wrote_in_request())
                              if isinstance(value, BaseException) else None)
        if self._mapped_error is not None:
            route = self.route or type(self).__name__
            if isinstance(self._mapped_error, Unconfirmed):
                log.warning("database did not confirm a change: %s %s", self.request.method,
                            route)
            elif isinstance(value, PyMongoError) and value.timeout:
                log.warning("database deadline passed: %s %s", self.request.method, route)
            return
        # Tornado's version prints the request's URI and repr: tokens live in our paths.
        path = scrub_path(self.request.uri or "")
        if isinstance(value, HTTPError):
            log.warning("%d %s %s", value.status_code, self.request.method, path)
            return
        log.error("uncaught exception in %s %s", self.request.method, path,
                  exc_info=(typ, value, tb))

    def allowed_methods(self) -> list[str]:
        base = RequestHandler
        own = [m for m in self.SUPPORTED_METHODS
               if getattr(type(self), m.lower()) is not getattr(base, m.lower())]
        return sorted({*own, *self.shared_route_methods}, key=self.SUPPORTED_METHODS.index)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error, self._mapped_error = self._mapped_error, None
        if error is not None:  # Tornado answers 500 for any exception but HTTPError
            status_code = error.status
            self.set_status(status_code)
        if status_code == 405:
            self.set_header("Allow", ", ".join(self.allowed_methods()))
        if isinstance(error, (ServiceUnavailable, TooManyRequests)):  # send_error cleared them
            self.set_header("Retry-After", str(error.retry_after))
        reason = responses.get(status_code, "error").lower()
        message = error.message if error else _REASONS.get(status_code, reason)
        self.clear_header("Content-Disposition")
        if status_code == 401:  # RFC 6750: the scheme the caller should have used
            self.set_header("WWW-Authenticate", "Bearer")
        body: dict[str, Any] = {"error": message}  # alone, on every route (README)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(body, ensure_ascii=False))


# A server shutting down, restarting or stepping down answers a command with one of these
# (ShutdownInProgress, InterruptedAtShutdown, InterruptedDueToReplStateChange, NotWritablePrimary,
# NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, PrimarySteppedDown): the same outage as a
# refused connection, seen from inside a request.
_DB_STOPPING_CODES = frozenset({91, 11600, 11602, 10107, 13435, 13436, 189})


def _database_unavailable(e: BaseException) -> bool:
    if isinstance(e, (ConnectionFailure, ExecutionTimeout, WTimeoutError)):
        return True
    return isinstance(e, OperationFailure) and e.code in _DB_STOPPING_CODES


# A database error once a request has sent a write: the write may have been made (it waited in
# the database's queue past the client's patience, or the database went away after it), so the
# client is told to look before it sends it again, by a status of its own (vaultd.db_deadline).
UNCONFIRMED = ("the database did not confirm the change in time; it may have been made: "
               "read it back before sending it again")


def _database_error(after_write: bool) -> VaultError:
    if after_write:
        return Unconfirmed(UNCONFIRMED)
    return ServiceUnavailable("database unavailable; retry shortly", retry_after=2)


def as_vault_error(e: BaseException, after_write: bool = False) -> VaultError | None:
    if isinstance(e, VaultError):
        return e
    if _database_unavailable(e):
        log.warning("database unavailable: %s", type(e).__name__)
        return _database_error(after_write)
    if isinstance(e, (BlobCorrupt, KeyUnavailable)):
        log.error("stored file failed its integrity check: %s", e)
        return StorageCorrupt("stored file failed its integrity check")
    if isinstance(e, StorageFull):
        log.error("blob storage is full")
        return InsufficientStorage("storage is full; retry later", retry_after=60)
    if isinstance(e, BackendUnavailable):
        return ServiceUnavailable("storage unavailable; retry shortly", retry_after=2)
    return None


class NotFoundHandler(BaseHandler):
    """Unknown routes: JSON 404 whatever the method."""

    public = True

    async def prepare(self) -> None:
        self.send_json(404, {"error": "no such endpoint"})
