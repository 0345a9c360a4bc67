"""The error every TREC reader raises: the file, line and field at fault."""

from __future__ import annotations


class TrecFormatError(ValueError):
    """A file that cannot be read; ``str()`` gives ``path:line: field: problem``."""

    def __init__(self, path: str, line: int | None, field: str | None, problem: str) -> None:
        super().__init__(path, line, field, problem)
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = self.problem if self.field is None else f"{self.field}: {self.problem}"
        return f"{where}: {what}"
