"""A line of `bias-audit replay --prompts FILE`: a prompt whose variants the shipped lexicons make,
or the variants written out (group -> prompt, the first the reference)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints, model_validator

Text = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ReplayPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Name
    prompt: Text | None = None
    variants: dict[Name, Text] | None = None
    axis: Name | None = None  # with variants: the axis they vary (default "variants")

    @model_validator(mode="after")
    def _one_form(self) -> ReplayPrompt:
        if (self.prompt is None) == (self.variants is None):
            raise ValueError("give either 'prompt' or 'variants' (group -> prompt, the first the reference)")
        if self.variants is not None and len(self.variants) < 2:
            raise ValueError("'variants' needs at least two groups: the reference and one to compare")
        if self.axis is not None and self.variants is None:
            raise ValueError("'axis' goes with 'variants'; a plain prompt is varied along every axis it names")
        return self
