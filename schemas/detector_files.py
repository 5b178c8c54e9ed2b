"""The shapes of the files `calibrate` and `learn` write and the worker loads: checked as a whole
before use, so a list where a map belongs, a string where a number belongs, or NaN / Infinity
(which would turn every confidence into NaN) is a one-line error naming the field."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Finite = Annotated[float, Field(allow_inf_nan=False)]


class _File(BaseModel):
    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)


class CalibrationCurve(_File):
    x: list[Finite]
    y: list[Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]]
    reviews: int = Field(0, ge=0)


class CalibrationFile(_File):
    version: str
    types: dict[str, CalibrationCurve]


class LearnedModel(_File):
    features: Literal["ngrams", "minilm"] = "ngrams"
    intercept: Finite
    coef: list[Finite]
    buckets: list[int] = []  # ngrams: the hashed buckets with a weight
    idf: list[Finite] = []
    idf_unseen: Finite | None = None


class LearnedFile(_File):
    version: str
    tenants: list[str] = []
    threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    max_fpr: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.1
    hash_buckets: int
    ngrams: list[int]
    types: dict[str, LearnedModel]
