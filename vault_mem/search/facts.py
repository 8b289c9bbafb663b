"""What two notes must share to say the same thing, beyond their wording (docs/ranking.md,
"Notes that say the same"): ``similar`` and ``tidy`` propose a pair only when these agree.

A note's *facts* are the words that name what it is about: numbers, dates and versions (any
word with a digit: ``2025-03-02``, ``v0.3``, ``15:00``), identifiers (``create_entities``,
``deploy.sh``, ``JetStream``, ``SSO``) and names (a capitalised word that does not start a line
or a sentence: ``Paris``, ``Dana``, the ``Relations`` of "Feature: Create Relations"). Headings
are the note's structure and say no fact. A note *names* a fact when it writes it as a fact or
capitalised anywhere, even starting a sentence (a plural or a possessive as its singular; a
compound word such as ``create_entities`` also by its parts, unless it holds a digit). Two
notes *disagree* when each holds a fact the other does not name: a note made
from another's template with other names or numbers ("Marketing budget 2024" and "... 2025",
"Feature: Create Entities" and "... Create Relations"). A restatement keeps the facts of what it
restates; it may leave one out or add one, which only one side then lacks.

A note that is *mostly links* (at least ``similar_link_share`` of its lines, and at least two,
hold a ``[[link]]``, an ``![[embed]]`` or a Markdown link: settings) is compared by what it points to, not by its
markup: the Jaccard index of its link targets, a link and an embed of one target counting as two
different things (an index of notes is not a page showing them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from vault_mem.search.ranking import STOP_WORDS
from vault_mem.vault.markdown import body_links, mask_code
from vault_mem.vault.names import words

_TOKEN = re.compile(r"\w+(?:[.\-:/']\w+)*")
_PARTS = re.compile(r"[^\W_]+")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)
_LINE_LEAD = re.compile(r"[\s\-*+>#\d.)\[\]xX!|]*")  # list marks, quote marks, task boxes, numbering
_SENTENCE_END = re.compile(r"[.!?;(\"]\s*$")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
_DOTTED = re.compile(r"[^\W_]\.[^\W_]")
_LINK_MARKUP = re.compile(r"!?\[\[[^\[\]\n]*\]\]|\[[^\[\]\n]*\]\([^()\n]*\)")


@dataclass(frozen=True)
class Said:
    """What of a note is compared: its ``words`` (lower-cased, numbers left out: the wording),
    its ``facts``, what it ``names`` (see the module), and, when it is mostly links, its
    ``links``' targets (else None)."""

    words: frozenset[str]
    facts: frozenset[str]
    names: frozenset[str]
    links: frozenset[str] | None


def _singular(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _is_fact(token: str) -> bool:
    """A number, a date, a version or an identifier (checked before its place in a sentence)."""
    return (any(c.isdigit() for c in token) or "_" in token or bool(_DOTTED.search(token))
            or bool(_INNER_CAPITAL.search(token)) or (len(token) >= 2 and token.isupper()))


def _starts_sentence(text: str, start: int) -> bool:
    line = text[text.rfind("\n", 0, start) + 1:start]
    return _LINE_LEAD.fullmatch(line) is not None or _SENTENCE_END.search(line) is not None


def _link_key(target: str, embed: bool) -> str:
    target = target.strip().lower()
    if target.endswith(".md"):
        target = target[:-3]
    return ("!" if embed else "") + target


def said(title: str, body: str, link_share: float) -> Said:
    """What ``similar`` and ``tidy`` compare of a note titled ``title`` with ``body`` (the head of
    its body the index keeps); ``link_share``: the share of its lines holding links that makes it a
    note of links (the ``similar_link_share`` setting)."""
    masked = mask_code(body)
    # headings found outside code (the masked text keeps every line break), the text itself kept
    text = "\n".join([title, *(line for line, seen in zip(body.splitlines(), masked.splitlines(), strict=False)
                               if not _HEADING_LINE.fullmatch(seen))])
    facts: set[str] = set()
    names: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group()
        low = token.lower()
        if low in STOP_WORDS or len(token) < 2 or not (_is_fact(token) or token[0].isupper()):
            continue
        names.add(_singular(low))
        if not any(c.isdigit() for c in token):
            names.update(_singular(part) for part in _PARTS.findall(low))
        if _is_fact(token) or not _starts_sentence(text, match.start()):
            facts.add(_singular(low))
    return Said(frozenset(w for w in words(f"{title}\n{body}") if _HAS_LETTER.search(w)), frozenset(facts),
                frozenset(names), _links(masked, link_share))


def _links(masked: str, link_share: float) -> frozenset[str] | None:
    """The targets of a note that is mostly links, else None."""
    lines = [line for line in masked.splitlines() if line.strip() and not _HEADING_LINE.fullmatch(line)]
    linked = [line for line in lines if _LINK_MARKUP.search(line)]
    if len(linked) < 2 or len(linked) < link_share * len(lines):
        return None
    return frozenset(_link_key(link.target, link.embed) for link in body_links(masked) if link.target.strip())


def _named(fact: str, names: frozenset[str]) -> bool:
    """Whether a note naming ``names`` names ``fact``: the fact itself, or every part of a compound
    one without a digit (``create_entities`` is named by a note saying "Create Entities")."""
    if fact in names:
        return True
    parts = _PARTS.findall(fact)
    return len(parts) > 1 and not any(c.isdigit() for c in fact) and all(_singular(p) in names for p in parts)


def unmatched(a: Said, b: Said) -> list[str]:
    """The facts of ``a`` that ``b`` does not name."""
    return sorted(f for f in a.facts if not _named(f, b.names))


def disagree(a: Said, b: Said) -> bool:
    """Whether each note holds a fact the other does not mention (see the module)."""
    return bool(unmatched(a, b)) and bool(unmatched(b, a))


def alike(a: Said, b: Said, wording: Callable[[Said, Said], float]) -> float:
    """How alike two notes are, 0..1: 0 when they disagree on a fact or only one is mostly links;
    the Jaccard index of their link targets when both are; else ``wording(a, b)`` (the
    resemblance of their words: search/similar.py)."""
    if (a.links is None) != (b.links is None) or disagree(a, b):
        return 0.0
    if a.links is not None and b.links is not None:
        both = len(a.links & b.links)
        return both / (len(a.links) + len(b.links) - both) if a.links or b.links else 0.0
    return wording(a, b)
