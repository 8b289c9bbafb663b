"""The write tools: each writes one file atomically inside the vault (or moves it to the
trash), indexes it before it answers, and never touches what the call did not change."""
