"""`python -m bias_audit`: the command line, as the `bias-audit` script runs it."""

from bias_audit.worker.cli import main

main()
