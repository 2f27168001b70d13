"""The memory engine: storage, embeddings and retrieval. A library: no terminal I/O, no typer/rich imports."""
