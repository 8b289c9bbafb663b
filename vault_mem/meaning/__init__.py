"""The optional meaning stage: a sentence model run by numpy (model), what of a note is embedded
(chunks), the vectors beside the index (store), the background embedder (embedder) and the model
download (pull). Needs the ``meaning`` extra; docs/ranking.md, "By meaning"."""
