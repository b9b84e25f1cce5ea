"""The build stage: chunks in, the layered hypergraph out (extract, merge, reconcile, refine, layers),
incrementally and resumably, one document at a time."""
