"""Pydantic models of every contract document (events, limits, records, results, report), and
their committed JSON Schemas; import each from its module."""
