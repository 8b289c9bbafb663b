"""Frontmatter and body text for the write tools: render new notes, edit old ones surgically.

Everything here works on ``str`` and never touches the disk. An edited file keeps
its BOM (a leading U+FEFF), its line endings, its comments, its quoting, its key
order and every line the call did not change, so that ``git diff`` shows only what
was set (docs/tools.md, "The write tools").

YAML is checked against the reader, not trusted: values are written by
``vault.yamlstyle`` and every edited block is re-read and compared before it is
returned. Frontmatter the reader cannot parse is never rewritten (InvalidInput on
``ref``): the person has to fix it first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from vault_mem.errors import InvalidInput
from vault_mem.settings import Settings
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.yamlstyle import (
    SURROGATE,
    block_lines,
    entry_lines,
    flow_text,
    is_collection,
    plain_value,
    render_frontmatter,
    same_value,
    value_lines,
)

_BOM = "\ufeff"


_TRAILING_BLANK_LINES = re.compile(r"(?:\r?\n[ \t]*)+\Z")


# --- new notes ---------------------------------------------------------------------------

def _check_fields(text: str, fields: Mapping[str, Any], param: str, *, config: Settings) -> None:
    split = split_frontmatter(text.removeprefix(_BOM))
    loaded = load_yaml(split.yaml_text or "", config=config)
    for key, value in fields.items():
        if key not in loaded.data or not same_value(loaded.data[key], plain_value(value, config=config)):
            raise InvalidInput(param, f"the value of {key!r} cannot be written so that it reads back "
                               "the same; try a plainer value")


def render_note(fields: Mapping[str, Any], body: str, *, config: Settings) -> str:
    """The text of a new note: frontmatter, then ``body`` with LF endings and a final newline.

    Raises InvalidInput("set") when a value cannot be written so that it reads back equal.
    ``config``: the YAML bounds the rendering is read back within.
    """
    config = config
    text = render_frontmatter(fields, config=config) + _normal_body(body, "\n")
    _check_fields(text, fields, "set", config=config)
    return text


def _normal_body(body: str, newline: str, param: str = "content") -> str:
    if SURROGATE.search(body):
        raise InvalidInput(param, "holds a lone surrogate (U+D800..U+DFFF), which UTF-8 cannot store")
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    return body.replace("\n", newline) if newline != "\n" else body





# --- surgical edits ----------------------------------------------------------------------

class _Parts:
    """A note's text cut into BOM, frontmatter block (between the fences) and body."""

    def __init__(self, text: str, name: str) -> None:
        self.bom = _BOM if text.startswith(_BOM) else ""
        rest = text[len(self.bom):]
        if rest.startswith("---\r") and not rest.startswith("---\r\n"):
            # The reader turns lone CRs into line breaks; the editor would not see this block.
            raise InvalidInput("ref", f"{name} uses CR-only line endings (classic Mac); "
                               "convert it to LF or CRLF by hand first")
        split = split_frontmatter(rest)
        if split.yaml_text is None and any("never closed" in p for p in split.problems):
            raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed (the opening '---' "
                               "is never closed); fix it by hand first")
        self.yaml = split.yaml_text
        first_end = rest.find("\n")
        if self.yaml is not None:
            self.yaml_start = first_end + 1
            self.yaml_end = self.yaml_start + len(self.yaml)
            self.newline = "\r\n" if rest[:first_end].endswith("\r") else "\n"
        else:
            self.yaml_start = self.yaml_end = 0
            self.newline = "\r\n" if "\r\n" in rest[: first_end + 1 if first_end >= 0 else 0] else "\n"
        self.head = rest[: split.body_offset]
        self.body = split.body
        self.rest = rest


def set_keys(text: str, updates: Mapping[str, Any], name: str = "the note", *, config: Settings) -> str:
    """``text`` with the frontmatter keys in ``updates`` set, every other byte kept.

    A key that exists has only its own value replaced, keeping its form (a flow list
    stays ``[a, b]``, a quoted string keeps its quotes, a block list its indentation);
    new keys are appended at the end of the block in block style; a file with no
    frontmatter gets a new block on top. Raises InvalidInput("ref") when the existing
    frontmatter cannot be parsed, InvalidInput("set") for a key or value YAML cannot hold.
    ``config``: the YAML bounds the result is read back within.
    """
    config = config
    parts = _Parts(text, name)
    if not updates:
        return text
    nl = parts.newline
    if parts.yaml is None:
        new = parts.bom + render_frontmatter(updates, nl, config=config) + parts.rest
        _check_fields(new, updates, "set", config=config)
        return new
    before = load_yaml(parts.yaml, config=config)
    if not before.parsed:
        reason = "; ".join(before.problems).removeprefix("frontmatter: ") or "not a mapping"
        raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed ({reason}); "
                           "fix it by hand first")
    changed = {k: v for k, v in updates.items()
               if k not in before.data or not same_value(before.data[k], plain_value(v, config=config))}
    if not changed:
        return text
    new_yaml = _edit_block(parts.yaml, changed, nl, name, config=config)
    new = parts.bom + parts.rest[: parts.yaml_start] + new_yaml + parts.rest[parts.yaml_end:]
    after = load_yaml(new_yaml, config=config)
    others_kept = all(k in after.data and same_value(after.data[k], v)
                      for k, v in before.data.items() if k not in changed)
    if not after.parsed or not others_kept:
        raise InvalidInput("set", f"the frontmatter of {name} is laid out in a way that cannot be "
                           "edited safely (anchors, aliases or a flow mapping?); edit it by hand")
    _check_fields(new, changed, "set", config=config)
    return new


def _edit_block(block: str, updates: Mapping[str, Any], nl: str, name: str, *, config: Settings) -> str:
    try:
        root = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed ({exc}); "
                           "fix it by hand first") from exc
    entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    root_indent = 0
    if isinstance(root, yaml.MappingNode):
        if root.flow_style:
            raise InvalidInput("set", f"the frontmatter of {name} is one flow mapping {{...}}; "
                               "edit it by hand")
        for key_node, value_node in root.value:
            if isinstance(key_node, yaml.ScalarNode):
                entries[key_node.value.strip()] = (key_node, value_node)
        if root.value:
            root_indent = root.value[0][0].start_mark.column
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    for key, value in updates.items():
        if key in entries:
            edits.append(_replacement(block, *entries[key], value, name, key, config=config))
        else:
            appended += entry_lines(key, value, root_indent, config=config)
    for start, end, new in sorted(edits, reverse=True):
        block = block[:start] + new.replace("\n", nl) + block[end:]
    if appended:
        if block and not block.endswith("\n"):
            block += nl
        block += nl.join(appended) + nl
    return block


def _content_end(node: yaml.Node) -> int:
    """Index just after the last character that belongs to ``node``'s value."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    end = len(text) if end < 0 else end
    return end - 1 if end > index and text[end - 1] == "\r" else end


def _replacement(block: str, key_node: yaml.Node, node: yaml.Node, value: Any,
                 name: str, key: str, *, config: Settings) -> tuple[int, int, str]:
    """(start, end, text): the slice of ``block`` holding ``key``'s value, and what replaces it."""
    colon = block.index(":", key_node.end_mark.index)
    after_colon = colon + 1
    start = node.start_mark.index
    if start < after_colon:
        raise InvalidInput("set", f"{key!r} in {name} is a YAML alias (*name); edit it by hand")
    end = _content_end(node)
    while end > start and block[end - 1] in " \t\r\n":
        end -= 1
    empty = isinstance(node, yaml.ScalarNode) and node.value == "" and node.style is None and end == start
    below = "\n" in block[after_colon:start]
    indent = key_node.start_mark.column
    child_indent: int | None = None
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        first = node.value[0][0] if isinstance(node, yaml.MappingNode) else node.value[0]
        line_start = block.rfind("\n", 0, first.start_mark.index) + 1
        line = block[line_start:]
        child_indent = len(line) - len(line.lstrip(" "))

    on_line, lines = _form_keeping_lines(node, value, indent, child_indent, config=config)
    if on_line:
        lead = "" if not (empty or below) else " "
        region = (after_colon, after_colon) if empty else (after_colon, end) if below else (start, end)
    else:
        lead = "\n"
        key_line_end = _line_end(block, after_colon)
        region = (key_line_end, max(end, key_line_end)) if empty or below else (after_colon, end)
    first, rest = lead + lines[0], lines[1:]
    if rest or not on_line:
        # A comment after the old value must not end up inside a multi-line new one:
        # it moves to the new value's first line.
        tail = block[region[1]:_line_end(block, region[1])]
        if tail.strip().startswith("#"):
            first = (first + tail) if on_line else tail + first
            region = (region[0], region[1] + len(tail))
    return region[0], region[1], "\n".join([first, *rest])


def _form_keeping_lines(node: yaml.Node, value: Any, indent: int,
                        child_indent: int | None, *, config: Settings) -> tuple[bool, list[str]]:
    if isinstance(node, yaml.CollectionNode) and node.flow_style and isinstance(value, list | tuple | dict):
        flow = flow_text(value, config=config)
        if flow is not None:
            return True, [flow]
    same_kind = isinstance(value, list | tuple) if isinstance(node, yaml.SequenceNode) else isinstance(value, dict)
    if child_indent is not None and same_kind and is_collection(value):
        lines = block_lines(list(value) if isinstance(value, tuple) else value, child_indent, config=config)
        return False, lines
    # A quoted string keeps its quotes; a multi-line string becomes a | block whatever it was.
    style = node.style if isinstance(node, yaml.ScalarNode) else None
    quoted = style in ("'", '"') and isinstance(value, str)
    return value_lines(value, indent, style if quoted else None, config=config)


def _edit_body(text: str, name: str, make_body: Callable[[str, str], str]) -> str:
    parts = _Parts(text, name)
    head = parts.head
    if head and not head.endswith("\n"):
        head += parts.newline
    return parts.bom + head + make_body(parts.body, parts.newline)


def replace_body(text: str, body: str, name: str = "the note") -> str:
    """``text`` with its body replaced; BOM and frontmatter kept byte for byte.

    The new body takes the file's line endings and ends with a newline.
    """
    return _edit_body(text, name, lambda _old, nl: _normal_body(body, nl))


def append_paragraph(text: str, paragraph: str, name: str = "the note") -> str:
    """``text`` with ``paragraph`` added at the end of its body after one blank line.

    Trailing blank lines of the old body are folded into that one blank line; the file
    keeps its line endings and ends with a newline. Raises InvalidInput("append") when
    ``paragraph`` holds nothing but whitespace.
    """
    addition = paragraph.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not addition.strip():
        raise InvalidInput("append", "nothing to append: the text is empty")

    def make(old: str, nl: str) -> str:
        kept = _TRAILING_BLANK_LINES.sub("", old)
        if not kept.strip():
            return _normal_body(addition, nl, "append")
        return kept + nl + nl + _normal_body(addition, nl, "append")

    return _edit_body(text, name, make)
