"""What runs the sentence model (meaning/model.py, meaning/ort.py; docs/ranking.md, "By
meaning"): onnxruntime when it is installed, numpy otherwise, computing the same vectors, and a
search that ranks by words while its query is embedded gives the page a sequential one gives."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from meaning_model import make_tiny_model, scramble

from vault_mem.errors import InvalidInput, MeaningUnavailable
from vault_mem.meaning.embedder import Meaning
from vault_mem.meaning.model import load_model
from vault_mem.settings import Settings

TEXTS = ["which message broker did we pick?", "Queue decision v3: NATS JetStream", "water", "",
         "the garden soil and the tomatoes on the train to paris, about the bread in the oven " * 3]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_onnxruntime_computes_the_vectors_numpy_computes(tiny: Path, pooling: str) -> None:
    pytest.importorskip("onnxruntime")
    scramble(tiny)
    if pooling != "mean":
        (tiny / "1_Pooling" / "config.json").write_text(json.dumps({f"pooling_mode_{pooling}_token"
                                                                    if pooling == "cls" else
                                                                    "pooling_mode_max_tokens": True}))
    by_numpy, by_ort = load_model(tiny, "numpy", config=Settings()), load_model(tiny, "onnxruntime", config=Settings())
    assert (by_numpy.runtime, by_ort.runtime) == ("numpy", "onnxruntime")
    one_batch = by_ort.encode(TEXTS)  # texts of several lengths padded together
    assert np.abs(by_numpy.encode(TEXTS) - one_batch).max() < 1e-5
    alone = np.stack([by_ort.encode([t])[0] for t in TEXTS])  # and each alone, unpadded
    assert np.abs(alone - one_batch).max() < 1e-5
    assert abs(float(one_batch[0] @ one_batch[1])) < 0.999  # the random weights do mix the words


def test_auto_takes_onnxruntime_when_installed_and_numpy_when_not(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import onnxruntime  # noqa: F401
        assert load_model(tiny, config=Settings()).runtime == "onnxruntime"
    except ImportError:
        pass
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as on a machine without it
    assert load_model(tiny, config=Settings()).runtime == "numpy"
    with pytest.raises(MeaningUnavailable, match="pip install onnxruntime"):
        load_model(tiny, "onnxruntime", config=Settings())


def test_onnxruntime_embeds_a_query_by_eight_bit_weights_near_the_full_vector(tiny: Path) -> None:
    pytest.importorskip("onnxruntime")
    scramble(tiny)
    model, by_numpy = load_model(tiny, "onnxruntime", config=Settings()), load_model(tiny, "numpy", config=Settings())
    assert (model.query_bits, by_numpy.query_bits) == (8, 32)
    texts = [t for t in TEXTS if t]
    full = model.encode(texts)
    near = np.stack([model.encode_query(t) for t in texts])
    cosines = (full * near).sum(axis=1)
    assert cosines.min() >= Settings().meaning_query_agreement
    assert np.abs(full - near).max() > 1e-4  # computed apart, by the 8-bit weights
    assert np.abs(np.linalg.norm(near, axis=1) - 1).max() < 1e-5
    assert all(np.array_equal(by_numpy.encode_query(t), by_numpy.encode([t])[0]) for t in texts)
    meaning = Meaning.open(tiny, tiny.parent / "ix", config=Settings())
    assert meaning.describe()["query_bits"] == 8
    meaning.stop()


@pytest.mark.parametrize("change", [{"meaning_query_bits": 32}, {"meaning_query_agreement": 1.5}])
def test_queries_are_embedded_at_full_precision_when_asked_or_when_the_eight_bit_vectors_stray(
        tiny: Path, change: dict[str, float]) -> None:
    pytest.importorskip("onnxruntime")
    scramble(tiny)
    model = load_model(tiny, "onnxruntime", config=dataclasses.replace(Settings(), **change))  # type: ignore[arg-type]
    assert model.query_bits == 32
    assert all(np.array_equal(model.encode_query(t), model.encode([t])[0]) for t in TEXTS if t)


def test_a_runtime_not_known_is_refused_naming_the_choices(tiny: Path) -> None:
    with pytest.raises(InvalidInput, match="auto, onnxruntime, numpy"):
        load_model(tiny, "torch", config=Settings())


