"""Evidence to a cited answer: extractive offline (`extractive`), or a model's (`model`) with its
citations checked (`citations`)."""
