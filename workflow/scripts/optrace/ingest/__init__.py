"""Stage family ingest: reading one trace (git history, memory files, captures, metadata, autotune) into tables."""
