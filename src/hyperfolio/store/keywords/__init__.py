"""Keyword search shared by both backends: the words (`tokens`) and the tantivy index ranked by BM25 (`engine`)."""
