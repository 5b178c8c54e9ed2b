"""The shipped lexicons, rules and bias taxonomy (data files in this package; their sources and
licences are in SOURCES.md and in each file), loaded into analysis.responses.lexicon.Lexicons."""
