"""Several images of one leak at once (POST /v1/trace as multipart/form-data,
docs/leak-tracing.md): each image is traced as a single one would be, then the answers are
added up per viewer. A leak of several pages names the same viewer on each page it carries
(each page view has its own render id), so the viewers named by the most images come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultd.db import Db
from vaultd.errors import InvalidRequest, Unprocessable, UnsupportedMediaType
from vaultd.services.accounts.accounts import Account
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.tracing.reader import LeakReader
from vaultd.services.tracing.trace import Match, check_allowed, check_content_type, find_matches

MAX_IMAGES = 20
MAX_BATCH_BYTES = 100 * 1024 * 1024  # the whole multipart body; each image 25 MiB at most


@dataclass(frozen=True)
class LeakImage:
    name: str | None  # the part's filename, as the client sent it
    content_type: str | None
    data: bytes


def check_batch(images: list[LeakImage]) -> None:
    """1 to MAX_IMAGES images, each a JPEG or PNG as its part says (415 names the part)."""
    if not images:
        raise InvalidRequest("send 1 to 20 images as multipart/form-data parts named image")
    if len(images) > MAX_IMAGES:
        raise InvalidRequest(f"at most {MAX_IMAGES} images in one trace ({len(images)} sent)")
    for number, image in enumerate(images, start=1):
        try:
            check_content_type(image.content_type, image.data)
        except UnsupportedMediaType as exc:
            raise UnsupportedMediaType(f"image {number}: {exc}") from None


async def trace_batch(db: Db, reader: LeakReader, account: Account, images: list[LeakImage],
                      ) -> dict[str, Any]:
    """The multipart answer: `images` (one answer per image, in order: `found` and `matches`
    as a single trace answers, or `error` for an image a worker could not read) and the
    combined verdict, `found` and `viewers`."""
    require_caller(Permission.TRACE)
    check_allowed(account)
    check_batch(images)
    answers: list[dict[str, Any]] = []
    for index, image in enumerate(images):
        answer: dict[str, Any] = {"index": index, "name": image.name}
        try:
            reading = await reader.read(image.data, account.id)
        except Unprocessable as exc:  # one damaged image does not sink the others
            answers.append({**answer, "found": False, "error": str(exc)})
            continue
        matches = [] if reading is None else await find_matches(
            db, reading.render_id, account.id, reading.evidence)
        answers.append({**answer, "found": bool(matches), **({"matches": matches}
                                                             if matches else {})})
    viewers = combined(answers)
    return {"found": bool(viewers), "viewers": viewers, "images": answers}


def combined(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per viewer (email and name), the images whose marks name one of their page views and
    those views' render ids: most images first."""
    grouped: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    for answer in answers:
        match: Match
        for match in answer.get("matches", []):
            key = (match["viewerEmail"], match["viewerName"])
            viewer = grouped.setdefault(key, {"viewerEmail": key[0], "viewerName": key[1],
                                              "images": [], "renderIds": []})
            if answer["index"] not in viewer["images"]:
                viewer["images"].append(answer["index"])
            if match["renderId"] not in viewer["renderIds"]:
                viewer["renderIds"].append(match["renderId"])
    return sorted(grouped.values(), key=lambda viewer: -len(viewer["images"]))
