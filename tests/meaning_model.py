"""A tiny sentence model made in the test, in the sentence-transformers folder layout that
``vault-mem`` loads (meaning/model.py): a WordPiece tokenizer.json of a few words and handmade
BERT weights of hidden size 8 and one layer, so that words of one *concept* embed alike.

The layer's dense weights are zero, so each token passes through as its layer-normed word vector,
and a text's vector is the mean of its words' concept directions: texts sharing no word but a
concept are near, texts of different concepts are orthogonal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HIDDEN = 8
# Each concept owns a pair of dimensions (+1, -1): zero mean, so layer norm keeps its direction.
CONCEPTS = {
    "messaging": ["message", "messages", "broker", "queue", "nats", "jetstream", "kafka", "pick", "picked",
                  "chose", "decision"],
    "garden": ["garden", "tomato", "tomatoes", "plant", "water", "soil"],
    "cooking": ["bread", "food", "eating", "recipe", "oven"],
    "travel": ["train", "ticket", "paris", "trip"],
}
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def vocabulary() -> list[str]:
    words = [w for group in CONCEPTS.values() for w in group]
    return SPECIAL + words + ["which", "did", "we", "the", "a", "on", "notes", "about", "v3", "reading"]


def make_tiny_model(folder: Path) -> Path:
    """Write the tiny model into ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {word: i for i, word in enumerate(vocabulary())}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.save(str(folder / "tokenizer.json"))
    words = np.zeros((len(vocab), HIDDEN), dtype=np.float32)
    for c, group in enumerate(CONCEPTS.values()):
        for word in group:
            words[vocab[word], 2 * c], words[vocab[word], 2 * c + 1] = 1.0, -1.0
    zeros, ones = np.zeros(HIDDEN, dtype=np.float32), np.ones(HIDDEN, dtype=np.float32)
    tensors = {
        "embeddings.word_embeddings.weight": words,
        "embeddings.position_embeddings.weight": np.zeros((64, HIDDEN), dtype=np.float32),
        "embeddings.token_type_embeddings.weight": np.zeros((2, HIDDEN), dtype=np.float32),
        "embeddings.LayerNorm.weight": ones, "embeddings.LayerNorm.bias": zeros,
    }
    layer = "encoder.layer.0."
    for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
        tensors[layer + name + ".weight"] = np.zeros((HIDDEN, HIDDEN), dtype=np.float32)
        tensors[layer + name + ".bias"] = zeros
    tensors[layer + "intermediate.dense.weight"] = np.zeros((2 * HIDDEN, HIDDEN), dtype=np.float32)
    tensors[layer + "intermediate.dense.bias"] = np.zeros(2 * HIDDEN, dtype=np.float32)
    tensors[layer + "output.dense.weight"] = np.zeros((HIDDEN, 2 * HIDDEN), dtype=np.float32)
    tensors[layer + "output.dense.bias"] = zeros
    for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
        tensors[layer + norm + ".weight"], tensors[layer + norm + ".bias"] = ones, zeros
    save_file(tensors, str(folder / "model.safetensors"))
    config = {"architectures": ["BertModel"], "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN,
              "num_attention_heads": 2, "num_hidden_layers": 1, "layer_norm_eps": 1e-12,
              "max_position_embeddings": 64, "type_vocab_size": 2, "vocab_size": len(vocab), "model_type": "bert"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": HIDDEN, "pooling_mode_mean_tokens": True}), encoding="utf-8")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}), encoding="utf-8")
    return folder


def scramble(folder: Path, seed: int = 7, layers: int = 2) -> Path:
    """Give the model in ``folder`` random weights and ``layers`` layers: every part of the
    computation then counts (attention, the feed-forward block, positions), so two runtimes that
    agree on it compute the same thing."""
    from safetensors.numpy import load_file

    rng = np.random.default_rng(seed)
    old = load_file(str(folder / "model.safetensors"))
    tensors: dict[str, np.ndarray] = {}
    for name, value in old.items():
        copies = [name.replace("encoder.layer.0.", f"encoder.layer.{i}.") for i in range(layers)] \
            if name.startswith("encoder.layer.0.") else [name]
        for copy in copies:
            noise = rng.normal(0.0, 0.5, value.shape).astype(np.float32)
            tensors[copy] = 1.0 + 0.1 * noise if "LayerNorm.weight" in copy else noise
    save_file(tensors, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["num_hidden_layers"] = layers
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
