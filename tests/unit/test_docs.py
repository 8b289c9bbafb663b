"""docs/tools.md documents every tool a client can list (``serve --compat`` included), each
of its parameters with the schema's type, an example call that the tool accepts, and
every status an answer can carry (sqlite-utils' tests/test_docs.py does this for its CLI)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

import vault_mem.errors as errors
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
TOOLS_MD = DOCS / "tools.md"
DOC_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
             "object": "object", "array of strings": "array"}


def sections(text: str) -> dict[str, str]:
    """``## heading`` -> the text under it, up to the next ``##`` heading."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def param_rows(section: str) -> dict[str, list[str]]:
    """The parameter table of a tool's section: name -> [type, default, accepted] as written."""
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 4 and cells[0].count("`") == 2:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def schema_types(prop: dict[str, Any]) -> str | list[str]:
    """A property's JSON type, or its types in order when it takes two forms (``anyOf``)."""
    if "anyOf" in prop:
        return [str(branch["type"]) for branch in prop["anyOf"]]
    return str(prop["type"])


def schema_type(prop: dict[str, Any]) -> str:
    kind = schema_types(prop)
    return kind[0] if isinstance(kind, list) else kind


@pytest.fixture
async def listed(make_vault, mcp_session) -> list[Any]:
    vault: Vault = make_vault({"a.md": "# A\n"}, compat=True)
    async with mcp_session(vault) as c:
        return list((await c.client.list_tools()).tools)


async def test_every_listed_tool_has_its_own_section_in_the_tool_reference(listed) -> None:
    found = sections(TOOLS_MD.read_text(encoding="utf-8"))
    missing = [tool.name for tool in listed if tool.name not in found]
    assert not missing, f"docs/tools.md has no '## name' section for: {missing}"
    index = TOOLS_MD.read_text(encoding="utf-8").split("\n## ", 1)[0]
    for tool in listed:
        assert f"[`{tool.name}`](#{tool.name})" in index, f"{tool.name} is missing from the table at the top"


async def test_every_parameter_is_documented_with_the_type_the_schema_gives(listed) -> None:
    found = sections(TOOLS_MD.read_text(encoding="utf-8"))
    problems = []
    for tool in listed:
        rows = param_rows(found.get(tool.name, ""))
        for name, prop in tool.input_schema["properties"].items():
            if name not in rows:
                problems.append(f"{tool.name}.{name} is not in its parameter table")
            elif DOC_TYPES.get(rows[name][0]) != schema_type(prop):
                problems.append(f"{tool.name}.{name} is documented as {rows[name][0]!r}, the schema says "
                                f"{schema_types(prop)!r}")
        signature = found.get(tool.name, "").strip().split("\n\n")[0].split("`:")[0]
        for name in tool.input_schema["properties"]:
            if not re.search(rf"\b{re.escape(name)}\b", signature):
                problems.append(f"{tool.name}.{name} is missing from the signature line")
    assert not problems, "\n".join(problems)


async def test_every_example_call_is_one_the_tool_accepts(listed, make_vault, mcp_session) -> None:
    """The first JSON block of each tool's section is a call: its names are the tool's
    parameters, and a real session on a copy of sample_vault does not answer ``invalid``;
    the second is its answer, with the real answer's status and (unless shortened) fields."""
    found = sections(TOOLS_MD.read_text(encoding="utf-8"))
    vault: Vault = make_vault(_sample_notes(), compat=True)
    async with mcp_session(vault) as c:
        for tool in listed:
            blocks = re.findall(r"```json\n(.*?)\n```", found[tool.name], flags=re.DOTALL)
            assert len(blocks) >= 2, f"{tool.name} needs an example call and its answer"
            call = json.loads(blocks[0])
            unknown = set(call) - set(tool.input_schema["properties"])
            assert not unknown, f"{tool.name} example passes unknown parameters {unknown}"
            answer = await c.call(tool.name, **call)
            assert answer["status"] in ("ok", "conflict"), (tool.name, answer)
            assert blocks[1].startswith('{"status":"' + answer["status"] + '"'), (tool.name, blocks[1][:80])
            try:
                shown = json.loads(blocks[1])
            except ValueError:
                continue  # shortened with "…" between values: only its status is checked
            assert set(shown) == set(answer), f"{tool.name}: the example answer's fields differ from a real one's"


def _sample_notes() -> dict[str, str]:
    root = Path(__file__).resolve().parent.parent.parent / "sample_vault"
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.md")
            if not any(part.startswith(".") for part in p.relative_to(root).parts)}


def test_every_status_an_answer_can_carry_is_in_the_statuses_table() -> None:
    table = sections(TOOLS_MD.read_text(encoding="utf-8"))["Answers"]
    statuses = {"ok", "none"} | {cls.status for _, cls in inspect.getmembers(errors, inspect.isclass)
                                 if issubclass(cls, errors.VaultMemError)}
    for status in statuses:
        assert f"| `{status}` |" in table, f"status {status!r} is not in the table of docs/tools.md"


def test_docs_link_only_to_pages_that_exist() -> None:
    """Each page this issue owns links only to files in docs/ (others' pages come with them)."""
    for page in ("tools.md", "index-and-sync.md", "safety.md", "dependencies.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", text):
            if target in ("git.md", "vault-format.md"):  # written with the git and people-docs issues
                continue
            assert (DOCS / target).is_file(), f"{page} links to missing {target}"


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """``.ci/run`` runs what the README tells a contributor to run, the run on Whoosh's own code and
    the answers check included, and every file of that run's subset exists (a renamed file would drop out of it)."""
    from conftest import PATCHES_OFF_SUBSET

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(python3 -m venv \.venv && .*\.venv/bin/pytest.*)$", readme, flags=re.MULTILINE)
    script = (DOCS.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert len(commands) == 1 and script[-1] == commands[0], (commands, script[-1])
    assert "VAULT_MEM_WHOOSH_PATCHES=none .venv/bin/pytest -m patches_off_subset" in commands[0]
    # The answers check (bench/answers_check.py), against the digests the repository keeps.
    assert commands[0].endswith(".venv/bin/python bench/answers_check.py compare tests/answers.sha256.jsonl")
    assert (DOCS.parent / "tests" / "answers.sha256.jsonl").is_file()
    present = {path.stem for path in Path(__file__).resolve().parent.parent.rglob("test_*.py")}
    assert present >= PATCHES_OFF_SUBSET, sorted(PATCHES_OFF_SUBSET - present)
