"""The tool contracts, pinned: each tool's name, parameters (order, JSON type, required or
default, range and choices), annotations, and the size of ``tools/list`` (basic-memory's
test_tool_contracts.py does the same). Each parameter is declared once (``served.params.Param``):
the listing's schema, the validation and docs/tools.md are checked against these pins here.
A change here is a change of the public contract: update docs/tools.md with it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_docs import TOOLS_MD, param_rows, schema_types, sections

from vault_mem.mcp_server.outputs import output_schema
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
        ("follow", "string", "active"), ("as_of", "string", NONE),
    ]),
    "list_by_domain": (READ, [
        ("domain", "string", REQUIRED), ("type", "string", ""), ("limit", "integer", 20),
        ("offset", "integer", 0), ("status", "string", "active"), ("subtree", "boolean", True),
        ("as_of", "string", NONE),
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
        ("fields", ["array", "string"], NONE), ("follow", "string", "active"), ("as_of", "string", NONE),
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
# (tool, parameter) -> the schema's minimum, maximum and enum; any other parameter has none
RANGES: dict[tuple[str, str], dict[str, Any]] = {
    ("memory_search", "limit"): {"minimum": 1},
    ("list_by_domain", "limit"): {"minimum": 1, "maximum": 200},
    ("list_by_domain", "offset"): {"minimum": 0},
    ("list_by_domain", "status"): {"enum": ["active", "archived", "all"]},
    ("mem_recall", "limit"): {"minimum": 1, "maximum": 500},
    ("mem_recall", "offset"): {"minimum": 0},
    ("mem_recall", "output_format"): {"enum": ["compact", "structured"]},
    ("memory_list", "limit"): {"minimum": -1},
    ("memory_list", "offset"): {"minimum": 0},
    ("memory_list", "content_mode"): {"enum": ["preview", "full"]},
    ("memory_list", "preview_chars"): {"minimum": 1, "maximum": 2000},
    ("memory_list", "follow"): {"enum": ["active", "latest", "full_history", "all"]},
    ("memory_search", "follow"): {"enum": ["active", "latest", "full_history", "all"]},
    ("memory_read", "offset"): {"minimum": 0},
    ("memory_read", "max_chars"): {"minimum": 1, "maximum": 30000},
    ("memory_read", "history"): {"minimum": 0, "maximum": 50},
    ("list_domains", "offset"): {"minimum": 0},
    ("memory_write", "importance"): {"minimum": 0, "maximum": 1},
    ("memory_write", "scope"): {"enum": ["user", "project_shared", "project_local"]},
    ("task_close", "state"): {"enum": ["completed", "cancelled"]},
    ("get_memory", "offset"): {"minimum": 0},
    ("get_memory", "max_chars"): {"minimum": 1, "maximum": 30000},
    ("memory_get", "offset"): {"minimum": 0},
    ("memory_get", "max_chars"): {"minimum": 1, "maximum": 30000},
}
# The default tools/list as compact JSON: what a model is given (names, descriptions, input schemas,
# annotations: every output schema left out), and the whole answer (docs/tools.md, "Schemas").
MAX_LISTING_BYTES = 12_000
MAX_WHOLE_LISTING_BYTES = 40_000


def listing_size(data: dict[str, Any], outputs: bool = True) -> int:
    tools = [{k: v for k, v in tool.items() if outputs or k != "outputSchema"} for tool in data["tools"]]
    return len(json.dumps({**data, "tools": tools}, separators=(",", ":"), ensure_ascii=False))


async def listing(make_vault, mcp_session, compat: bool) -> tuple[list[Any], int, int]:
    """The tools listed, the listing's size without output schemas and with them."""
    vault: Vault = make_vault({"a.md": "# A\n"}, compat=compat)
    async with mcp_session(vault) as c:
        result = await c.client.list_tools()
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return list(result.tools), listing_size(data, outputs=False), listing_size(data)


@pytest.mark.parametrize("compat", [False, True], ids=["default", "compat"])
async def test_tools_list_holds_exactly_the_pinned_tools_in_order(make_vault, mcp_session, compat: bool) -> None:
    tools, size, whole = await listing(make_vault, mcp_session, compat)
    expected = [*CONTRACT, *(COMPAT if compat else {})]
    assert [t.name for t in tools] == expected
    if not compat:
        assert size < MAX_LISTING_BYTES, f"tools/list without output schemas is {size} bytes"
        assert whole < MAX_WHOLE_LISTING_BYTES, f"tools/list is {whole} bytes"


async def test_each_tool_has_the_pinned_parameters_types_required_and_annotations(make_vault, mcp_session) -> None:
    tools, _, _ = await listing(make_vault, mcp_session, compat=True)
    contract = {**CONTRACT, **COMPAT}
    for tool in tools:
        annotations, params = contract[tool.name]
        assert tool.annotations is not None
        got = (tool.annotations.read_only_hint, tool.annotations.idempotent_hint, tool.annotations.destructive_hint)
        assert got == annotations, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert [(name, schema_types(prop)) for name, prop in schema["properties"].items()] == \
            [(name, kind) for name, kind, _ in params], tool.name
        required = [name for name, _, default in params if default is REQUIRED]
        assert schema.get("required", []) == required, tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
            default = next(d for n, _, d in params if n == name)
            if default is REQUIRED or default is NONE:
                assert "default" not in prop, (tool.name, name)
            else:
                assert "default" in prop and prop["default"] == default, (tool.name, name)
                assert type(prop["default"]) is type(default), (tool.name, name)
            bounds = {k: prop[k] for k in ("minimum", "maximum", "enum") if k in prop}
            assert bounds == RANGES.get((tool.name, name), {}), (tool.name, name)
        assert tool.output_schema == output_schema(tool.name), tool.name


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


def test_the_tool_reference_gives_the_pinned_ranges_and_choices() -> None:
    """docs/tools.md's "accepted" cell names each bound and each choice (in backticks); a cell
    saying "as `memory_read`" stands for that tool's cell."""
    found = sections(TOOLS_MD.read_text(encoding="utf-8"))
    problems = []
    for (tool, name), bounds in RANGES.items():
        cell = param_rows(found[tool]).get(name, ["", "", "(not documented)"])[2]
        if cell.startswith("as `"):
            cell = param_rows(found[cell[4:].partition("`")[0]]).get(name, ["", "", cell])[2]
        wanted = [str(bounds[k]) for k in ("minimum", "maximum") if k in bounds]
        wanted += [f"`{choice}`" for choice in bounds.get("enum", [])]
        problems += [f"{tool}.{name}: docs say {cell!r}, without {w}" for w in wanted if w not in cell]
    assert not problems, "\n".join(problems)


def test_no_description_restates_a_default_the_schema_carries() -> None:
    from vault_mem.mcp_server.tools import TOOLS

    for spec in TOOLS:
        for param in spec.params:
            if param.default is None:
                continue
            value = shown(param.default).strip("`")
            for text in (param.description, spec.description):
                assert f"default {value}" not in text.lower() and f"{value} (default)" not in text, \
                    (spec.name, param.name, text)


def out_of_range(bounds: dict[str, Any]) -> list[Any]:
    values: list[Any] = [bounds["minimum"] - 1] if "minimum" in bounds else []
    values += [bounds["maximum"] + 1] if "maximum" in bounds else []
    return values + (["no-such-choice"] if "enum" in bounds else [])


async def test_validation_refuses_exactly_what_the_schema_leaves_out(make_vault, mcp_session) -> None:
    """Each bound and each choice of the listing is the one the tool enforces: a value just past
    it is ``invalid`` naming the parameter, and the bound itself (or each choice) is taken."""
    vault: Vault = make_vault({"a.md": "---\nid: a1\ntype: task\n---\n# A\n"}, compat=True)
    given = {"agent": "t", "ref": "a1", "uid": "a1", "memory_id": "a1", "domain": "", "title": "New",
             "content": "Body."}
    async with mcp_session(vault) as c:
        for (tool, name), bounds in RANGES.items():
            if tool in WRITING:
                continue  # a write tool's accepted values would write; their refusals are checked
            required = {n: given[n] for n, _, d in {**CONTRACT, **COMPAT}[tool][1] if d is REQUIRED}
            for value in out_of_range(bounds):
                answer = await c.call(tool, **required, **{name: value})
                assert answer["status"] == "invalid" and answer["param"] == name, (tool, name, value, answer)
            for value in [bounds[k] for k in ("minimum", "maximum") if k in bounds] + bounds.get("enum", []):
                answer = await c.call(tool, **required, **{name: value})
                assert answer["status"] in ("ok", "none"), (tool, name, value, answer)
        for tool in WRITING:
            required = {n: given[n] for n, _, d in CONTRACT[tool][1] if d is REQUIRED}
            for (t, name), bounds in RANGES.items():
                if t == tool:
                    for value in out_of_range(bounds):
                        answer = await c.call(tool, **required, **{name: value})
                        assert answer["status"] == "invalid" and answer["param"] == name, (tool, value, answer)


WRITING = ("memory_write", "task_close")


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

