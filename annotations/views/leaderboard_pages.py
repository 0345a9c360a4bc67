"""The leaderboard page's slice of the ranking: a page of runs, or the runs a search finds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.paginator import Paginator

if TYPE_CHECKING:
    from annotations.selectors.impact import AdjacentPair, FlipState
    from annotations.selectors.leaderboards import LeaderboardRow

# Runs per page: the table, the CI plot and the flip marks of 100 runs are about 160 kB;
# all 500 of a large campaign on one page were 800 kB (``?page=all`` still shows them).
PAGE_RUNS = 100
SEARCH_MAX_LENGTH = 200


@dataclass(frozen=True)
class LeaderboardSlice:
    """The rows one view of the leaderboard shows, in rank order, and where they sit."""

    rows: list[LeaderboardRow]
    number: int  # 1-based page number; 0 when every row (``all``) or a search is shown
    pages: int  # pages of the whole ranking at ``per_page``
    total: int  # runs on the leaderboard
    per_page: int
    search: str  # the name filter, "" for none

    @property
    def key(self) -> str:
        """Names this slice in cache keys: its page, or ``all`` for every row and for a
        search (whose text the keys add)."""
        return "all" if self.number == 0 else str(self.number)

    @property
    def paged(self) -> bool:
        """Whether the ranking spans pages (and so the page shows a pager)."""
        return self.pages > 1

    @property
    def partial(self) -> bool:
        return len(self.rows) < self.total

    @property
    def numbers(self) -> range:
        return range(1, self.pages + 1)

    @property
    def first_rank_index(self) -> int:
        """1-based position of the first row shown in the ranking (0 when none)."""
        return (self.number - 1) * self.per_page + 1 if self.number and self.rows else 0

    @property
    def last_rank_index(self) -> int:
        return self.first_rank_index + len(self.rows) - 1 if self.first_rank_index else 0


def leaderboard_slice(
    rows: list[LeaderboardRow], *, page: str | None, search: str | None
) -> LeaderboardSlice:
    """The rows of `page` (a number, ``all``, or anything else: the first page; past the end:
    the last) or, when `search` is given, every row whose run name contains it (any case)."""
    per_page = PAGE_RUNS
    pages = max(1, -(-len(rows) // per_page))
    wanted = (search or "").strip()[:SEARCH_MAX_LENGTH]
    if wanted:
        folded = wanted.casefold()
        found = [row for row in rows if folded in row.run.name.casefold()]
        return LeaderboardSlice(found, 0, pages, len(rows), per_page, wanted)
    if page == "all" or pages == 1:
        number = 0 if page == "all" else 1
        return LeaderboardSlice(list(rows), number, pages, len(rows), per_page, "")
    shown = Paginator(rows, per_page).get_page(page)
    return LeaderboardSlice(list(shown), shown.number, pages, len(rows), per_page, "")


def flips_shown(flips: FlipState, shown: LeaderboardSlice) -> list[AdjacentPair]:
    """The flip marks of the neighbours whose upper run is among the rows shown."""
    if not shown.partial:
        return list(flips.pairs)
    names = {row.run.name for row in shown.rows}
    return [pair for pair in flips.pairs if pair.upper in names]
