"""``vault-mem log``, ``vault-mem undo`` and ``vault-mem inbox``: what agents did to the vault,
putting it back, and what waits for an agent (writes/undo.py, served/mailbox.py;
docs/sharing.md). This only parses and prints."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import open_index, print_json, say, up_to_date
from vault_mem.cli.output import plural, table
from vault_mem.errors import InvalidInput


def _when(text: str | None, option: str = "--since") -> dt.datetime | None:
    from vault_mem.vault.dates import WHEN_FORMS, parse_when

    if text is None:
        return None
    moment = parse_when(text)
    if moment is None:
        raise InvalidInput(option, f"{text[:80]!r} is not a moment: give {WHEN_FORMS}")
    return moment


def _agent(name: str | None, option: str) -> str | None:
    from vault_mem.served.agents import check_agent_name

    return None if name is None else check_agent_name(name.strip(), option)


# -- log ----------------------------------------------------------------------------------

def log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME", help="only this agent's changes (any case)")
    parser.add_argument("--since", metavar="WHEN", help="only changes at or after WHEN: a date (2026-05-01), a "
                        "datetime (2026-05-01T14:30, UTC unless it has an offset) or a duration back (2h, 3d)")


def cmd_log(args: argparse.Namespace) -> int:
    from vault_mem.writes.undo import dropped, log

    agent, since = _agent(args.agent, "--agent"), _when(args.since)
    index = open_index(args, doing="read its journal")
    rows, gone = log(index, agent, since), dropped(index, agent, since)
    if args.json:
        print_json({"status": "ok", "count": len(rows), "changes": rows, "dropped": gone})
        return 0
    _say_dropped(gone)
    if not rows:
        days = settings.current().journal_max_age_days
        say("no changes by write tools " + (f"of agent {agent} " if agent else "")
            + (f"since {args.since} " if since else "") + f"in the journal (it keeps {days} days)")
        return 0
    lines = table(("time", "agent", "change", "note"),
                  [(r["time"].replace("+00:00", "Z"), r["agent"], r["kind"],
                    r["path"] + (f" -> {r['trash']}" if r.get("trash") else "")) for r in rows], flexible=(3,))
    print("\n".join(lines))
    return 0


def _say_dropped(gone: list[dict[str, Any]]) -> None:
    for item in gone:
        say(f"history dropped: {plural(item['changes'], 'older change')} of agent {item['agent']}, up to "
            f"{item['until'].replace('+00:00', 'Z')} ({item['why']}); neither log nor undo reaches them")


register(Command(
    name="log",
    summary="what the write tools changed, by which agent, newest first",
    description="List every change the write tools made (write, edit, supersede, close, delete) and every "
                "undo, newest first, with the agent, the note and the time, from the journal kept in the "
                "history folder beside the index (30 days at most, and a share per agent; see docs/sharing.md). "
                "When the journal had to drop an agent's older changes, it says so first. "
                f"{PROG} undo puts an agent's changes back.",
    examples=("vault-mem log --vault ~/notes", "vault-mem log --vault ~/notes --agent coder --since 2h",
              "vault-mem log --vault ~/notes --since 2026-05-01 --json"),
    run=cmd_log, add_options=log_options,
))


# -- undo ---------------------------------------------------------------------------------

def undo_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME", required=True, help="the agent whose changes to undo")
    parser.add_argument("--since", metavar="WHEN", required=True,
                        help="undo its changes at or after WHEN (a date, a datetime or a duration back: 2h, 3d)")
    parser.add_argument("--apply", action="store_true", help="do it (without: only show what would be done)")
    parser.add_argument("--git-commit", action="store_true", help="with --apply, in a git vault: make the undo "
                        "one commit")


def cmd_undo(args: argparse.Namespace) -> int:
    from vault_mem.writes.undo import apply, dropped, plan

    agent = _agent(args.agent, "--agent")
    since = _when(args.since)
    assert agent is not None and since is not None
    if args.git_commit and not args.apply:
        raise InvalidInput("--git-commit", "only with --apply: without it nothing is changed, so nothing to commit")
    index = open_index(args, doing="undo in it")
    steps = plan(index, agent, since)
    todo = [s for s in steps if s.action not in ("leave", "refuse")]
    left = [s.public() for s in steps if s.action == "leave"]
    answer: dict[str, Any] = {"status": "ok", "agent": agent, "since": since.isoformat(), "applied": args.apply,
                              "refused": [s.public() for s in steps if s.action == "refuse"],
                              "dropped": dropped(index, agent, since)}
    if args.apply:
        result = apply(index, todo, agent, since, git_commit=args.git_commit)
        answer |= {"restored": result["done"], "left": left + result["failed"], "warnings": result["warnings"],
                   "folders_removed": result["folders_removed"]}
        if result["commit"]:
            answer["commit"] = result["commit"]
    else:
        answer |= {"would_restore": [s.public() for s in todo], "left": left}
    if args.json:
        print_json(answer)
        return 0
    _print_undo(answer, agent, args.since)
    return 0


def _print_undo(answer: dict[str, Any], agent: str, since: str) -> None:
    done = answer.get("restored", answer.get("would_restore", []))
    left, refused = answer["left"], answer["refused"]
    _say_dropped(answer["dropped"])
    if not done and not left and not refused:
        say(f"agent {agent} changed no note since {since} (as far as the journal goes back)")
        return
    verb = "put back" if answer["applied"] else "would put back"
    rows = [(s["action"], s["path"], s["reason"]) for s in done] + [("left", s["path"], s["reason"]) for s in left]
    rows += [("refused", s["path"], s["reason"]) for s in refused]
    print("\n".join(table(("action", "note", "why"), rows, flexible=(2, 1))))
    say(f"{verb} {plural(len(done), 'note')}, left {plural(len(left), 'note')} alone"
        + (f", refused {plural(len(refused), 'path')} the journal names" if refused else "")
        + ("" if answer["applied"] or not done else "; run again with --apply to do it"))
    if answer.get("folders_removed"):
        say("removed the emptied folders the undone changes had made: "
            + ", ".join(f + "/" for f in answer["folders_removed"]))
    for warning in answer.get("warnings", []):
        say(warning)


register(Command(
    name="undo",
    summary="put back the notes an agent changed since a moment",
    description="Show how each note the agent changed since WHEN would be put back, byte for byte, as it was "
                "before the agent's first change in that window; with --apply, do it: an edited or closed note "
                "gets its earlier content, a deleted note comes back from .trash/, a note the agent wrote (or "
                "superseded with) goes to .trash/. A note someone else changed after the agent is listed and "
                "left alone; a path no write tool may touch (outside the vault, in a hidden folder, not a .md "
                "note) is listed as refused and never touched. Works with and without git, from the journal "
                "kept in the history folder beside the index (docs/sharing.md).",
    examples=("vault-mem undo --vault ~/notes --agent coder --since 2h",
              "vault-mem undo --vault ~/notes --agent coder --since 2026-05-01T09:00 --apply --git-commit"),
    run=cmd_undo, add_options=undo_options,
))


# -- inbox --------------------------------------------------------------------------------

def inbox_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the agent's name")


def cmd_inbox(args: argparse.Namespace) -> int:
    from vault_mem.served.context import Vault, view_of
    from vault_mem.served.mailbox import digest, inbox

    agent = _agent(args.name, "NAME")
    assert agent is not None
    index = up_to_date(args)
    with view_of(Vault(index.root, index)) as view:
        rows = [digest(view, doc) for doc in inbox(view, agent)]
    if args.json:
        print_json({"status": "ok", "agent": agent, "count": len(rows), "inbox": rows})
        return 0
    if not rows:
        say(f"nothing waits for agent {agent}: no note addressed to it (to: {agent}) is unread, open and active")
        return 0
    print("\n".join(table(("updated", "from", "note"),
                          [(r["updated"][:16].replace("T", " "), r.get("from") or "-", r["permalink"]) for r in rows],
                          flexible=(2,))))
    return 0


register(Command(
    name="inbox",
    summary="the notes addressed to an agent that it has not read yet",
    description="List the notes addressed to an agent (to: NAME, or a list) that it has not read with "
                "memory_read and that are neither archived nor closed, newest first: what its memory_search "
                "answers carry as inbox. Only shows; nothing is marked read.",
    examples=("vault-mem inbox reviewer --vault ~/notes", "vault-mem inbox coder --vault ~/notes --json"),
    run=cmd_inbox, add_options=inbox_options,
))
