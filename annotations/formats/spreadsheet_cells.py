"""CSV that spreadsheets open as data: text that would start a formula gets a leading quote."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from numbers import Integral, Real
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["FORMULA_STARTS", "SpreadsheetWriter", "spreadsheet_cell", "spreadsheet_text"]

# OWASP's list for CSV injection: Excel, LibreOffice Calc or Google Sheets may read a cell
# that starts with one of these as a formula (tab and CR are on it because a spreadsheet may
# skip them and read what follows as the start).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """``text`` with a leading ``'`` when it starts with a character of ``FORMULA_STARTS``
    (``=``, ``+``, ``-``, ``@``, tab, CR), unchanged otherwise; the rest is never touched.

    The quote makes a spreadsheet show the cell as text instead of evaluating it (OWASP's
    advice against CSV injection). A reader who wants the stored value back removes one
    leading ``'`` when the character after it is in ``FORMULA_STARTS``; the only value that
    cannot be told apart this way is one that already began with ``'`` and such a character
    (the JSON and TREC exports carry every value exactly).
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def spreadsheet_cell(value: object) -> str:
    """The text of one CSV cell, decided by the value's type, never by its text.

    A number the platform computed or counted is passed as a number and written as one: an
    integer (``numbers.Integral``, a numpy integer too) as ``str(int(value))``, any other
    real number (a float, a numpy float) as ``repr(float(value))``, the shortest text that
    reads back to the same double (``-0.5``, ``-0.0`` and ``-1`` stay numbers; so do
    ``"nan"``, ``"inf"`` and ``"-inf"``, which the platform does not write). ``None`` is an
    empty cell. Everything else is text, whoever wrote it (names, qids, docnos, usernames,
    notes, labels, dates, booleans, a ``Decimal``) and goes through ``spreadsheet_text``: a
    string that merely looks like a number, such as a qid ``"-1"``, is neutralised too, since
    a user chose it. Callers therefore hand numbers over unformatted.
    """
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, Real):
        return spreadsheet_text(str(value))
    if isinstance(value, Integral):
        return str(int(value))
    return repr(float(value))


class SpreadsheetWriter:
    """``csv.writer`` (RFC 4180 quoting: a cell holding a comma, a double quote, CR or LF is
    quoted, inner quotes doubled) whose every cell goes through ``spreadsheet_cell``: every
    CSV the platform writes for people uses it. The CSV that carries ids to PostgreSQL's
    COPY (``annotations.ids``) does not: the database needs the values exact."""

    def __init__(self, sink: SupportsWrite[str], *, lineterminator: str = "\r\n") -> None:
        self._writer = csv.writer(sink, lineterminator=lineterminator)

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow([spreadsheet_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)
