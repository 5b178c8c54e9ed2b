"""Readers of the field's public judge files, each as its project writes it, turned into the
contract's judge verdict events (schemas/judges.py): JudgeBench, AlpacaEval, FastChat's MT-Bench,
the Language Model Council, and our own events. Answers' texts are read for their lengths and
dropped; a question's text never leaves the reader (AlpacaEval's items are named by its hash)."""
