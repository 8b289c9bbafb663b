"""Notes said before: ``memory_write`` and ``memory_supersede`` answer with ``similar`` (the notes
that say nearly the same, search/similar.py), over an MCP session and over HTTP with agent
keys; ``vault-mem tidy`` lists clusters of them, supersedes each into its note to keep with a
person's yes, and ``vault-mem undo --agent tidy`` puts every file back byte for byte (real CLI)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import open_vault, write_notes
from serving import start_http
from test_sharing import TOKEN, add_key, http_session

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.errors import Conflict
from vault_mem.served.context import Vault
from vault_mem.writes.tidy import supersede_into

pytestmark = pytest.mark.anyio

HEADER = "Session log of the agent. Context: continuing the work on the repository from the previous handoff."
FOOTER = "Next steps: run the full test suite, update the changelog and push the branch for review."
FACT = ("The billing exporter drops invoices when the ledger batch exceeds 500 rows. "
        "Splitting the nightly reconciliation into chunks of 200 fixes the timeout on staging.")
RESTATED = ("Splitting the nightly reconciliation into smaller chunks of 200 really fixes the staging timeout. "
            "The billing exporter drops invoices once the ledger batch exceeds 500 rows.")
THIRD = ("When the ledger batch is over 500 rows the billing exporter drops invoices; the nightly "
         "reconciliation split into chunks of 200 fixes the timeout on staging.")
OTHERS = [
    "The search crawler repeats sitemap fetches when robots caching is cold after a deploy.",
    "Grafana panels for the ingest queue lag need the kafka consumer group name, not the topic.",
    "The mobile login screen freezes on Android tablets when biometric prompts overlap.",
    "Terraform plans for the staging VPC drift because the NAT gateway tags are set by hand.",
]


def note(title: str, body: str, uid: str | None = None, updated: str = "2026-03-01T10:00:00+00:00") -> str:
    head = f"id: {uid}\n" if uid else ""
    return f"---\n{head}title: {title}\ntype: lesson\nupdated: {updated}\n---\n{HEADER}\n\n{body}\n\n{FOOTER}\n"


def diary(root: Path) -> Path:
    notes = {f"diary/Other {i}.md": note(f"Other {i}", text, f"other-{i}") for i, text in enumerate(OTHERS)}
    notes["diary/Billing exporter.md"] = note("Billing exporter batches", FACT, "billing-1")
    return write_notes(root, notes)


def titles(answer: dict[str, Any]) -> list[str]:
    return [row["title"] for row in answer["similar"]]


async def test_a_restatement_lists_the_note_it_repeats_and_the_write_still_happens(tmp_path, mcp_session) -> None:
    vault = open_vault(diary(tmp_path / "v"))
    async with mcp_session(vault) as c:
        again = await c.call("memory_write", agent="coder", title="Billing exporter again", content=RESTATED,
                             domain="diary")
        assert again["status"] == "ok" and (tmp_path / "v" / again["path"]).exists()
        [row] = again["similar"]
        assert row["permalink"] == "memory://diary/Billing exporter"
        assert row["title"] == "Billing exporter batches"
        assert 0.35 <= row["similarity"] <= 1
        # Only boilerplate in common: nothing said before.
        fresh = await c.call("memory_write", agent="coder", title="Printer queue",
                             content=f"{HEADER}\n\nThe office printer queue jams when duplex scans exceed "
                                     f"forty pages at once.\n\n{FOOTER}", domain="diary")
        assert fresh["status"] == "ok" and fresh["similar"] == []
        found = await c.call("memory_search", agent="coder", query="billing exporter ledger")
        assert {r["permalink"] for r in found["notes"]} >= {"memory://diary/Billing exporter",
                                                             "memory://diary/Billing exporter again"}


async def test_supersede_never_lists_the_note_it_replaces_but_lists_another_restatement(tmp_path, mcp_session) -> None:
    root = diary(tmp_path / "v")
    write_notes(root, {"diary/Billing copy.md": note("Billing exporter copy", RESTATED, "billing-2")})
    async with mcp_session(open_vault(root)) as c:
        new = await c.call("memory_supersede", agent="coder", ref="billing-1", title="Billing exporter v2",
                           content=f"{HEADER}\n\n{FACT} Chunks of 100 since March.\n\n{FOOTER}")
        assert new["status"] == "ok"
        assert titles(new) == ["Billing exporter copy"], "the replaced note is not news; the copy is"


def test_a_note_too_short_to_judge_lists_nothing(tmp_path) -> None:
    from vault_mem.search.api import resembling
    from vault_mem.served.context import view_of

    vault = open_vault(write_notes(tmp_path / "v", {"a.md": "---\ntitle: Todo\n---\ntodo\n",
                                                    "b.md": "---\ntitle: Todo\n---\ntodo\n"}))
    with view_of(vault) as view:
        assert resembling(view.snapshot, "Todo", "todo") == []


async def test_a_limited_agent_never_hears_of_a_similar_note_it_cannot_read(tmp_path, capsys) -> None:
    secret = ("The payroll export leaks salary bands when the finance bucket policy allows public reads. "
              "Rotate the signed URLs every 15 minutes and audit the bucket policy weekly.")
    root = write_notes(tmp_path / "v", {
        "private/Payroll leak.md": note("Payroll leak", secret, "payroll"),
        **{f"projects/Other {i}.md": note(f"Other {i}", text) for i, text in enumerate(OTHERS)}})
    key = add_key(capsys, root, "coder", "--read", "projects/", "--write", "projects/")
    proc, url = start_http(root, cwd=tmp_path, env=os.environ | {"VAULT_MEM_TOKEN": TOKEN})
    try:
        async with http_session(url, key) as coder:
            mine = await coder.call("memory_write", agent="coder", title="Payroll export", domain="projects",
                                    content=f"{HEADER}\n\n{secret}\n\n{FOOTER}")
            assert mine["status"] == "ok" and mine["similar"] == []
        async with http_session(url, TOKEN) as owner:
            seen = await owner.call("memory_write", agent="owner", title="Payroll export again", domain="projects",
                                    content=f"{HEADER}\n\n{secret}\n\n{FOOTER}")
            assert set(titles(seen)) == {"Payroll leak", "Payroll export"}, "the owner sees both"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def tidy_vault(root: Path) -> Path:
    diary(root)
    return write_notes(root, {
        "diary/Billing copy.md": note("Billing exporter copy", RESTATED, updated="2026-04-01T10:00:00+00:00"),
        "diary/Billing third.md": note("Billing exporter third", THIRD, "billing-3",
                                       updated="2026-02-01T10:00:00+00:00"),
    })


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".vault-mem" not in p.parts and ".trash" not in p.parts}


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out)
    return answer


def test_tidy_lists_clusters_with_the_newest_note_to_keep_and_changes_nothing(tmp_path, capsys) -> None:
    root = tidy_vault(tmp_path / "v")
    before = files(root)
    listed = cli_json(capsys, "tidy", "--vault", str(root))
    assert listed["applied"] is False and listed["count"] == 1
    [cluster] = listed["clusters"]
    assert cluster["keep"]["path"] == "diary/Billing copy.md", "the most recently updated note is kept"
    assert {m["path"] for m in cluster["supersede"]} == {"diary/Billing exporter.md", "diary/Billing third.md"}
    assert all(0.25 <= m["similarity"] <= 1 for m in cluster["supersede"])
    assert files(root) == before


def test_tidy_apply_then_undo_restores_every_file_byte_for_byte(tmp_path, capsys) -> None:
    root = tidy_vault(tmp_path / "v")
    before = files(root)
    applied = cli_json(capsys, "tidy", "--vault", str(root), "--apply")
    assert [c["status"] for c in applied["clusters"]] == ["ok"] and applied["warnings"] == []
    kept = (root / "diary/Billing copy.md").read_text(encoding="utf-8")
    assert "supersedes:" in kept and "billing-1" in kept and "billing-3" in kept
    assert {p: b for p, b in files(root).items() if p != "diary/Billing copy.md"} == \
        {p: b for p, b in before.items() if p != "diary/Billing copy.md"}, "nothing else is touched"
    read = cli_json(capsys, "read", "diary/Billing copy", "--vault", str(root))
    assert set(read["lineage"]["supersedes"]) == {"memory://diary/Billing exporter", "memory://diary/Billing third"}
    assert cli_json(capsys, "tidy", "--vault", str(root))["count"] == 0, "a tidied vault has nothing left"
    log = cli_json(capsys, "log", "--vault", str(root), "--agent", "tidy")
    assert [(r["kind"], r["path"]) for r in log["changes"]] == [("tidy", "diary/Billing copy.md")]
    undone = cli_json(capsys, "undo", "--vault", str(root), "--agent", "tidy", "--since", "1h", "--apply")
    assert [r["path"] for r in undone["restored"]] == ["diary/Billing copy.md"]
    assert files(root) == before


def test_tidy_leaves_a_cluster_alone_when_its_note_to_keep_changed_since_it_was_indexed(tmp_path) -> None:
    root = tidy_vault(tmp_path / "v")
    target = root / "diary/Billing copy.md"
    changed = target.read_bytes() + b"\nA person's edit.\n"
    target.write_bytes(changed)
    keep = {"path": "diary/Billing copy.md", "fsrel": "diary/Billing copy.md", "etag": "stale", "supersedes": []}
    with pytest.raises(Conflict):
        supersede_into(root, tmp_path / "index", keep, [{"uid": "billing-1", "has_id": True, "path": "x.md"}],
                       "2026-05-01T00:00:00+00:00", config=settings.current())
    assert target.read_bytes() == changed


@contextmanager
def served_with(vault: Vault, **changes: Any) -> Iterator[None]:
    """The served vault's settings changed for a while: its index's (what a call's view reads) and,
    while writes/tools.py still reads them there, the process's."""
    config = vault.index.config
    vault.index.config = dataclasses.replace(config, **changes)
    try:
        with settings.use(vault.index.config):
            yield
    finally:
        vault.index.config = config


async def test_memory_write_reads_the_similar_settings_at_the_call(tmp_path, mcp_session) -> None:
    vault = open_vault(tidy_vault(tmp_path / "v"))
    async with mcp_session(vault) as c:
        found = await c.call("memory_write", agent="coder", title="Billing exporter again", content=RESTATED,
                             domain="diary")
        assert len(found["similar"]) == 3, "by default: the three billing notes"
        with served_with(vault, similar_shown=1):
            one = await c.call("memory_write", agent="coder", title="Billing exporter once more", content=RESTATED,
                               domain="diary")
        assert len(one["similar"]) == 1
        with served_with(vault, similar_threshold=0.999):
            strict = await c.call("memory_write", agent="coder", title="Billing exporter last", content=RESTATED,
                                  domain="diary")
        assert strict["status"] == "ok" and strict["similar"] == []


def test_tidy_reads_the_similar_and_tidy_settings_at_the_call(tmp_path) -> None:
    from vault_mem.reads.tidy import clusters
    from vault_mem.served.context import view_of

    vault = open_vault(tidy_vault(tmp_path / "v"))

    def tidied() -> list[Any]:
        with view_of(vault) as view:  # a call's view takes the index's settings as they are then
            return clusters(view.fresh)

    [cluster] = tidied()
    assert len(cluster.others) == 2
    config = vault.index.config
    vault.index.config = dataclasses.replace(config, similar_threshold=0.999)
    assert tidied() == []
    vault.index.config = dataclasses.replace(config, tidy_view_notes=1, tidy_view_clusters=1)
    assert tidied() == [cluster], "a fresh view every note finds the same"


PLAN = ("The staging cluster runs 6 nodes of e2-standard-8 in europe-west4 and the autoscaler may reach 12 nodes. "
        "Dana Whitfield approved its budget on 2026-02-02.")
PLAN_COPY = ("Approved by Dana Whitfield on 2026-02-02: the staging cluster, 6 e2-standard-8 nodes in europe-west4, "
             "with the autoscaler allowed to reach 12 nodes.")


async def test_an_agents_near_copy_never_replaces_a_persons_note_it_may_not_write(tmp_path, capsys) -> None:
    """The attack of issue 54: refused the supersede of a person's note, an agent writes a near copy
    in its own folder; the owner's `tidy --apply` must not then supersede the person's note by it."""
    root = write_notes(tmp_path / "v", {
        "people/Staging cluster.md": note("Staging cluster", PLAN, "staging-plan"),
        **{f"people/Other {i}.md": note(f"Other {i}", text) for i, text in enumerate(OTHERS)}})
    key = add_key(capsys, root, "research", "--write", "research/")
    proc, url = start_http(root, cwd=tmp_path, env=os.environ | {"VAULT_MEM_TOKEN": TOKEN})
    try:
        async with http_session(url, key) as agent:
            refused = await agent.call("memory_supersede", agent="research", ref="staging-plan",
                                       title="Staging cluster v2", content=PLAN_COPY, domain="research")
            assert refused["status"] == "forbidden", refused
            copy = await agent.call("memory_write", agent="research", title="Staging cluster notes",
                                    content=f"{HEADER}\n\n{PLAN_COPY}\n\n{FOOTER}", domain="research")
            assert copy["status"] == "ok"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    person = root / "people/Staging cluster.md"
    at = ("--vault", str(root), "--index-dir", str(tmp_path / "ix"))  # the server's index and history
    [cluster] = cli_json(capsys, "tidy", *at)["clusters"]
    assert (cluster["keep"]["path"], cluster["keep"]["by"]) == ("people/Staging cluster.md", []), \
        "the newest note is the agent's copy, but research may not write people/: the person's note is kept"
    assert [(m["path"], m["by"]) for m in cluster["supersede"]] == [(copy["path"], ["research"])]
    printed = main(["tidy", *at])
    shown = capsys.readouterr().out
    assert printed == 0 and "by a person" in shown and "by research" in shown
    # Applied without asking: the person's note stays current, and the copy is what is folded away.
    applied = cli_json(capsys, "tidy", *at, "--apply")
    assert [c["status"] for c in applied["clusters"]] == ["ok"]
    assert "supersedes" not in (root / copy["path"]).read_text(encoding="utf-8")
    read = cli_json(capsys, "read", "people/Staging cluster", *at)
    assert read["lineage"]["supersedes"] == [f"memory://{copy['path'][:-3]}"]
    # Only a person's explicit choice keeps the agent's copy.
    cli_json(capsys, "undo", *at, "--agent", "tidy", "--since", "1h", "--apply")
    picked = cli_json(capsys, "tidy", *at, "--keep", copy["path"], "--apply")
    assert [(c["keep"]["path"], c.get("picked"), c["status"]) for c in picked["clusters"]] == \
        [(copy["path"], True, "ok")]
    assert "staging-plan" in (root / copy["path"]).read_text(encoding="utf-8")
    assert person.exists()


def test_a_cluster_only_agents_wrote_each_outside_the_others_globs_is_held(tmp_path, capsys) -> None:
    """Two agents, each limited to its own folder, wrote the same fact: neither copy may replace the
    other, so --apply leaves the cluster alone and says why; --keep picks one."""
    from vault_mem.history import journal, location
    from vault_mem.search.api import usable_index_dir

    root = write_notes(tmp_path / "v", {
        "alpha/Billing.md": note("Billing exporter batches", FACT, "billing-a", updated="2026-03-01T10:00:00+00:00"),
        "beta/Billing.md": note("Billing exporter again", RESTATED, "billing-b", updated="2026-03-02T10:00:00+00:00"),
        **{f"alpha/Other {i}.md": note(f"Other {i}", text) for i, text in enumerate(OTHERS)}})
    add_key(capsys, root, "alpha", "--write", "alpha/")
    add_key(capsys, root, "beta", "--write", "beta/")
    assert main(["index", "--vault", str(root)]) == 0
    history = location.history_dir(usable_index_dir(root, None))
    for agent, rel in (("alpha", "alpha/Billing.md"), ("beta", "beta/Billing.md")):
        data = (root / rel).read_bytes()
        assert journal.record(history, agent, "memory_write",
                              [{"path": rel, "title": "Billing", "uid": "", "before": None, "after": data}],
                                  config=settings.current()) is None
    before = files(root)
    applied = cli_json(capsys, "tidy", "--vault", str(root), "--apply")
    [cluster] = applied["clusters"]
    assert cluster["status"] == "held"
    assert "agent 'beta'" in cluster["message"] and "alpha/Billing.md" in cluster["message"]
    assert files(root) == before, "a held cluster is left alone"
    picked = cli_json(capsys, "tidy", "--vault", str(root), "--keep", "beta/Billing", "--apply")
    assert [(c["keep"]["path"], c["status"]) for c in picked["clusters"]] == [("beta/Billing.md", "ok")]


def test_a_copy_by_an_agent_whose_key_was_removed_never_replaces_a_persons_note(tmp_path, capsys) -> None:
    """Security fails closed: in a vault with keys, a journal name that has no key any more (its
    key removed after it wrote) may write nothing, so its newer copy does not replace the person's
    note; a person's --keep still can."""
    from vault_mem.history import journal, location
    from vault_mem.search.api import usable_index_dir

    root = write_notes(tmp_path / "v", {
        "people/Billing.md": note("Billing exporter batches", FACT, "billing-p", updated="2026-03-01T10:00:00+00:00"),
        "research/Billing.md": note("Billing exporter again", RESTATED, "billing-r",
                                    updated="2026-03-02T10:00:00+00:00"),
        **{f"people/Other {i}.md": note(f"Other {i}", text) for i, text in enumerate(OTHERS)}})
    add_key(capsys, root, "research", "--write", "research/")
    add_key(capsys, root, "planner", "--write", "plans/")
    assert main(["index", "--vault", str(root)]) == 0
    history = location.history_dir(usable_index_dir(root, None))
    data = (root / "research/Billing.md").read_bytes()
    assert journal.record(history, "research", "memory_write", [{"path": "research/Billing.md", "title": "Billing",
                                                                 "uid": "", "before": None, "after": data}],
                                                                     config=settings.current()) is None
    assert main(["agents", "remove", "research", "--vault", str(root)]) == 0
    capsys.readouterr()
    [cluster] = cli_json(capsys, "tidy", "--vault", str(root))["clusters"]
    assert cluster["keep"]["path"] == "people/Billing.md", cluster
    applied = cli_json(capsys, "tidy", "--vault", str(root), "--apply")
    assert [c["status"] for c in applied["clusters"]] == ["ok"]
    assert "supersedes" not in (root / "research/Billing.md").read_text(encoding="utf-8")
    assert "billing-r" in (root / "people/Billing.md").read_text(encoding="utf-8")
