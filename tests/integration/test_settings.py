"""vault_mem/settings.py: one line per setting with a docs link that exists; the environment a
person sets, refused with a clear message when wrong; each process-wide tuning switchable."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vault_mem import settings
from vault_mem.errors import InvalidInput

ROOT = Path(__file__).resolve().parent.parent.parent


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_setting_is_one_line_with_its_why_and_a_docs_anchor_that_exists() -> None:
    source = (ROOT / "vault_mem" / "settings.py").read_text(encoding="utf-8")
    source = source[source.index("class Settings:"):source.index("_current = ")]
    lines = {m.group(1): m.group(0) for m in re.finditer(r"^    (\w+): [^=]+ = .*$", source, re.M)}
    assert set(lines) == {f.name for f in dataclasses.fields(settings.Settings)}
    for name, line in lines.items():
        link = re.search(r"# \S.* \(docs/([\w-]+\.md)#([\w-]+)\)$", line)
        assert link, f"{name}: no why and docs link: {line}"
        page = (ROOT / "docs" / link.group(1)).read_text(encoding="utf-8")
        anchors = {slug(h) for h in re.findall(r"^#+ (.*)$", page, re.M)}
        assert link.group(2) in anchors, f"{name}: docs/{link.group(1)} has no #{link.group(2)}"


def test_the_environment_sets_what_a_person_tunes_and_names_a_wrong_value() -> None:
    assert settings.from_environment({}) == settings.Settings()
    chosen = settings.from_environment({"VAULT_MEM_CACHE_MB": "64", "VAULT_MEM_GC_TUNING": "off",
                                        "VAULT_MEM_PRIORITIES": "0"})
    assert (chosen.cache_mb, chosen.tune_gc, chosen.tune_serving_nice, chosen.tune_merge_priority) == (64, False,
                                                                                                      False, False)
    assert settings.from_environment({"VAULT_MEM_CACHE_MB": "0.1"}).cache_mb == 1  # as before: under 1 counts as 1
    assert settings.from_environment({"VAULT_MEM_SIMILAR": "0"}).similar_shown == 0  # no lookup at all
    assert settings.from_environment({"VAULT_MEM_SIMILAR": " 5 "}).similar_shown == 5
    assert settings.from_environment({"VAULT_MEM_QUERY_BITS": "32"}).meaning_query_bits == 32
    for name, value in (("VAULT_MEM_CACHE_MB", "lots"), ("VAULT_MEM_CACHE_MB", "nan"), ("VAULT_MEM_CACHE_MB", "inf"),
                        ("VAULT_MEM_GC_TUNING", "maybe"), ("VAULT_MEM_SIMILAR", "1.5"), ("VAULT_MEM_SIMILAR", "-1"),
                        ("VAULT_MEM_SIMILAR", "few"), ("VAULT_MEM_QUERY_BITS", "16"), ("VAULT_MEM_QUERY_BITS", "8.0")):
        with pytest.raises(InvalidInput) as caught:
            settings.from_environment({name: value})
        assert name in caught.value.message and repr(value) in caught.value.message


def test_the_command_line_refuses_a_wrong_setting_by_environment_naming_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_")} | {"VAULT_MEM_CACHE_MB": "lots"}
    done = subprocess.run([sys.executable, "-m", "vault_mem", "status", "--vault", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "VAULT_MEM_CACHE_MB" in done.stderr and "Traceback" not in done.stderr


def run_child(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_process_wide_tuning_is_off_when_its_setting_says_so() -> None:
    out = run_child("""
        import dataclasses, gc, os, sys
        from vault_mem import settings
        from vault_mem.runtime import tuning
        off = dataclasses.replace(settings.current(), tune_gc=False, tune_serving_nice=False,
                                  tune_switch_interval=False, tune_merge_priority=False)
        threshold, interval = gc.get_threshold(), sys.getswitchinterval()
        nice = os.nice(0) if hasattr(os, "nice") else 0
        session = os.getsid(0) if hasattr(os, "getsid") else 0
        assert tuning.settle_collector(lambda seconds: True, off) is None and gc.get_threshold() == threshold
        tuning.writer_takes_writes_quickly(off)
        assert sys.getswitchinterval() == interval
        tuning.serving_worker_gives_way(off)
        tuning.merge_gives_way(off)
        assert (os.nice(0) if hasattr(os, "nice") else 0) == nice
        assert (os.getsid(0) if hasattr(os, "getsid") else 0) == session
        on = dataclasses.replace(off, tune_switch_interval=True, tune_gc=True)
        tuning.writer_takes_writes_quickly(on)
        assert sys.getswitchinterval() == on.writer_switch_interval
        assert tuning.settle_collector(lambda seconds: True, on) is not None and gc.get_threshold()[0] == on.gc_young
        print("ok")
    """)
    assert out.strip() == "ok"
