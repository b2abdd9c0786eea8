"""rerace.Error: what the command line says in one line, and the exit code it gives."""

from __future__ import annotations


class Error(Exception):
    """A rerace failure that is not a verdict: a bad trace (exit 65), a missing file (66), a
    usage error (64), a Python without Triton for the engine (69), an internal error (70)...

    ``message`` is the command line's one line (without its ``rerace: error:`` prefix),
    ``exit_code`` its exit status, ``command`` the command line run, when one was.

    >>> try:
    ...     rerace.Trace("missing.rrt")
    ... except rerace.Error as e:
    ...     print(e.exit_code, e.message)
    66 missing.rrt: cannot open the trace: No such file or directory
    """

    def __init__(self, message: str, exit_code: int, command: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = command

    def __str__(self) -> str:
        return f"{self.message} (exit {self.exit_code})"

    def __reduce__(self):
        return (type(self), (self.message, self.exit_code, self.command))
