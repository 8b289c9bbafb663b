"""The tool contracts, pinned: each tool's name, parameters (order, JSON type, required or
default), annotations, and the size of ``tools/list`` (basic-memory's test_tool_contracts.py
does the same). A change here is a change of the public contract: update docs/tools.md with it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_docs import TOOLS_MD, param_rows, sections

from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio

REQUIRED = object()  # the parameter has no default: leaving it out is ``invalid``
NONE = None  # optional, and absent means "no filter" / "not written" / a default the docs explain

READ = (True, True, False)  # read_only, idempotent, destructive
WRITE = (False, False, False)

# tool -> (annotations, [(parameter, JSON type, default)])
CONTRACT: dict[str, tuple[tuple[bool, bool, bool], list[tuple[str, str | list[str], Any]]]] = {
    "memory_search": (READ, [
        ("agent", "string", REQUIRED), ("query", "string", NONE), ("tag", "string", NONE),
        ("kind", "string", NONE), ("path", "string", NONE), ("limit", "integer", 10), ("since", "string", NONE),
    ]),
    "list_by_domain": (READ, [
        ("domain", "string", REQUIRED), ("type", "string", ""), ("limit", "integer", 20),
        ("offset", "integer", 0), ("status", "string", "active"), ("subtree", "boolean", True),
    ]),
    "mem_recall": (READ, [
        ("since", "string", NONE), ("until", "string", NONE), ("source_filter", "string", NONE),
        ("tag_filter", "string", NONE), ("namespace", "string", NONE), ("scope", "string", NONE),
        ("limit", "integer", 20), ("offset", "integer", 0), ("output_format", "string", "compact"),
    ]),
    "memory_list": (READ, [
        ("query", "string", NONE), ("metadata_filters", ["object", "string"], NONE), ("limit", "integer", 20),
        ("offset", "integer", 0), ("date_from", "string", NONE), ("date_to", "string", NONE),
        ("tags_any", ["array", "string"], NONE), ("tags_all", ["array", "string"], NONE),
        ("tags_none", ["array", "string"], NONE), ("sort_by_importance", "boolean", False),
        ("content_mode", "string", "preview"), ("preview_chars", "integer", 120),
        ("fields", ["array", "string"], NONE), ("follow", "string", "active"),
    ]),
    "memory_read": (READ, [("ref", "string", REQUIRED), ("offset", "integer", 0), ("max_chars", "integer", 20000),
                                ("history", "integer", 5), ("agent", "string", NONE)]),
    "list_domains": (READ, [("offset", "integer", 0)]),
    "memory_write": (WRITE, [
        ("agent", "string", REQUIRED), ("title", "string", REQUIRED), ("content", "string", REQUIRED),
        ("domain", "string", ""), ("type", "string", "note"), ("tags", ["array", "string"], NONE),
        ("importance", "number", 0.5), ("namespace", "string", "default"), ("scope", "string", "user"),
        ("project", "string", NONE), ("paths", ["array", "string"], NONE), ("to", ["array", "string"], NONE),
    ]),
    "memory_edit": (WRITE, [
        ("agent", "string", REQUIRED), ("ref", "string", REQUIRED), ("if_etag", "string", NONE),
        ("if_updated", "string", NONE), ("content", "string", NONE), ("append", "string", NONE),
        ("set", ["object", "string"], NONE), ("to", ["array", "string"], NONE),
    ]),
    "task_close": (WRITE, [
        ("agent", "string", REQUIRED), ("ref", "string", REQUIRED), ("state", "string", "completed"),
        ("if_etag", "string", NONE),
    ]),
    "memory_supersede": (WRITE, [
        ("agent", "string", REQUIRED), ("ref", "string", REQUIRED), ("title", "string", REQUIRED),
        ("content", "string", REQUIRED), ("type", "string", NONE), ("tags", ["array", "string"], NONE),
        ("domain", "string", NONE),
    ]),
    "memory_delete": ((False, False, True), [
        ("agent", "string", REQUIRED), ("ref", "string", REQUIRED), ("if_etag", "string", NONE),
    ]),
}
COMPAT: dict[str, tuple[tuple[bool, bool, bool], list[tuple[str, str | list[str], Any]]]] = {
    "get_memory": (READ, [("uid", "string", REQUIRED), ("offset", "integer", 0), ("max_chars", "integer", 20000)]),
    "memory_get": (READ, [("memory_id", "string", REQUIRED), ("offset", "integer", 0),
                          ("max_chars", "integer", 20000)]),
}
MAX_LISTING_BYTES = 12_000  # the default tools/list, as compact JSON


async def listing(make_vault, mcp_session, compat: bool) -> tuple[list[Any], int]:
    vault: Vault = make_vault({"a.md": "# A\n"}, compat=compat)
    async with mcp_session(vault) as c:
        result = await c.client.list_tools()
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return list(result.tools), len(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


@pytest.mark.parametrize("compat", [False, True], ids=["default", "compat"])
async def test_tools_list_holds_exactly_the_pinned_tools_in_order(make_vault, mcp_session, compat: bool) -> None:
    tools, size = await listing(make_vault, mcp_session, compat)
    expected = [*CONTRACT, *(COMPAT if compat else {})]
    assert [t.name for t in tools] == expected
    if not compat:
        assert size < MAX_LISTING_BYTES, f"tools/list is {size} bytes"


async def test_each_tool_has_the_pinned_parameters_types_required_and_annotations(make_vault, mcp_session) -> None:
    tools, _ = await listing(make_vault, mcp_session, compat=True)
    contract = {**CONTRACT, **COMPAT}
    for tool in tools:
        annotations, params = contract[tool.name]
        assert tool.annotations is not None
        got = (tool.annotations.read_only_hint, tool.annotations.idempotent_hint, tool.annotations.destructive_hint)
        assert got == annotations, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert [(name, prop["type"]) for name, prop in schema["properties"].items()] == \
            [(name, kind) for name, kind, _ in params], tool.name
        required = [name for name, _, default in params if default is REQUIRED]
        assert schema.get("required", []) == required, tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
            default = next(d for n, _, d in params if n == name)
            if "default" in prop:  # once schemas carry defaults, they must be the pinned ones
                assert prop["default"] == default, (tool.name, name)
        assert tool.output_schema == {"type": "object", "properties": {"status": {"type": "string"}},
                                      "required": ["status"]}, tool.name


def shown(default: Any) -> str:
    """How docs/tools.md writes a default in its parameter tables."""
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, str):
        return f"`{default}`" if default else '`""`'
    return str(default)


def test_the_tool_reference_gives_the_pinned_defaults() -> None:
    found = sections(TOOLS_MD.read_text(encoding="utf-8"))
    problems = []
    for tool, (_, params) in {**CONTRACT, **COMPAT}.items():
        rows = param_rows(found[tool])
        for name, _, default in params:
            cell = rows.get(name, ["", "(not documented)"])[1]
            if default is REQUIRED:
                ok = cell == "required"
            elif default is NONE:
                ok = cell != "required"
            else:
                ok = cell.startswith(shown(default))
            if not ok:
                problems.append(f"{tool}.{name}: docs say {cell!r}, the contract {shown(default)!r}")
    assert not problems, "\n".join(problems)


async def test_validation_accepts_exactly_the_listed_parameter_names(make_vault, mcp_session) -> None:
    """The schema and the query module's own parameter list agree: every listed name is
    taken (absent values are fine) and any other name is refused."""
    vault: Vault = make_vault({"a.md": "---\nid: a1\ntype: task\n---\n# A\n"}, compat=True)
    async with mcp_session(vault) as c:
        for tool, (_, params) in {**CONTRACT, **COMPAT}.items():
            answer = await c.call(tool, **{name: None for name, _, _ in params})
            assert "unknown parameter" not in answer.get("message", ""), (tool, answer)
            unknown = await c.call(tool, **{name: None for name, _, _ in params}, surplus_name="x")
            assert unknown["status"] == "invalid" and "surplus_name" in unknown["message"], (tool, unknown)

