"""Single-response and member-disagreement analysis: pure functions over text and lexicons
(the lexicons are loaded at the edge, by the `lexicons` package, and passed in)."""
