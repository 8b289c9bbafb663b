"""No comment or docstring in ``vault_mem/`` quotes a measured figure.

Measured timings, shares and speed-ups go stale the day the code under them changes; they live
in ``docs/perf/`` (one page per measured decision, with the command that reproduces it), and the
comment keeps its one-line why. This test reads every comment (``tokenize``) and every docstring
(``ast``) in the package and fails naming ``file:line`` and the figure.

The rule, so that a bound is not mistaken for a measurement:

- **Forbidden**: a number with a sub-second time unit (``ms``, ``µs``, ``us``, ``ns``); a
  fractional or ranged number of seconds (``0.3 s``, ``12-15 s``); a percentage (except a step,
  ``per 10%``); a speed-up (``2-14x``, ``~100x``, ``five times slower``, but not ``several
  times``); a fractional or ranged size (``0.8 MB``, ``2.5-5 KB``); an approximate size
  (``~1 KB``); a throughput (``calls/s``, ``calls a second``); a percentile (``p50``, ``p95``,
  ``p99``, ``median``); a measurement's setting (``measured``, ``py-spy``, ``perf trace``, ``N
  runs of``, ``pairs of runs``, ``N sessions``); a share in words (``a third of a call``,
  ``half of all``); a vault or corpus of a given size (``on 10k notes``, ``the 6,500-note
  hub``, ``the 13k corpus``).
- **Allowed**: a whole-number size or whole seconds, which restate a bound or a setting
  (``64 KiB``, ``default 192 MB``, ``waits 600 s``), and counts that are not measurements.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "vault_mem"

_NUM = r"~?\d[\d,]*(?:\.\d+)?"
_RANGE = rf"{_NUM}(?:\s*(?:-|–|to)\s*{_NUM})?"
FIGURES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("a sub-second time", rf"\b{_RANGE}\s*(?:ms|µs|us|ns)\b"),
        ("a measured number of seconds", r"\b(?:\d+\.\d+|\d+\s*-\s*\d+(?:\.\d+)?)\s*s\b"),
        ("a percentage", r"(?<!per )(?<!every )\b\d+(?:\.\d+)?\s*%"),
        (
            "a speed-up",
            rf"(?:~|\b){_RANGE}x\b"
            r"|\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten) times (?:faster|slower|cheaper)\b",
        ),
        ("a measured size", r"\b(?:\d+\.\d+|\d+\s*-\s*\d+(?:\.\d+)?)\s*(?:[KMG]i?B)\b"),
        ("an approximate size", r"(?:~|\babout |\broughly )\d[\d,.]*\s*[KMG]i?B\b"),
        ("a throughput", r"\bcalls(?:/s\b| a second\b| per second\b)"),
        ("a percentile", r"\b(?:p50|p90|p95|p99|p999|median)\b"),
        ("a measurement", r"\b(?:measured|measurement|py-spy|perf trace)\b"),
        ("runs of a bench", r"\bpairs of runs\b|\bruns of each\b|\b\d+ runs (?:of|each)\b"),
        ("a bench's sessions", r"\b\d+ sessions\b"),
        (
            "a share in words",
            r"\b(?<!other )(?:half|a third|a quarter|a fifth|a tenth|a twentieth) of (?:a|an|the|all|its|\w+_\w+)\b"
            r"|\bhalf as much\b",
        ),
        (
            "a vault of a given size",
            r"\b(?:on|at|with|in) (?:the |a )?~?\d[\d,.]*k?[- ]notes?\b"
            r"|\b\d[\d,.]*k?-note (?:hub|corpus|vault)\b|\bthe \d[\d,.]*k corpus\b",
        ),
    )
)

def _texts(path: Path) -> list[tuple[int, str]]:
    """Every comment and docstring line of ``path``: (line number, text)."""
    source = path.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                first = body[0].value.lineno
                for offset, line in enumerate(body[0].value.value.splitlines()):
                    found.append((first + offset, line))
    return found


def _figures(path: Path) -> list[str]:
    relative = path.relative_to(PACKAGE.parent).as_posix()
    found = []
    for line, text in _texts(path):
        for name, pattern in FIGURES:
            match = pattern.search(text)
            if match:
                found.append(f"{relative}:{line}: {name} ({match.group(0).strip()!r}): {text.strip()}")
    return found


def test_no_comment_or_docstring_quotes_a_measured_figure() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _figures(path)]
    assert not found, "figures belong in docs/perf/, not in the code:\n" + "\n".join(found)


def test_the_rule_tells_a_figure_from_a_bound() -> None:
    measured = [
        "# commits at most every 50 ms answered 15% more calls",
        "# the write p99 fell in 3 pairs of runs",
        "# 2-14x faster on 13,415 notes",
        "# a full collection (0.1-0.7 s at 13,000 notes)",
        "# 0.8 MB a field a commit",
        "# measured: 2.5-5 KB on ~1 KB notes",
        "# 213-228 -> 237-242 calls/s",
        "# on the 6,500-note hub",
        "# a whole-index map costs ~100 ms at 100k notes",
        "# beats a NumericRange query by ~100x",
        "# an n-gram field makes the build five times slower",
        "# that was half of a mem_recall",
        "# a third of list_domains",
    ]
    bounds = [
        "# at most 64 KiB a read",
        "# the bound is VAULT_MEM_CACHE_MB (default 192 MB)",
        "# a swap waits up to 600 s for live writers",
        "# a line per 10% elsewhere",
        "# maximal runs of word characters",
        "# the lower-cased word runs of text",
        "# keeps a tenth of each limit free (PRUNE_TO)",
        "# reads may find it half there",
    ]
    for text in measured:
        assert any(p.search(text) for _, p in FIGURES), text
    for text in bounds:
        assert not any(p.search(text) for _, p in FIGURES), text
