"""Text shaped to make regular expressions backtrack: each must parse in linear time.

The real corpus held a note whose 127,000-character code line (blanked to spaces when
code is masked) took 206 s to read before the task regex was fixed. The child process
and its generous timeout only catch a hang: a quadratic regex on these 300,000-character
inputs takes minutes, a linear one a fraction of a second.
"""

from __future__ import annotations

import subprocess
import sys

N = 300_000
SHAPES = {
    "spaces": "' ' * N", "blockquote-blanks": "'> \\t' * (N // 3)", "brackets": "'[' * N",
    "wikilink-opens": "'[[' * (N // 2)", "embed-opens": "'![[' * (N // 3)", "md-link-opens": "'[a](' * (N // 4)",
    "angle-link": "'[x](<' + 'a ' * (N // 2)", "long-md-path": "'[x](' + 'a/' * (N // 2) + '.md'",
    "hashes": "'#a' * (N // 2)", "backticks": "'`a' * (N // 2)", "checkboxes": "'- [ ] x\\n' * (N // 8)",
    "nested-quotes": "'>' * N + ' - [ ] a'", "url": "'http://' + 'a' * N", "fences": "'```\\n' * (N // 4)",
}


def test_no_regex_backtracks_quadratically() -> None:
    lines = ["from vault_mem.settings import Settings", "from vault_mem.vault.reader import parse_text",
             "config = Settings()", f"N = {N}"]
    for name, expr in SHAPES.items():
        lines.append(f"parse_text('{name}.md', {expr}, '', 0, 0, [], config=config)")
        lines.append(f"parse_text('{name}.md', '---\\ntitle: x\\n---\\n```\\n' + {expr} + '\\n```\\n', '', 0, 0, [],"
                     " config=config)")
    lines.append("print('ok')")
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
