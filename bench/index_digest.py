"""The content of an index, digested by note path: equal digests mean the same index content.

    python bench/index_digest.py IX            # one line per part and a total digest
    python bench/index_digest.py IX --dump F   # also every item, sorted, one a line (to diff)

What is compared: every field's terms with, for each note (by path, so that the segments'
layout and the notes' order do not matter), the posting's weight and value bytes; every
scored field's length per note; every column's value per note; every stored record. A
change to how the index is built (the tokenizer, the posting pool, the batches) must leave
this digest unchanged unless the schema changes on purpose.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from whoosh import index as whoosh_index

import vault_mem.search.schema  # noqa: F401  (the index layer's Whoosh patches, as the server reads)


def items(index_dir: Path) -> dict[str, list[str]]:
    """Every item of the index's content, by part, each a line of text, sorted."""
    ix = whoosh_index.open_dir(str(index_dir))
    parts: dict[str, list[str]] = {"postings": [], "lengths": [], "columns": [], "stored": []}
    with ix.reader() as reader:
        paths = {doc: reader.stored_fields(doc)["path"] for doc in reader.all_doc_ids()}
        for doc, path in paths.items():
            parts["stored"].append(f"{path!r} {pickle.dumps(reader.stored_fields(doc), 4).hex()}")
        schema = reader.schema
        for field, text in reader.all_terms():
            postings = reader.postings(field, text)
            while postings.is_active():
                doc = postings.id()
                if doc in paths:
                    parts["postings"].append(f"{field} {text!r} {paths[doc]!r} {postings.weight()!r} "
                                             f"{postings.value()!r}")
                postings.next()
        for name, field in schema.items():
            if field.scorable:
                parts["lengths"] += [f"{name} {path!r} {reader.doc_field_length(doc, name)}"
                                     for doc, path in paths.items()]
            if field.column_type and reader.has_column(name):
                column = reader.column_reader(name)
                parts["columns"] += [f"{name} {path!r} {column[doc]!r}" for doc, path in paths.items()]
    return {part: sorted(lines) for part, lines in parts.items()}


def digest(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("--dump", type=Path, help="write every item here, sorted, one a line")
    args = parser.parse_args()
    parts = items(args.index_dir)
    everything: list[Any] = []
    for part, lines in parts.items():
        print(f"{part:9} {len(lines):>9,} items  {digest(lines)}")
        everything += [f"{part} {line}" for line in lines]
    print(f"{'all':9} {len(everything):>9,} items  {digest(everything)}")
    if args.dump:
        args.dump.write_text("\n".join(everything) + "\n", encoding="utf-8", errors="surrogateescape")


if __name__ == "__main__":
    main()
