"""The one error a command raises to stop with a reason: the command line prints it as one line
and exits with its code (2: usage or input, 1: anything else)."""


class CommandError(Exception):
    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
