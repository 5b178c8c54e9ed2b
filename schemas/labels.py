"""contracts.md "Labelled example": one JSON object a line of a labels file, as `learn --labels` and
`evaluate --labels` read it. A line that does not fit is refused with its file, line and reason."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints

OneLine = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$")]


class LabelledLine(BaseModel):
    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)

    text: str = Field(min_length=1, max_length=100_000)
    biased: StrictBool
    bias_type: OneLine | None = None
    query: str | None = Field(None, max_length=100_000)
    group: OneLine | None = None
    item: OneLine | None = None
    id: OneLine | None = None
