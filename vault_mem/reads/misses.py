"""Why a read found nothing, or found a word only by its stem: the ``hints`` of a miss
(docs/tools.md, "Hints on a miss").

An empty answer looks the same whether the vault is empty, a word is misspelled or a
filter names nothing; these hints tell them apart: the words no note holds and the
closest words the vault does hold ("did you mean ..."), a word found only by its stem,
and which filter emptied the result. They cost a few lexicon lookups (plus Whoosh's
spelling corrector for a word no note holds), so the tools ask for them only on a miss;
a normal hit pays one whole-token lookup per query word (``search_term_hints``).

Hints stay short: a value is echoed to at most ``ECHO`` characters, at most ``MAX_WORDS``
words get suggestions, and ``why_empty`` says one thing per filter.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from vault_mem.search.api import closest_names, stem_of
from vault_mem.served.context import View
from vault_mem.settings import Settings

SEARCH_FIELDS = ("body", "title", "tagtext", "perm")  # what memory_search matches, likeliest first
SINGULAR = {"notes": "note", "memories": "memory"}
SUGGEST_FIELDS = ("title", "tagtext", "body")  # where its suggestions come from (perm repeats title)


def echo(value: str, *, config: Settings) -> str:
    """``value`` quoted, cut to ``hint_echo`` characters."""
    text = value if len(value) <= config.hint_echo else value[:config.hint_echo] + "..."
    return repr(text)


def listed(values: list[str], last: str = "or", *, config: Settings) -> str:
    """Up to ``hint_max_listed`` ``values``, echoed, joined with ``last`` before the final one."""
    shown = [echo(v, config=config) for v in values[:config.hint_max_listed]]
    if not shown:
        return "none"
    if len(values) > config.hint_max_listed:
        return ", ".join(shown) + f" and {len(values) - config.hint_max_listed} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" {last} " + shown[-1]


def did_you_mean(suggestions: list[str], *, config: Settings) -> str:
    return f"; did you mean {listed(suggestions, config=config)}?" if suggestions else ""


def search_term_hints(view: View, terms: list[str]) -> list[str]:
    """For ``memory_search``: each term no note holds, and whether its stem found notes.

    A term is held when a note's title, permalink, tags or body contains it; when none does,
    the term matched by its English stem alone or not at all, and the hint says which and
    offers the closest words the vault holds."""
    config = view.config
    hints: list[str] = []
    suggested = 0
    if view.snapshot.doc_count() == 0:
        return hints  # the filters' hint says the index is empty
    unheld: list[str] = []
    for term in terms:
        if view.snapshot.has_word(SEARCH_FIELDS, term):
            continue
        if len(hints) == config.hint_max_listed:
            unheld.append(term)
            continue
        stem = stem_of(term, config.query_min_term_chars)
        by_stem = stem is not None and view.snapshot.has_word(SEARCH_FIELDS, stem)
        looked = suggested < config.hint_max_words
        close = view.snapshot.closest_words(SUGGEST_FIELDS, term) if looked else []
        suggested += 1
        if by_stem:
            hints.append(f"no note holds {echo(term, config=config)}: "
                         f"matched by its stem {echo(str(stem), config=config)} only"
                         + did_you_mean(close, config=config))
        else:
            nothing_close = ", nor a word close to it" if looked else ""
            hints.append(f"no note holds {echo(term, config=config)}"
                         + (did_you_mean(close, config=config) or nothing_close))
    if unheld:
        hints.append(f"{len(unheld)} more words no note holds: {listed(unheld, 'and', config=config)}")
    return hints


def missing_word_hints(view: View, words: list[str], fields: tuple[str, ...], where: str) -> list[str]:
    """For substring filters (``memory_list``'s query): each word no note holds in ``fields``,
    with the closest words; ``where`` names the fields in the hint ("title or body")."""
    config = view.config
    hints: list[str] = []
    unheld = [w for w in words if not view.snapshot.has_word(fields, w)]
    for i, word in enumerate(unheld[:config.hint_max_listed]):
        close = view.snapshot.closest_words(fields, word) if i < config.hint_max_words else []
        hints.append(f"no memory's {where} holds {echo(word, config=config)}" + did_you_mean(close, config=config))
    if len(unheld) > config.hint_max_listed:
        more = unheld[config.hint_max_listed:]
        hints.append(f"{len(more)} more words no memory holds: {listed(more, 'and', config=config)}")
    return hints


def tag_hints(view: View, tags: list[str], param: str) -> list[str]:
    """For tag filters: each tag no note carries (nested tags count), with the closest tags."""
    config = view.config
    missing = [t for t in tags if not view.snapshot.has_word(("tags",), t, substring=False)]
    hints = []
    for i, tag in enumerate(missing):
        if i == config.hint_max_words:
            hints.append(f"{param}: {len(missing) - i} more tags match no memory: {listed(missing[i:], config=config)}")
            break
        close = view.snapshot.closest_words(("tags",), tag) if tag else []
        hints.append(f"{param}: tag {echo(tag, config=config)} matched no memory" + did_you_mean(close, config=config))
    return hints


def _kinds(view: View) -> list[str]:
    return [t for t in view.snapshot.lexicon("type") if t]


def present_kinds(view: View) -> str:
    """The kinds (types) notes have, for a hint: at most MAX_LISTED, then how many more."""
    config = view.config
    kinds = _kinds(view)
    more = f" and {len(kinds) - config.hint_max_listed} more" if len(kinds) > config.hint_max_listed else ""
    return ", ".join(kinds[:config.hint_max_listed]) + more


def closest_kinds(view: View, kind: str) -> list[str]:
    """The kinds (types) present in the vault closest to ``kind``."""
    return closest_names(_kinds(view), kind, view.config.suggestions)


def range_hint(view: View, field: str, lo: int | None, hi: int | None, lo_name: str, hi_name: str) -> str:
    """Why no note's ``field`` (``created``, ``updated``) falls in ``[lo, hi]`` (inclusive epoch
    seconds, None: open): a start after the newest, an end before the oldest, or a gap between
    notes. ``lo_name``/``hi_name`` say the bounds as the caller gave them (``date_from '2030'``)."""
    column = view.snapshot.column(field)
    dated = [d for d in view.snapshot.all_docs() if column[d] is not None]
    if not dated:
        return f"no memory has a {field} date"
    newest = max(dated, key=column.__getitem__)
    oldest = min(dated, key=column.__getitem__)
    if lo is not None and column[newest] < lo:
        return f"{lo_name} is after the newest memory ({field} {view.snapshot.record(newest).get(field)})"
    if hi is not None and column[oldest] > hi:
        return f"{hi_name} is before the oldest memory ({field} {view.snapshot.record(oldest).get(field)})"
    return f"no memory was {field} from {lo_name} to {hi_name}"


def newest_value(view: View, field: str) -> str | None:
    """The stored (ISO) ``field`` of the note with the highest ``field`` value, if any."""
    docs = view.snapshot.newest(field, 1)
    return str(view.snapshot.record(docs[0]).get(field)) if docs else None


@dataclass
class Filter:
    """One filter of a call, for ``why_empty``: its name as the hint says it (``tag 'ops'``),
    the notes it admits on its own, and what to say when it admits none."""

    label: str
    admits: Callable[[], Collection[int]]
    when_empty: Callable[[], str]


def why_empty(found: Collection[int] | None, filters: Iterable[Filter], noun: str = "notes",
              text: str = "the query", *, config: Settings) -> list[str]:
    """Which filter emptied a result. ``found``: what the text matched (None without text).

    A filter that admits nothing on its own is named with its own explanation; otherwise the
    hint says how many of the text's matches each filter leaves, or that the filters only
    exclude each other together."""
    given = list(filters)
    admitted = [(f, f.admits()) for f in given]
    empty = [f for f, docs in admitted if not docs]
    words, listed_at_most = config.hint_max_words, config.hint_max_listed
    alone = [f.when_empty() for f in empty[:words]]
    if len(empty) > words:
        alone.append(f"{len(empty) - words} more filters admit no {SINGULAR.get(noun, noun)}: "
                     + ", ".join(f.label for f in empty[words:words + listed_at_most])
                     + (" ..." if len(empty) > words + listed_at_most else ""))
    if alone or not given:
        return alone
    if found is not None:
        if not found:
            return []
        matches = set(found)
        left = [(f, len(matches.intersection(docs))) for f, docs in admitted]
        zero = [f.label for f, n in left if n == 0]
        head = f"{text} matches {len(matches)} {noun if len(matches) != 1 else SINGULAR.get(noun, noun)}"
        if zero:
            return [f"{head}, none of them with {' and '.join(zero)}"]
        kept = ", ".join(f"{f.label} leaves {n}" for f, n in left)
        return [f"{head}; {kept}; none passes every filter"]
    counts = ", ".join(f"{f.label} admits {len(docs)}" for f, docs in admitted)
    return [f"no {SINGULAR.get(noun, noun)} passes every filter together ({counts})"]
