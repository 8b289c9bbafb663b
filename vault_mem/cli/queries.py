"""The query commands for people: ``search``, ``list``, ``recall``, ``read`` and ``domains``.

Each passes its options to one query module (the same code the MCP tools run) and prints
the answer as rows that fit the terminal, or as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from vault_mem.cli.app import Command, register
from vault_mem.cli.common import for_people, print_answer, print_hints, run_query
from vault_mem.cli.meaning import add_meaning_option
from vault_mem.cli.output import ROOT_LABEL, cut, domain_label, plural, table, visible, width
from vault_mem.vault.fields import FIELDS

DATES = "YYYY, YYYY-MM, YYYY-MM-DD or an ISO datetime"


def _folder(permalink: str) -> str:
    return domain_label(permalink.removeprefix("memory://").rpartition("/")[0])


def _name(title: str, permalink: str) -> str:
    """The title, with the file name when the title does not start with it (what ``read`` takes)."""
    stem = permalink.rpartition("/")[2]
    return title if _letters(title).startswith(_letters(stem)) else f"{title} ({stem})"


def _letters(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _footer(text: str) -> None:
    print(visible(text), file=sys.stderr)


# -- search -------------------------------------------------------------------------------


def search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="*", metavar="WORD",
                        help="words to find (substrings of title, path, tags and text); none: the newest notes")
    parser.add_argument("--kind", default=None, metavar="TYPE",
                        help="only notes of this type (note, fact, decision, task... or any type in the vault)")
    parser.add_argument("--tag", default=None, metavar="TAG", help="only notes with this tag (a/b counts as a)")
    parser.add_argument("--limit", default=None, metavar="1..50", help="how many notes to show (default 10)")
    parser.add_argument("--follow", default=None, metavar="MODE",
                        help="active (default: older versions fold into the current one's row), latest, "
                             "full_history or all")
    parser.add_argument("--as-of", dest="as_of", default=None, metavar="DATE",
                        help=f"only the versions current then: {DATES}")
    add_meaning_option(parser)


def cmd_search(args: argparse.Namespace) -> int:
    raw = {"agent": "cli", "query": " ".join(args.query) or None, "kind": args.kind, "tag": args.tag,
           "limit": args.limit, "follow": args.follow, "as_of": args.as_of}
    answer = run_query(args, "memory_search", raw)

    def human(a: dict[str, Any]) -> None:
        notes = a.get("notes", [])
        rows = [("meaning" if n.get("found_by") == "meaning" else str(n["score"]), n["updated_at"][:10],
                 _name(n["title"], n["permalink"]), _folder(n["permalink"])) for n in notes]
        lines = table(["score", "updated", "note", "folder"], rows, right=[0], flexible=[2, 3])
        room = width() - 7
        if notes:
            print(lines[0])
            for line, note in zip(lines[1:], notes, strict=True):
                print(line)
                if note.get("older_count"):
                    print("       " + cut(f"also {note['older_count']} older versions: "
                                          + ", ".join(o.rpartition("/")[2] for o in note["older"]), room))
                if note.get("superseded_by"):
                    print("       " + cut("superseded by " + ", ".join(o.rpartition("/")[2]
                                                                         for o in note["superseded_by"]), room))
                    print("       " + cut(note["excerpt"].strip(". "), room))
        shown = plural(a.get("count", 0), "note")
        if a.get("truncated"):
            shown += "; more matched: raise --limit (up to 50)"
        _footer(shown if notes else "no note matches")
        if a.get("message"):
            _footer(for_people(a["message"]))
        print_hints(a)

    return print_answer(args, answer, human)


register(Command(
    name="search",
    summary="find notes by words, type or tag, best match first",
    description="Find notes whose title, path, tags or text hold the words (as substrings, or by their "
                "English stem: 'supported' finds 'support'), best match first; rare words weigh more. "
                "With no words: the most recently updated notes. The same search as the memory_search "
                "tool.",
    examples=("vault-mem search --vault ~/notes queue decision", "vault-mem search --vault ~/notes --kind task",
              "vault-mem search --vault ~/notes postgres --tag databases --limit 20 --json"),
    run=cmd_search, add_options=search_options,
))


# -- list ---------------------------------------------------------------------------------


def list_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("domain", metavar="DOMAIN",
                        help=f"a folder path (acme/x100), a folder name found anywhere (p200), or {ROOT_LABEL} "
                             "for the whole vault")
    parser.add_argument("--type", default=None, metavar="TYPE", help="only notes of this type")
    parser.add_argument("--status", default=None, metavar="STATUS",
                        help="active (default), archived or all")
    parser.add_argument("--here", action="store_true",
                        help="only notes filed in the folder itself, not in its subfolders")
    parser.add_argument("--limit", default=None, metavar="1..200", help="how many notes to show (default 20)")
    parser.add_argument("--offset", default=None, metavar="N",
                        help="skip the first N notes (the footer says where the next page starts)")
    parser.add_argument("--as-of", dest="as_of", default=None, metavar="DATE",
                        help=f"only the versions current then: {DATES}")


def cmd_list(args: argparse.Namespace) -> int:
    domain = "" if args.domain.strip() == ROOT_LABEL else args.domain
    raw = {"domain": domain, "type": args.type, "status": args.status, "limit": args.limit,
           "offset": args.offset, "subtree": False if args.here else None, "as_of": args.as_of}
    answer = run_query(args, "list_by_domain", raw)
    if answer.get("status") == "none":
        answer["message"] = answer.get("message") or f"no memories under domain {args.domain!r}"
        if args.status is None:
            answer["message"] += "; --status all includes archived ones"

    def human(a: dict[str, Any]) -> None:
        results = a.get("results", [])
        rows = []
        for row in results:
            task = f"{row['state']} {row['progress']['done']}/{row['progress']['total']}" if "state" in row else ""
            rows.append((row["updated"][:10], row["type"] + (f" ({task})" if task else ""),
                         _name(row["title"], row["permalink"]), domain_label(row["domain"])))
        print("\n".join(table(["updated", "type", "note", "folder"], rows, flexible=[2, 3, 1])))
        more = f"; the next page: --offset {a['next_offset']}" if "next_offset" in a else ""
        covered = ", ".join(domain_label(d) for d in a.get("domains", []))
        _footer(f"{plural(len(results), 'memory', 'memories')} in {covered}{more}")

    return print_answer(args, answer, human, none_fails=True)


register(Command(
    name="list",
    summary="the notes of a folder and its subfolders, newest first",
    description="List the memories filed in a folder and its subfolders, newest update first. The domain "
                "is a path from the vault's top (acme/x100, any case), else a folder name found anywhere "
                f"(p200 finds acme/x100/p200 and acme/x200/p200); {ROOT_LABEL} is the whole vault. Exits "
                "1 when the domain holds no memories.",
    examples=("vault-mem list --vault ~/notes acme/x100", "vault-mem list --vault ~/notes p200 --type decision",
              f"vault-mem list --vault ~/notes '{ROOT_LABEL}' --status archived --limit 50"),
    run=cmd_list, add_options=list_options,
))


# -- recall -------------------------------------------------------------------------------


def recall_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", default=None, metavar="DATE",
                        help=f"created at or after: {DATES}; a partial date starts its period")
    parser.add_argument("--until", default=None, metavar="DATE",
                        help=f"created before: {DATES}; a partial date ends after its period "
                             "(--until 2025-03 includes March)")
    parser.add_argument("--source", dest="source_filter", default=None, metavar="TEXT",
                        help="only files whose path holds TEXT, or matches it as a glob (with * ? [)")
    parser.add_argument("--tags", dest="tag_filter", default=None, metavar="A,B",
                        help="only notes with any of these tags (comma list)")
    parser.add_argument("--namespace", default=None, metavar="NAME",
                        help="a namespace, a comma list or one glob (default: all but archive:*)")
    parser.add_argument("--scope", default=None, metavar="SCOPE",
                        help="user, project_shared or project_local, a comma list or a glob (default: user, "
                             "plus --project's tiers)")
    parser.add_argument("--project", default=None, metavar="NAME",
                        help="include this project's project_shared and project_local memories by default")
    parser.add_argument("--limit", default=None, metavar="1..500", help="how many chunks to show (default 20)")
    parser.add_argument("--offset", default=None, metavar="N", help="skip the first N chunks")


def cmd_recall(args: argparse.Namespace) -> int:
    raw = {"since": args.since, "until": args.until, "source_filter": args.source_filter,
           "tag_filter": args.tag_filter, "namespace": args.namespace, "scope": args.scope, "limit": args.limit,
           "offset": args.offset, "output_format": "structured" if args.json else "compact"}
    answer = run_query(args, "mem_recall", raw)

    def human(a: dict[str, Any]) -> None:
        if a.get("text"):
            print(visible(for_people_text(a["text"]), lines=True))
        print_hints(a)
        more = f"; the next page: --offset {a['next_offset']}" if "next_offset" in a else ""
        _footer(f"{plural(a.get('count', 0), 'chunk')}{more}")

    return print_answer(args, answer, human)


def for_people_text(text: str) -> str:
    return text.replace("see memory_read]", "see vault-mem read]")


register(Command(
    name="recall",
    summary="what was written in a period, as sections, newest first",
    description="Recall the memories created in a period, as chunks (the sections under each heading), "
                "newest first. A note's creation date is its frontmatter's created (or date), else a "
                "YYYY-MM-DD date in its file name (daily notes), else the file's time.",
    examples=("vault-mem recall --vault ~/notes --since 2025-03", "vault-mem recall --vault ~/notes --since 2025-01 "
              "--until 2025-03 --tags meeting", "vault-mem recall --vault ~/notes --source 'Daily/*' --json"),
    run=cmd_recall, add_options=recall_options,
))


# -- read ---------------------------------------------------------------------------------


def read_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ref", metavar="REF",
                        help="the note: its id, permalink, path, file name, title or alias (quote spaces)")
    parser.add_argument("--offset", default=None, metavar="N",
                        help="start the body at character N (a long body comes in pages)")


def cmd_read(args: argparse.Namespace) -> int:
    answer = run_query(args, "memory_read", {"ref": args.ref, "offset": args.offset})
    return print_answer(args, answer, print_record)


# The field table's rows that print_record lays out itself; any other row gets a line of its own.
_SHOWN_ABOVE = frozenset(("title", "uid", "type", "status", "state", "progress", "created", "updated", "tags",
                          "aliases", "namespace", "scope", "project", "importance", "agent", "paths", "supersedes",
                          "superseded_by", "metadata"))


def print_record(a: dict[str, Any]) -> None:
    room = width()
    rule = "─" * min(room, 80)
    fields: list[tuple[str, str]] = [
        ("permalink", a["permalink"]), ("id", a["uid"]), ("type", a.get("type", "")),
        ("status", a.get("memory_status", "") + (f", {a['state']}" if a.get("state") else "")),
        ("created", a.get("created", "")[:10]), ("updated", a.get("updated", "")[:10]),
    ]
    if a.get("tags"):
        fields.append(("tags", ", ".join(a["tags"])))
    if a.get("aliases"):
        fields.append(("aliases", ", ".join(a["aliases"])))
    place = [f"{k} {a[k]}" for k in ("namespace", "scope", "project") if a.get(k)]
    fields.append(("filed", " · ".join(place)))
    for key in ("importance", "agent"):
        if a.get(key) not in (None, 0.5):
            fields.append((key, str(a[key])))
    if a.get("paths"):
        fields.append(("paths", ", ".join(a["paths"])))
    lineage = a.get("lineage") or {}
    for key, label in (("supersedes", "supersedes"), ("superseded_by", "superseded by"), ("latest", "latest")):
        if lineage.get(key) and not (key == "latest" and lineage[key] == [a["permalink"]]):
            fields.append((label, ", ".join(lineage[key])))
    for row in FIELDS:  # a field of the table shown in no line above
        value = a.get(row.name)
        if row.name not in _SHOWN_ABOVE and value not in (None, "", [], {}):
            fields.append((row.name, ", ".join(map(str, value)) if isinstance(value, list) else str(value)))
    for key, value in (a.get("metadata") or {}).items():
        fields.append((str(key), str(value)))
    print(visible(_name(a["title"], a["permalink"])))
    for key, value in fields:
        print(f"  {visible(key):<13} {cut(value, room - 16)}")
    print(rule)
    print(visible(a.get("body", "").rstrip("\n"), lines=True))
    if "next_offset" in a:
        print(visible(f"[… the body goes on: vault-mem read {a['permalink']!r} --offset {a['next_offset']}]"))
    print(rule)
    links = a.get("links", [])
    print(f"links ({len(links)})" if links else "links: none")
    for link in links:
        target = link.get("permalink") if link.get("resolved") else "(resolves to no note)"
        print("  " + cut(f"[[{link['target']}]] → {target}", room - 2))
    backlinks = a.get("backlinks", [])
    print(f"backlinks ({len(backlinks)})" if backlinks else "backlinks: none")
    for permalink in backlinks:
        print("  " + cut(permalink, room - 2))
    problems = a.get("problems", [])
    print(f"problems ({len(problems)})" if problems else "problems: none")
    for problem in problems:
        print("  - " + cut(problem, room - 4))


register(Command(
    name="read",
    summary="one note in full: fields, text, links, backlinks, problems",
    description="Read one note: its fields, its text, the links it makes (and where they lead), the notes "
                "that link to it, and any problem found reading it. The note is found by id, permalink, "
                "path, file name, title or alias, in that order. Exits 1 when no note (or more than one) "
                "matches.",
    examples=("vault-mem read --vault ~/notes 'Queue decision v2'", "vault-mem read --vault ~/notes "
              "'memory://acme/x100/p200/Queue decision v2' --json"),
    run=cmd_read, add_options=read_options,
))


# -- domains ------------------------------------------------------------------------------


def cmd_domains(args: argparse.Namespace) -> int:
    answer = run_query(args, "list_domains", {})
    while answer.get("status") == "ok" and "next_offset" in answer:  # a person wants them all
        page = run_query(args, "list_domains", {"offset": answer.pop("next_offset")})
        answer["domains"] += page.get("domains", [])
        if "next_offset" in page:
            answer["next_offset"] = page["next_offset"]

    def human(a: dict[str, Any]) -> None:
        rows = [(f"{d['active']:,}", f"{d['archived']:,}", d["updated"][:10], domain_label(d["domain"]))
                for d in a.get("domains", [])]
        print("\n".join(table(["active", "archived", "updated", "domain"], rows, right=[0, 1], flexible=[3])))
        _footer(f"{plural(len(rows), 'domain')} (each counts its subfolders; {ROOT_LABEL} is the whole vault)")

    return print_answer(args, answer, human)


register(Command(
    name="domains",
    summary="every folder with its active and archived notes",
    description="List every folder that holds notes, with its active and archived notes (its subfolders "
                f"included) and its newest update; {ROOT_LABEL} is the whole vault. A domain is what "
                "'vault-mem list' takes.",
    examples=("vault-mem domains --vault ~/notes", "vault-mem domains --vault ~/notes --json"),
    run=cmd_domains,
))
