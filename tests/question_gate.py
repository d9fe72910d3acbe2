"""A gate made only for the tests, the worked example of docs/architecture.md ("Adding a
gate"): the reader answers the question the link's owner set. The policy takes
`question: {"prompt", "answer"}`; the answer is kept only as the SHA-256 of its case-folded
words (a test gate: a real one keeps a slow hash and limits tries, as `passcode` does).

Loaded by a test's own vaultd through `gates.extra_modules` (`VAULTD_GATES_EXTRA_MODULES=
tests.question_gate`), never imported by the pytest process: its routes would join every
route table there."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

from vaultd.db import Db
from vaultd.errors import Forbidden, InvalidRequest
from vaultd.records import PolicyDoc, ViewerSessionDoc
from vaultd.services.gates import sessions
from vaultd.services.gates.actions import pending_of
from vaultd.services.gates.gated import GatedLink, Reader
from vaultd.services.gates.registry import (
    ActionOutcome,
    GateAction,
    GateContext,
    PolicyInput,
    SessionGate,
    register,
)

NAME = "question"
PROMPT_LENGTH, ANSWER_LENGTH = (1, 200), (1, 100)
BAD_QUESTION = ("policy.question must be an object with a prompt (1 to 200 characters) and an "
                "answer (1 to 100 characters)")
WRONG_ANSWER = "answer is not correct"
ANSWER_REQUIRED = "answer is required"


def answer_digest(answer: str) -> str:
    return hashlib.sha256(" ".join(answer.casefold().split()).encode()).hexdigest()


def stored(policy: PolicyDoc) -> dict[str, str]:
    # A key of this gate's own: the typed record knows only the built-in gates'.
    question: dict[str, str] = cast(dict[str, Any], policy)[NAME]
    return question


async def give_answer(context: GateContext, link: GatedLink, session: ViewerSessionDoc,
                      value: Any, reader: Reader) -> ActionOutcome:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(ANSWER_REQUIRED)
    renewed = None
    if NAME not in session["passed"]:
        assert link.policy is not None  # the action runs only on a link with this gate
        expected = stored(link.policy)["answerSha256"]
        if not hmac.compare_digest(expected, answer_digest(value)):
            raise Forbidden(WRONG_ANSWER)
        renewed = await sessions.mark_passed(context.db, link, session, NAME)
    return ActionOutcome({"pending": pending_of(link, session)}, renewed)


def _length(value: Any, bounds: tuple[int, int]) -> bool:
    return isinstance(value, str) and bounds[0] <= len(value.strip()) <= bounds[1]


class Question(SessionGate):
    name = NAME
    step = "Answer the question"
    screen_template = str(Path(__file__).with_name("question_gate.html"))
    policy_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {NAME: {
        "type": "object", "required": ["prompt", "answer"], "additionalProperties": False,
        "properties": {"prompt": {"type": "string", "minLength": 1, "maxLength": 200},
                       "answer": {"type": "string", "minLength": 1, "maxLength": 100}}}}
    shown_fields: ClassVar[Mapping[str, Mapping[str, Any]]] = {NAME: {"type": "string"}}
    stored_keys = (NAME,)
    actions = (GateAction("answer", give_answer, field="answer", body_schema={
        "type": "object", "required": ["answer"],
        "properties": {"answer": {"type": "string", "minLength": 1}}}),)

    async def parse(self, given: PolicyInput, body: Mapping[str, Any]) -> dict[str, Any]:
        if NAME not in body:
            return {}
        value = body[NAME]
        if (not isinstance(value, dict) or set(value) != {"prompt", "answer"}
                or not _length(value["prompt"], PROMPT_LENGTH)
                or not _length(value["answer"], ANSWER_LENGTH)):
            raise InvalidRequest(BAD_QUESTION)
        return {NAME: {"prompt": value["prompt"].strip(),
                       "answerSha256": answer_digest(value["answer"])}}

    def shown(self, policy: PolicyDoc) -> dict[str, Any]:
        return {NAME: stored(policy)["prompt"]}

    async def screen(self, db: Db, link: GatedLink) -> dict[str, Any]:
        assert link.policy is not None
        return {"prompt": stored(link.policy)["prompt"]}


register(Question())
