"""Rendering the cross-session bias report: text (rich), JSON, CSV and self-contained HTML."""
