"""One version everywhere: pyproject.toml, the package, the newest CHANGELOG.md entry and
``vault-mem --version`` agree."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from vault_mem import __version__
from vault_mem.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent


def test_pyproject_and_package_carry_the_same_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == __version__


def test_the_newest_changelog_entry_is_this_version() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert headings, "CHANGELOG.md has no version headings"
    assert headings[0] == __version__


def test_version_option_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert __version__ in capsys.readouterr().out
