"""Link resolution for ``memory_read`` (docs/tools.md): outgoing links and backlinks.

A ``[[wikilink]]`` resolves as Obsidian does, then by title, then by alias:

1. a path (relative to the vault root; ``./`` and ``../`` relative to the linking note's
   folder), compared case-insensitively without ``.md``;
2. a file name, or a path's tail (``[[b/note]]`` finds ``a/b/note.md``);
3. a title, then an alias.

When a stage has several hits, the *nearest* note wins (``Names.nearest`` in refs.py, the
one tie-break every name lookup uses): the longest shared folder prefix with the linking
note, then the shortest path, then path order.

A Markdown link (``[text](../b/note.md)``) is relative to the linking note's folder and
must stay inside the vault; when no file sits there, it resolves as a wikilink to that
path would (Obsidian's "shortest path" links). A link that resolves nowhere is kept,
with ``permalink: null`` and ``resolved: false``.

Backlinks: candidates come from the ``link_keys`` index field (the lower-cased link
targets of every note): exact terms for the title and aliases, and, from the field's
lexicon, every term whose last segment is the file name (paths, tails, ``.md`` forms,
relative Markdown links). Each candidate's links are then resolved from where that note
sits, so a link to a same-named note in another folder does not count.
"""

from __future__ import annotations

import posixpath
from typing import Any

from vault_mem.served.context import View
from vault_mem.served.refs import Names
from vault_mem.vault import markdown
from vault_mem.vault.fields import fold
from vault_mem.vault.names import strip_md
from vault_mem.vault.note import Note, domain_of


class LinkResolver(Names):
    """Resolves link targets against one view of the index, each key looked up once."""

    def by_path(self, rel: str, from_path: str) -> int | None:
        """The note at vault-relative ``rel`` (with or without .md), case-insensitively."""
        hits = self.hits("key_path", fold(strip_md(rel)))
        if not hits:
            return None
        exact = [d for d in hits if strip_md(self.path(d)) == strip_md(rel)]
        return self.nearest(exact or hits, from_path)

    def wikilink(self, target: str, from_path: str) -> int | None:
        """The note a wikilink target names, or None."""
        text = target.strip()
        if not text:
            return None
        if text.startswith(("./", "../")):
            rel = _relative(text, from_path)
            return self.by_path(rel, from_path) if rel is not None else None
        text = text.lstrip("/")
        found = self.by_path(text, from_path)
        if found is not None:
            return found
        tail = fold(strip_md(text))
        name = tail.rpartition("/")[2]
        hits = self.hits("key_name", name)
        if "/" in tail:
            hits = [d for d in hits if fold(strip_md(self.path(d))).endswith("/" + tail)]
        if hits:
            return self.nearest(hits, from_path)
        for field in ("key_title", "key_alias"):
            hits = self.hits(field, fold(target.strip()))
            if hits:
                return self.nearest(hits, from_path)
        return None

    def markdown_link(self, target: str, from_path: str) -> int | None:
        """The note a Markdown link names: relative to the linking note's folder, inside the vault."""
        text = target.strip()
        if not text or "://" in text:
            return None
        if text.startswith("/"):
            rel: str | None = text.lstrip("/")
        else:
            rel = _relative(text, from_path)
        if rel is None:
            return None  # climbs out of the vault
        found = self.by_path(rel, from_path)
        if found is not None:
            return found
        if text.startswith(("./", "../")):
            return None
        return self.wikilink(text, from_path)

    def resolve(self, link: dict[str, Any], from_path: str) -> int | None:
        if link.get("markdown"):
            return self.markdown_link(str(link.get("target", "")), from_path)
        return self.wikilink(str(link.get("target", "")), from_path)

    def permalink(self, doc: int) -> str:
        return self.view.permalink(self.path(doc))


def _relative(target: str, from_path: str) -> str | None:
    """``target`` joined to the folder of ``from_path``; None when it climbs out of the vault."""
    joined = posixpath.normpath(posixpath.join(domain_of(from_path), target))
    if joined in (".", "") or joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return joined


def note_links(note: Note) -> list[dict[str, Any]]:
    """The note's outgoing links, each flagged ``markdown`` when it is a Markdown link.

    The reader keeps links in the order: body wikilinks, body Markdown links, frontmatter
    wikilinks; its dicts do not say which is which, so the body is scanned again here.
    """
    body = [] if note.excalidraw else markdown.body_links(markdown.mask_code(note.body))
    out: list[dict[str, Any]] = []
    for i, link in enumerate(note.links):
        entry = dict(link)
        if i < len(body) and body[i].markdown:
            entry["markdown"] = True
        out.append(entry)
    return out


def outgoing(view: View, note: Note, resolver: LinkResolver | None = None) -> list[dict[str, Any]]:
    """``links`` of memory_read: each distinct outgoing link with the permalink it resolves to.

    An entry: ``target`` (as written), ``permalink`` (None when unresolved), ``resolved``,
    and ``heading``/``block``/``embed``/``markdown`` when the link has them. Same-note
    anchors (``[[#heading]]``) are not listed; a link written twice is listed once.
    """
    resolver = resolver or LinkResolver(view)
    seen: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    for link in note_links(note):
        target = str(link.get("target") or "")
        if not target.strip():
            continue
        key = (fold(target), bool(link.get("markdown")), link.get("heading"), link.get("block"),
               bool(link.get("embed")))
        if key in seen:
            continue
        seen.add(key)
        doc = resolver.resolve(link, note.path)
        entry: dict[str, Any] = {
            "target": target,
            "permalink": resolver.permalink(doc) if doc is not None else None,
            "resolved": doc is not None,
        }
        for extra in ("heading", "block", "embed", "markdown"):
            if link.get(extra):
                entry[extra] = link[extra]
        out.append(entry)
    return out


def backlinks(view: View, doc: int, record: dict[str, Any],
              resolver: LinkResolver | None = None) -> list[str]:
    """Permalinks of the notes whose links resolve to ``doc``, sorted."""
    resolver = resolver or LinkResolver(view)
    path = str(record["path"])
    name = fold(strip_md(path.rpartition("/")[2]))
    terms = {fold(record.get("title") or "")} | {fold(a) for a in record.get("aliases") or []}
    for term in view.snapshot.terms_containing("link_keys", name) if name else []:
        stem = strip_md(term)
        if stem == name or stem.endswith("/" + name):
            terms.add(term)
    terms.discard("")
    if not terms:
        return []
    candidates = view.snapshot.term_docs("link_keys", sorted(terms))
    found: set[str] = set()
    for cand in candidates:
        if cand == doc:
            continue
        if _links_to(view, resolver, cand, doc, terms):
            found.add(resolver.permalink(cand))
    return sorted(found)


def _links_to(view: View, resolver: LinkResolver, cand: int, doc: int, terms: set[str]) -> bool:
    rec = view.snapshot.record(cand)
    from_path = str(rec["path"])
    links = [lk for lk in rec.get("links") or [] if fold(str(lk.get("target") or "")) in terms]
    undecided = False
    for link in links:
        target = str(link.get("target") or "")
        as_wiki = resolver.wikilink(target, from_path)
        if not target.lower().endswith(".md") or link.get("embed") or link.get("block"):
            if as_wiki == doc:
                return True
            continue
        # A target ending in .md may be a wikilink or a Markdown link: when the two
        # readings disagree, the file says which it is.
        as_markdown = resolver.markdown_link(target, from_path)
        if as_wiki == doc and as_markdown == doc:
            return True
        if doc in (as_wiki, as_markdown):
            undecided = True
    if not undecided:
        return False
    body_links = markdown.body_links(markdown.mask_code(view.body(rec)))
    for link in body_links:
        if fold(link.target) in terms:
            entry = {"target": link.target, "markdown": link.markdown}
            if resolver.resolve(entry, from_path) == doc:
                return True
    # The stored links after the body's are the frontmatter's, all wikilinks.
    frontmatter = (rec.get("links") or [])[len(body_links):]
    return any(resolver.wikilink(str(lk.get("target") or ""), from_path) == doc for lk in frontmatter
               if fold(str(lk.get("target") or "")) in terms)
