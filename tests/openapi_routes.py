"""The routes vaultd serves against the OpenAPI document, by path, method and path parameter:
what `tests/test_openapi_contract.py` holds, and what the owner-endpoint example
(`tests/test_owner_endpoint_example.py`) shows it catching."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vaultd.web.app import served_methods

DOCUMENT = Path(__file__).resolve().parents[1] / "vaultd" / "web" / "openapi.json"
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ROOT_SERVER = [{"url": "/", "description": "outside /v1: the server's root"}]
# Served but outside the document, each for its reason: the hosted viewer and room are pages
# for a browser (docs/api.md, "The hosted viewer"), `/health` and `/v1` are aliases of the
# documented `/healthz` and `/`.
UNDOCUMENTED = re.compile(r"^/(v|r)/|^/health$|^/v1$")

_GROUP = re.compile(r"\((?:[^()]|\([^()]*\))*\)")
_ONE_SEGMENT = "([^/]+)"
_PARAMETER = re.compile(r"\{([^}]+)\}")


def _paths(pattern: str) -> list[str]:
    """The documented forms of a route's pattern: a segment group as `{}`, an alternation such
    as `(code|verify)` as each of its literal paths."""
    pattern = pattern.rstrip("$")
    groups = _GROUP.findall(pattern)
    pieces = _GROUP.split(pattern)
    choices = [["{}"] if group == _ONE_SEGMENT else group[1:-1].split("|") for group in groups]
    paths = []
    for chosen in itertools.product(*choices):
        path = pieces[0]
        for value, piece in zip(chosen, pieces[1:], strict=True):
            path += value + piece
        paths.append(path)
    return paths


def routed_operations(routes: Iterable[tuple[str, type]]) -> dict[tuple[str, str], str]:
    """(path with `{}` for each parameter, METHOD) of every documented-in-principle route,
    to the route's pattern."""
    found: dict[tuple[str, str], str] = {}
    for pattern, handler in routes:
        if UNDOCUMENTED.search(pattern):
            continue
        only = getattr(handler, "only_methods", ())
        for method in served_methods(handler):
            if only and method not in only:
                continue
            for path in _paths(pattern):
                found[(path, method)] = pattern
    return found


def _full_path(path: str, item: Mapping[str, Any]) -> str:
    return path if item.get("servers") == ROOT_SERVER else "/v1" + path


def documented_operations(document: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(path with `{}` for each parameter, METHOD) of every operation, to its documented path."""
    found: dict[tuple[str, str], str] = {}
    for path, item in document["paths"].items():
        full = _full_path(path, item)
        for method in HTTP_METHODS:
            if method in item:
                found[(_PARAMETER.sub("{}", full), method.upper())] = full
    return found


def _resolved(document: Mapping[str, Any], parameter: Mapping[str, Any]) -> Mapping[str, Any]:
    if "$ref" in parameter:
        found: Mapping[str, Any] = document
        for part in parameter["$ref"].removeprefix("#/").split("/"):
            found = found[part]
        return found
    return parameter


def parameter_differences(document: Mapping[str, Any]) -> list[str]:
    """Each operation declares exactly its path's parameters, `in: path` and required."""
    problems = []
    for path, item in document["paths"].items():
        named = sorted(_PARAMETER.findall(path))
        for method in HTTP_METHODS:
            if method not in item:
                continue
            # An operation's parameter replaces the path's of the same name and place.
            declared = {(p["name"], p.get("in")): p for p in
                        (_resolved(document, p) for p in
                         [*item.get("parameters", []), *item[method].get("parameters", [])])}
            in_path = [p for p in declared.values() if p.get("in") == "path"]
            where = f"{method.upper()} {_full_path(path, item)}"
            if sorted(p["name"] for p in in_path) != named:
                problems.append(f"{where} declares path parameters "
                                f"{sorted(p['name'] for p in in_path)}, its path has {named}")
            problems += [f"{where}: path parameter {p['name']} is not required"
                         for p in in_path if p.get("required") is not True]
    return problems


def contract_differences(routes: Iterable[tuple[str, type]],
                         document: Mapping[str, Any]) -> list[str]:
    """Every way the served routes and the document disagree, one line each; [] if none."""
    routed, documented = routed_operations(routes), documented_operations(document)
    problems = [f"{method} {pattern} is served but not in the OpenAPI document"
                for (path, method), pattern in sorted(routed.items())
                if (path, method) not in documented]
    problems += [f"{method} {path} is in the OpenAPI document but not served"
                 for (shape, method), path in sorted(documented.items())
                 if (shape, method) not in routed]
    return problems + parameter_differences(document)
