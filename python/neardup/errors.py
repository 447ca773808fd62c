"""The errors neardup raises: one hierarchy, with the library's category and fields.

Every error names where the problem is (``source``, ``line``) when there is a place, and the
option that would change the outcome (``option``, a keyword argument of the functions here)
when there is one. The message says what is wrong and what to do, in one line.
"""


class Error(Exception):
    """Base of every neardup error.

    Attributes:
        source: the file (or ``<memory>`` for documents given in memory) the problem is in, or "".
        line: its 1-based line or record number, 0 where there is none.
        option: the keyword argument the message refers to (e.g. ``"on_error"``), or "".
    """

    def __init__(self, message: str, source: str = "", line: int = 0, option: str = ""):
        super().__init__(message)
        self.source = source
        self.line = line
        self.option = option

    def __reduce__(self):
        return (type(self), (str(self), self.source, self.line, self.option))


class UsageError(Error, ValueError):
    """Invalid arguments: a bad option value, an inconsistent combination."""


class FormatError(Error, ValueError):
    """Malformed input data: bad JSON, a missing text field, a damaged file."""


class IoError(Error, OSError):
    """A file cannot be opened, read or written."""


class InternalError(Error, RuntimeError):
    """A failure of a library neardup uses (cannot initialise zlib, ...)."""
