"""Realistic samples of each import format, generated (seeded) rather than committed.

The shapes follow what each project publishes: the reference MCP memory server's
``memory.jsonl`` (``{"type": "entity", "name", "entityType", "observations"}`` and
``{"type": "relation", "from", "to", "relationType"}`` lines, as its ``saveGraph`` writes them),
mem0's ``get_all`` answer (``{"results": [{id, memory, hash, metadata, categories, created_at,
updated_at, user_id}]}``) and OpenMemory's ``memories.json`` (``content``, ``state``,
``app_name``), ChatGPT's ``conversations.json`` (a ``mapping`` tree of nodes with ``parent`` and
``children``, ``current_node`` at the leaf of the branch shown, a hidden system root, POSIX
``create_time``) and Claude.ai's ``conversations.json`` (``uuid``, ``name``, ``chat_messages``
with ``sender`` human/assistant, ``text`` and ``content`` blocks). The words are made up here.

Each generator returns ``Sample(path, good, bad)``: how many records should become notes and
how many entries are malformed (each should be reported as skipped).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEOPLE = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov",
          "Donald Knuth", "Margaret Hamilton", "Ken Thompson", "Radia Perlman", "John Backus"]
THINGS = ["PostgreSQL", "the build server", "the Berlin office", "Project Falcon", "the billing service",
          "Kubernetes", "the mobile app", "the quarterly review", "the design system", "the data lake"]
VERBS = ["prefers", "maintains", "dislikes", "migrated", "reviews", "owns", "documented", "benchmarked"]
TOPICS = ["Python packaging", "a sourdough starter", "Rust lifetimes", "tax deadlines", "a trip to Lisbon",
          "SQL window functions", "a job interview", "garden irrigation", "Whoosh scoring", "MCP servers"]


@dataclass
class Sample:
    path: Path
    good: int
    bad: int


def _sentence(rng: random.Random, n: int) -> str:
    return f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} (fact {n})."


def mcp_memory(folder: Path, entities: int = 300, seed: int = 1) -> Sample:
    rng = random.Random(seed)
    names = [f"{rng.choice(PEOPLE).split()[0]}_{n:03d}" for n in range(entities)]
    lines: list[str] = []
    for n, name in enumerate(names):
        kind = rng.choice(["person", "organization", "event", "fact", "Decision", "project"])
        observations = [_sentence(rng, n * 10 + k) for k in range(rng.randint(0, 4))]
        lines.append(json.dumps({"type": "entity", "name": name, "entityType": kind, "observations": observations}))
    for _ in range(entities):
        source, target = rng.sample(names, 2)
        lines.append(json.dumps({"type": "relation", "from": source, "to": target,
                                 "relationType": rng.choice(["works_with", "reports_to", "knows"])}))
    bad = [
        lines[5][: len(lines[5]) // 2],  # a write cut short
        lines[6] + lines[7][:10],  # two writes interleaved on one line
        "[1, 2, 3]",
        json.dumps({"type": "entity", "entityType": "person", "observations": []}),  # no name
        json.dumps({"type": "relation", "from": names[0], "relationType": "knows"}),  # no 'to'
        json.dumps({"type": "note", "name": "x"}),
    ]
    for k, line in enumerate(bad):
        lines.insert(40 + 37 * k, line)
    # the same entity again, as the reference server appends it: merged into its note, not skipped
    lines.insert(40 + 37 * len(bad), json.dumps({"type": "entity", "name": names[3], "entityType": "person",
                                                 "observations": []}))
    path = folder / "memory.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Sample(path, entities, len(bad))


def _mem0_item(rng: random.Random, n: int, openmemory: bool) -> dict[str, Any]:
    created = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:15:36.630547-07:00"
    item: dict[str, Any] = {"id": str(uuid.UUID(int=rng.getrandbits(128))), "created_at": created,
                            "updated_at": created if rng.random() < 0.7 else None,
                            "categories": rng.sample(["work", "preferences", "health", "travel", "food"], 2)}
    text = f"User {rng.choice(VERBS)} {rng.choice(THINGS)}; noted while talking about {rng.choice(TOPICS)} ({n})"
    if openmemory:
        item |= {"content": text, "state": "active", "app_name": rng.choice(["cursor", "claude"]),
                 "metadata_": {}}
    else:
        item |= {"memory": text, "hash": f"{rng.getrandbits(128):032x}", "user_id": "alex",
                 "metadata": {"source": "chat"} if rng.random() < 0.5 else None}
    return item


def mem0(folder: Path, memories: int = 300, seed: int = 2, openmemory: bool = False) -> Sample:
    rng = random.Random(seed)
    items: list[Any] = [_mem0_item(rng, n, openmemory) for n in range(memories)]
    bad = ["just a string", {"memory": "no id here"}, {"id": "m-empty", "memory": "  "},
           {"id": "m-gone", "memory": "deleted one", "state": "deleted"}]
    for k, item in enumerate(bad):
        items.insert(20 + 50 * k, item)
    path = folder / "memories.json"
    path.write_text(json.dumps({"memories" if openmemory else "results": items}, indent=1), encoding="utf-8")
    return Sample(path, memories, len(bad))


def _node(node_id: str, parent: str | None, role: str | None, text: Any, when: float,
          content_type: str = "text", hidden: bool = False) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {"id": node_id, "author": {"role": role, "name": None, "metadata": {}}, "create_time": when,
                   "update_time": None, "content": {"content_type": content_type, "parts": text},
                   "status": "finished_successfully", "end_turn": True, "weight": 1.0,
                   "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
                   "recipient": "all"}
    return {"id": node_id, "message": message, "parent": parent, "children": []}


def chatgpt_conversation(rng: random.Random, n: int) -> dict[str, Any]:
    start = 1_700_000_000 + rng.randint(0, 30_000_000)
    mapping: dict[str, dict[str, Any]] = {}

    def add(node: dict[str, Any]) -> str:
        mapping[node["id"]] = node
        if node["parent"]:
            mapping[node["parent"]]["children"].append(node["id"])
        return str(node["id"])

    last = add(_node(f"root-{n}", None, None, None, start))
    last = add(_node(f"sys-{n}", last, "system", [""], start, hidden=True))
    topic = rng.choice(TOPICS)
    for turn in range(rng.randint(1, 4)):
        last = add(_node(f"u{turn}-{n}", last, "user", [f"Question {turn} about {topic}?"], start + turn * 60))
        if rng.random() < 0.3:  # a regenerated answer: the first one is off the current branch
            add(_node(f"old{turn}-{n}", last, "assistant", [f"DISCARDED draft on {topic}"], start + turn * 60 + 5))
        if rng.random() < 0.2:
            last = add(_node(f"code{turn}-{n}", last, "assistant", ["print('x')"], start + turn * 60 + 7, "code"))
            last = add(_node(f"tool{turn}-{n}", last, "tool", ["x"], start + turn * 60 + 8, "execution_output"))
        parts: list[Any] = [f"Answer {turn}: about {topic}, consider {rng.choice(THINGS)}."]
        if rng.random() < 0.2:
            parts.insert(0, {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"})
        last = add(_node(f"a{turn}-{n}", last, "assistant", parts, start + turn * 60 + 10,
                         "multimodal_text" if len(parts) > 1 else "text"))
    conv_id = str(uuid.UUID(int=rng.getrandbits(128)))
    return {"title": rng.choice([f"{topic.capitalize()} help", "New chat"]), "create_time": start + 0.25,
            "update_time": start + 900.5, "mapping": mapping, "moderation_results": [], "current_node": last,
            "plugin_ids": None, "conversation_id": conv_id, "id": conv_id, "default_model_slug": "gpt-4o",
            "is_archived": False, "safe_urls": []}


def chatgpt(folder: Path, conversations: int = 200, seed: int = 3) -> Sample:
    rng = random.Random(seed)
    items: list[Any] = [chatgpt_conversation(rng, n) for n in range(conversations)]
    bad = [{"title": "no id", "mapping": {}}, {"id": "c-nomap", "title": "no mapping"},
           {"id": "c-empty", "title": "only a root", "mapping": {"r": _node("r", None, None, None, 0)},
            "current_node": "r"}, 42]
    for k, item in enumerate(bad):
        items.insert(10 + 40 * k, item)
    path = folder / "conversations.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return Sample(path, conversations, len(bad))


def claude_conversation(rng: random.Random, n: int) -> dict[str, Any]:
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    topic = rng.choice(TOPICS)
    messages = []
    for turn in range(rng.randint(1, 4)):
        for sender, text in (("human", f"Tell me about {topic} ({turn})"),
                             ("assistant", f"Here is what matters about {topic}: {rng.choice(THINGS)}.")):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text, "citations": []}]
            if sender == "assistant" and rng.random() < 0.2:
                blocks.insert(0, {"type": "tool_use", "name": "web_search", "input": {"query": topic}})
            messages.append({"uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                             "text": text if rng.random() < 0.5 else "", "content": blocks, "sender": sender,
                             "created_at": f"{day}T10:{turn:02d}:00.000000Z",
                             "updated_at": f"{day}T10:{turn:02d}:00.000000Z", "attachments": [], "files": []})
    return {"uuid": str(uuid.UUID(int=rng.getrandbits(128))), "name": rng.choice([f"{topic} questions", ""]),
            "created_at": f"{day}T10:00:00.000000Z", "updated_at": f"{day}T11:00:00.000000Z",
            "account": {"uuid": "acct-1"}, "chat_messages": messages}


def claude(folder: Path, conversations: int = 200, seed: int = 4) -> Sample:
    rng = random.Random(seed)
    items: list[Any] = [claude_conversation(rng, n) for n in range(conversations)]
    bad = [{"name": "no uuid", "chat_messages": []}, {"uuid": "c-no-messages", "name": "x"},
           {"uuid": "c-silent", "name": "y", "chat_messages": [{"sender": "human", "text": ""}]}, None]
    for k, item in enumerate(bad):
        items.insert(15 + 40 * k, item)
    path = folder / "conversations.json"
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return Sample(path, conversations, len(bad))


def jsonl_lines(records: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for n in range(records):
        record: dict[str, Any] = {"id": f"rec-{n}", "text": f"{_sentence(rng, n)}\n\nMore about {rng.choice(TOPICS)}."}
        if rng.random() < 0.7:
            record["title"] = f"Record {n}: {rng.choice(TOPICS)}"
        if rng.random() < 0.8:
            record["date"] = f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if rng.random() < 0.5:
            record["tags"] = rng.sample(["work", "home", "ideas", "reading"], 2)
        record["type"] = rng.choice(["note", "fact", "lesson", "decision"])
        if rng.random() < 0.5:
            record["domain"] = rng.choice(["work", "home/garden", "reading"])
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def jsonl(folder: Path, records: int = 300, seed: int = 5) -> Sample:
    lines = jsonl_lines(records, seed)
    bad = ['{"text": "cut sho', '["a", "list"]', '{"title": "no text"}', '{"text": "", "tags": []}']
    for k, line in enumerate(bad):
        lines.insert(30 + 60 * k, line)
    path = folder / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Sample(path, records, len(bad))


GENERATORS = {"mcp-memory": mcp_memory, "mem0": mem0, "chatgpt": chatgpt, "claude": claude, "jsonl": jsonl}


# -- shapes of real export files (hand-written; each names the published file it mirrors) --------

def claude_with_thinking() -> list[dict[str, Any]]:
    """A Claude.ai export as the site writes it now: the assistant's ``text`` holds its thinking
    and then the answer, while ``content`` has the blocks apart (``thinking``, ``text``,
    ``tool_use``, ``tool_result``), and ``attachments``/``files`` beside them. Mirrors the shape of
    ceyre-boop/ai-memory and cl0ver012/chatlore ``tests/fixtures/claude/conversations.json``
    (thinking, tool and attachment blocks) and what a real export holds in ``text``."""
    thinking = "The user is asking about whether dog saliva is clean. I should correct the myth."
    answer = "Dog saliva does not clean wounds; it carries bacteria, so wash a lick on a cut with soap."
    return [{
        "uuid": "5d2f1b7e-0000-4000-8000-00000000c1a0", "name": "Is dog saliva clean?", "summary": "",
        "created_at": "2025-03-02T09:15:00.000000Z", "updated_at": "2025-03-02T09:16:10.000000Z",
        "account": {"uuid": "acct-1"},
        "chat_messages": [
            {"uuid": "m1", "text": "Is dog saliva antiseptic?", "sender": "human",
             "content": [{"start_timestamp": "2025-03-02T09:15:00.000000Z", "stop_timestamp": None,
                          "type": "text", "text": "Is dog saliva antiseptic?", "citations": []}],
             "created_at": "2025-03-02T09:15:00.000000Z", "updated_at": "2025-03-02T09:15:00.000000Z",
             "attachments": [{"file_name": "notes.txt", "file_size": 12, "file_type": "text/plain",
                              "extracted_content": "vet said no"}],
             "files": [{"file_name": "lick.jpg"}], "parent_message_uuid": "00000000-0000-4000-8000-000000000000"},
            {"uuid": "m2", "text": thinking + "\n\n" + answer, "sender": "assistant",
             "content": [{"start_timestamp": "2025-03-02T09:15:02.000000Z", "type": "thinking",
                          "thinking": thinking, "summaries": [], "cut_off": False},
                         {"type": "tool_use", "name": "web_search", "input": {"query": "dog saliva bacteria"}},
                         {"type": "tool_result", "name": "web_search",
                          "content": [{"type": "text", "text": "Pasteurella is common in dog mouths."}]},
                         {"start_timestamp": "2025-03-02T09:15:09.000000Z", "type": "text", "text": answer,
                          "citations": []}],
             "created_at": "2025-03-02T09:15:10.000000Z", "updated_at": "2025-03-02T09:15:10.000000Z",
             "attachments": [], "files": [], "parent_message_uuid": "m1"},
        ],
    }]


def _flat_node(key: str, role: str, text: str, when: float, **extra: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"parts": [text]}
    if "content_type" not in extra.get("drop", ()):
        content = {"content_type": "text", **content}
    node: dict[str, Any] = {"id": key, "message": {"id": f"m-{key}", "author": {"role": role},
                                                   "create_time": when, "content": content}}
    for link in ("parent", "children"):
        if link in extra:
            node[link] = extra[link]
    return node


def chatgpt_without_links() -> list[dict[str, Any]]:
    """ChatGPT-format conversations from third-party exporters: mapping nodes with no ``parent``
    or ``children``, no ``current_node``, no conversation ``id`` (the shape of geniusrise/you
    ``tests/fixtures/chatgpt/conversations.json``); 2 conversations of 4 messages, listed out of
    time order."""
    out = []
    for n, topic in enumerate(("lifetimes", "borrowing")):
        start = 1_700_000_000 + n * 10_000
        nodes = [_flat_node(f"c{n}-a2", "assistant", f"Second answer on {topic}.", start + 30),
                 _flat_node(f"c{n}-u1", "user", f"First question on {topic}?", start),
                 _flat_node(f"c{n}-a1", "assistant", f"First answer on {topic}.", start + 10),
                 _flat_node(f"c{n}-u2", "user", f"Second question on {topic}?", start + 20)]
        out.append({"title": f"Rust {topic}", "create_time": start, "update_time": start + 30,
                    "mapping": {node["id"]: node for node in nodes}})
    return out


def chatgpt_parent_links_only() -> list[dict[str, Any]]:
    """Nodes that name their ``parent`` but hold no ``children`` list, and no ``current_node``
    (the shape of Qarait/cognition-vault ``tests/fixtures/chatgpt/conversations.json``)."""
    nodes = [_flat_node("p1", "user", "Verify the sentinel PARENT_ONLY_1", 1708262400, parent=None),
             _flat_node("p2", "assistant", "Sentinel PARENT_ONLY_1 acknowledged.", 1708262405, parent="p1"),
             _flat_node("p3", "user", "And a follow-up PARENT_ONLY_2?", 1708262410, parent="p2"),
             _flat_node("p4", "assistant", "Follow-up PARENT_ONLY_2 answered.", 1708262415, parent="p3")]
    return [{"id": "thread-parent-only", "title": "Parent links only", "create_time": 1708262400,
             "mapping": {node["id"]: node for node in nodes}}]


def chatgpt_without_content_type_or_id() -> list[dict[str, Any]]:
    """Messages whose ``content`` has ``parts`` but no ``content_type``, in conversations without
    ``id``; and one conversation given as a flat ``messages`` list (the shape of suheil2004/Memora
    ``tests/fixtures/chatgpt/conversations.json``, ``export-flat-2``)."""
    nodes = [_flat_node("x1", "user", "Untyped question NOTYPE_1?", 1704067210, drop=("content_type",),
                        parent=None, children=["x2"]),
             _flat_node("x2", "assistant", "Untyped answer NOTYPE_2.", 1704067220, drop=("content_type",),
                        parent="x1", children=[])]
    return [{"title": "No content_type", "create_time": 1704067200, "current_node": "x2",
             "mapping": {node["id"]: node for node in nodes}},
            {"title": "Flat messages", "create_time": 1704153600,
             "messages": [{"id": "g1", "role": "user", "create_time": 1704153610, "content": "Purple tomatoes FLAT_1?"},
                          {"id": "g2", "role": "assistant", "create_time": 1704153620,
                           "content": "Water them early FLAT_2."}]}]
