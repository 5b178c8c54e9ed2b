"""Build a pydantic model from values the code itself computed, without validation.

model_construct costs ~5 us for the 22-field SessionAudit, built once per audited session;
this sets the same four instance attributes model_construct sets (pydantic v2) in ~0.7 us.
tests/schemas/test_trusted.py checks the result equals a validated model, so a pydantic
change that breaks this fails the suite.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """values must hold every field, with the declared types, in the declared order (the
    dict becomes the model's __dict__: its order is the JSON's)."""
    if cls.__pydantic_post_init__ or cls.__private_attributes__ or cls.model_config.get("extra") == "allow":
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
