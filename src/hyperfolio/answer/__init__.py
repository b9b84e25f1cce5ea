"""Evidence to a cited answer: extractive offline (`extractive`), or a model's (`model`) with its
citations checked (`citations`); across documents, both say where the documents state one value
differently (`conflicts`)."""
