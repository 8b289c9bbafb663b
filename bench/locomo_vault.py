"""A conversation-log vault and its questions from the LoCoMo benchmark (snap-research/locomo,
``data/locomo10.json``), for bench/fusion_bench.py.

    python bench/locomo_vault.py PATH/TO/locomo10.json OUT_DIR

LoCoMo's data is CC BY-NC 4.0 (Maharana et al., "Evaluating Very Long-Term Conversational Memory
of LLM Agents", ACL 2024): it is not copied into this repository; this script builds the vault
from the file you give it. One note per turn, as an agent's conversation log would hold it: a
file ``turn-CCTTTT.md`` (CC the conversation's place in the file from 01, TTTT the turn's place
in it from 0001) with no title, ``created`` and ``updated`` its session's date and time, the
speaker and session in the frontmatter, and the body ``Speaker: what they said``, with
``[shares a photo: caption]`` where the turn shared an image. The questions are LoCoMo's own,
verbatim, of categories 1-4 (single-hop, multi-hop, temporal, open-domain; category 5 asks
about things never said), each answered by the turns of its ``evidence``.

The held-out split is fixed by conversation, not drawn at run time: the first five conversations
of the file (conv-26, conv-30, conv-41, conv-42, conv-43) are the half parameters are chosen on
(``tune``), the other five the half reported (``held-out``).
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

TUNE_CONVERSATIONS = 5  # the first five conversations of the file: the tuning half
CATEGORIES = (1, 2, 3, 4)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")


def when(text: str) -> str:
    """``1:56 pm on 8 May, 2023`` -> ``2023-05-08T13:56:00Z``."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M:%SZ")


def turns_of(conversation: dict[str, Any]) -> list[tuple[int, dict[str, Any], str]]:
    """(session number, turn, its session's ISO time), in the conversation's order."""
    sessions = sorted((int(k.split("_")[1]), v) for k, v in conversation.items()
                      if re.fullmatch(r"session_\d+", k) and isinstance(v, list))
    return [(n, turn, when(conversation[f"session_{n}_date_time"])) for n, turns in sessions for turn in turns]


def note_of(turn: dict[str, Any], session: int, at: str) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shares a photo: {caption}]"
    return (f"---\nspeaker: {json.dumps(turn['speaker'])}\nsession: {session}\ncreated: {at}\nupdated: {at}\n---\n"
            f"{turn['speaker']}: {text}\n")


def planned(source: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The vault's notes (file name -> text) and its questions: ``{question, answers, half,
    conversation, category}``, answers as vault-relative paths."""
    data = json.loads(source.read_text(encoding="utf-8"))
    notes: dict[str, str] = {}
    questions: list[dict[str, Any]] = []
    for c, sample in enumerate(data, 1):
        by_dia: dict[tuple[int, int], str] = {}
        for t, (session, turn, at) in enumerate(turns_of(sample["conversation"]), 1):
            name = f"turn-{c:02d}{t:04d}.md"
            notes[name] = note_of(turn, session, at)
            found = _EVIDENCE.fullmatch(str(turn.get("dia_id", "")))
            if found:
                by_dia[(int(found[1]), int(found[2]))] = name
        half = "tune" if c <= TUNE_CONVERSATIONS else "held-out"
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            answers = sorted({by_dia[key] for ev in qa.get("evidence", [])
                              for key in ((int(a), int(b)) for a, b in _EVIDENCE.findall(str(ev))) if key in by_dia})
            if answers:
                questions.append({"question": qa["question"], "answers": answers, "half": half,
                                  "conversation": sample.get("sample_id", str(c)), "category": qa["category"]})
    return notes, questions


def questions_of(source: Path) -> list[dict[str, Any]]:
    """The questions of a vault built from ``source`` (see ``planned``)."""
    return planned(source)[1]


def build(source: Path, out: Path) -> list[dict[str, Any]]:
    """Write the vault into ``out`` (which must not hold notes yet) and return its questions."""
    notes, questions = planned(source)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.rglob("*.md")):
        raise SystemExit(f"{out} already holds notes; give an empty or new folder")
    for name, text in notes.items():
        (out / name).write_text(text, encoding="utf-8")
    return questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="LoCoMo's data/locomo10.json")
    parser.add_argument("out", type=Path, help="an empty folder for the vault")
    args = parser.parse_args()
    questions = build(args.source, args.out)
    (args.out.parent / f"{args.out.name}-questions.json").write_text(json.dumps(questions, indent=1), encoding="utf-8")
    notes = sum(1 for _ in args.out.glob("*.md"))
    print(f"{notes:,} notes in {args.out}; {len(questions):,} questions in {args.out.name}-questions.json "
          f"({sum(q['half'] == 'tune' for q in questions)} tune, {sum(q['half'] == 'held-out' for q in questions)} "
          "held-out)")


if __name__ == "__main__":
    main()
