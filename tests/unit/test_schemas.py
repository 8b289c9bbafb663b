"""Every schema of ``tools/list`` is one every client takes (docs/tools.md, "Schemas"): each input
and output schema passes the JSON Schema Draft 2020-12 meta-schema, none anywhere has ``type`` as a
list or a ``$ref``, each is an object schema at its top. Each output schema says something: it
refuses an answer of the wrong shape (tests/conftest.py checks every answer of the suite against
it). The Inspector CLI's own ``--strict`` run is ``bench/inspector_strict.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import closed
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.extension import advertise

from vault_mem.mcp_server.app import build_server
from vault_mem.mcp_server.outputs import output_schema
from vault_mem.served.context import Vault
from vault_mem.served.vaults import Served
from vault_mem.ui import mcp_app

pytestmark = pytest.mark.anyio
APPS = advertise("io.modelcontextprotocol/ui", {"mimeTypes": [mcp_app.MIME]})


def walk(schema: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of ``schema`` (as a dict) with its JSON-pointer-like place."""
    if isinstance(schema, dict):
        yield where, schema
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from walk(sub, f"{where}/{key}/{name}")
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
                for i, sub in enumerate(value):
                    yield from walk(sub, f"{where}/{key}/{i}")
            elif key in ("items", "additionalProperties", "not", "if", "then", "else") and isinstance(value, dict):
                yield from walk(value, f"{where}/{key}")


@pytest.fixture(params=["plain", "compat and MCP Apps", "several vaults"])
async def listed(request: pytest.FixtureRequest, make_vault) -> list[Any]:
    compat = request.param == "compat and MCP Apps"
    vault: Vault = make_vault({"a.md": "# A\n"}, compat=compat)
    served: Vault | Served = vault
    if request.param == "several vaults":  # every tool takes vault; rows and list_domains name vaults
        served = Served({"a": vault, "b": make_vault({"b.md": "# B\n"})}, "a")
    async with Client(build_server(served), mode="legacy", extensions=[APPS] if compat else None) as client:
        return list((await client.list_tools()).tools)


async def test_every_schema_passes_the_draft_2020_12_meta_schema_with_no_type_list(listed: list[Any]) -> None:
    problems = []
    for tool in listed:
        for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            assert schema is not None and schema.get("type") == "object", (tool.name, kind)
            for error in Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema):
                problems.append(f"{tool.name} {kind}: {error.message[:160]}")
            for where, sub in walk(schema):
                if isinstance(sub.get("type"), list):
                    problems.append(f"{tool.name} {kind}{where}: type is a list {sub['type']}")
                if "$ref" in sub or "$dynamicRef" in sub:
                    problems.append(f"{tool.name} {kind}{where}: a reference")
                if sub.get("type") == "array" and "items" not in sub:
                    problems.append(f"{tool.name} {kind}{where}: an array without items")
    assert not problems, "\n".join(problems)


async def test_a_parameter_of_two_forms_takes_both_and_nothing_else(listed: list[Any]) -> None:
    schema = next(t for t in listed if t.name == "memory_write").input_schema["properties"]["tags"]
    validator = Draft202012Validator(schema)
    assert validator.is_valid(["a", "b"]) and validator.is_valid("a")
    assert not validator.is_valid(5) and not validator.is_valid([5]) and not validator.is_valid({"a": 1})
    sets = Draft202012Validator(next(t for t in listed if t.name == "memory_edit").input_schema["properties"]["set"])
    assert sets.is_valid({"a": 1}) and sets.is_valid('{"a": 1}') and not sets.is_valid(["a"])


OK_SEARCH = {"status": "ok", "count": 1, "truncated": False, "inbox": [], "inbox_more": 0,
             "notes": [{"permalink": "memory://a", "title": "A", "kind": "note", "paths": [], "tags": [],
                        "updated_at": "2026-01-01T00:00:00+00:00", "excerpt": "", "score": 1.5,
                        "status": "active", "etag": "e"}]}


@pytest.mark.parametrize(("tool", "answer", "valid"), [
    ("memory_search", OK_SEARCH, True),
    ("memory_search", {k: v for k, v in OK_SEARCH.items() if k != "notes"}, False),  # an ok answer lacks notes
    ("memory_search", OK_SEARCH | {"count": "1"}, False),
    ("memory_search", OK_SEARCH | {"notes": [OK_SEARCH["notes"][0] | {"score": "high"}]}, False),  # type: ignore[index]
    ("memory_search", {"status": "none", "message": "the index is being built; try again shortly"}, True),
    ("memory_search", {"status": "invalid", "param": "agent"}, False),  # an error without its message
    ("memory_search", {"status": "maybe", "message": "?"}, False),
    ("memory_write", {"status": "ok", "uid": "u", "permalink": "memory://a", "path": "a.md",
                      "updated": "2026-01-01T00:00:00+00:00", "etag": "e", "similar": []}, True),
    ("memory_write", {"status": "ok", "uid": "u", "permalink": "memory://a", "path": "a.md", "etag": "e",
                      "similar": []}, False),
    ("memory_edit", {"status": "conflict", "message": "stale", "etag": "e", "updated": "2026-01-01"}, True),
    ("memory_read", {"status": "not_found", "message": "no note matches 'x'"}, True),
    ("list_domains", {"status": "ok", "domains": [{"domain": "", "active": 1, "archived": 0,
                                                   "updated": "2026-01-01T00:00:00+00:00"}]}, True),
    ("list_domains", {"status": "ok", "domains": [{"domain": "", "active": "1", "archived": 0}]}, False),
])
def test_an_output_schema_refuses_an_answer_of_the_wrong_shape(tool: str, answer: dict[str, Any], valid: bool) -> None:
    assert Draft202012Validator(output_schema(tool)).is_valid(answer) == valid


def test_a_published_schema_takes_a_field_added_later_and_the_tests_closed_one_does_not() -> None:
    answer = OK_SEARCH | {"a_later_field": 1}
    assert Draft202012Validator(output_schema("memory_search")).is_valid(answer)
    assert not Draft202012Validator(closed(output_schema("memory_search"))).is_valid(answer)
    row = OK_SEARCH | {"notes": [OK_SEARCH["notes"][0] | {"unnamed": True}]}  # type: ignore[index]
    assert not Draft202012Validator(closed(output_schema("memory_search"))).is_valid(row)
