"""`python -m bias_audit`: the command line, as the `bias-audit` script runs it."""

from bias_audit.worker.cli import main

if __name__ == "__main__":  # not again in a process started by spawning (serve's processes)
    main()
