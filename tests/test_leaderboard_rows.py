"""The leaderboard's rows joined in Python are the markup of the template loop they replace."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from django.template import Context, Template

from annotations.formats import charts
from annotations.selectors.leaderboards import Leaderboard, LeaderboardRow, RunRef
from annotations.templatetags.leaderboard_rows import forest_items, leaderboard_rows
from tests.factories import CollectionFactory

# The loop of templates/annotations/scores/_leaderboard_table.html before it was joined in
# Python, kept as the reference.
LOOP = (Path(__file__).parent / "leaderboard_rows_loop.html").read_text()


class _Access:
    def __init__(self, run_links: str) -> None:
        self.run_links = run_links


class _User:
    def __init__(self, username: str) -> None:
        self.username = username


def _rows() -> list[LeaderboardRow]:
    names = [
        "plain",
        "a<b>&\"c'",
        "x" * 150,
        "with/slash",
        "a space",
        "ünïcode",
        "100%~#?",
        ";@=+$,!*()",
    ]
    rows = []
    flags = list(itertools.product([False, True], repeat=3))  # eight rows
    for rank, (name, (below, pending, ci)) in enumerate(zip(names, flags, strict=True), start=1):
        rows.append(
            LeaderboardRow(
                rank=rank,
                run=RunRef(rank, f"{name}{rank}", "amy" if rank % 2 else None),
                ndcg=0.5 / rank,
                ci_low=0.1 / rank if ci else None,
                ci_high=0.9 / rank if ci else None,
                judged=1 / 3,
                ndcg_condensed=0.08600000000000001,
                queries=40 + rank,
                ndcg_top_grade=0.4 / rank if rank % 3 else 0.7,
                pending=pending,
                letters="ab" if rank % 4 else "",
                below_best=below,
                p_best=0.00123456 if below else None,
            )
        )
    return rows


@pytest.mark.django_db
@pytest.mark.parametrize("run_links", ["all", "own", "none"])
@pytest.mark.parametrize("empty", [False, True])
def test_the_rows_are_the_template_loops_markup(run_links: str, empty: bool) -> None:
    collection = CollectionFactory(slug="rows-" + "s" * 60)
    board: Any = Leaderboard(
        collection=collection,
        k=10,
        rows=[] if empty else _rows(),
        unscored=[],
        state=None,  # type: ignore[arg-type]
    )
    context = {"board": board, "access": _Access(run_links), "user": _User("amy"), "k": 10}
    expected = Template(LOOP).render(Context({**context, "collection": collection}))
    joined = leaderboard_rows(board, board.rows, run_links, "amy", 10)
    assert _markup(joined) == _markup(expected)


def _markup(text: str) -> str:
    """The markup with the whitespace between tags (indentation, line breaks) taken out."""
    return re.sub(r">\s+<", "><", text).strip()


FOREST_LOOP = (Path(__file__).parent / "forest_items_loop.html").read_text()


def test_the_plot_rows_are_the_template_loops_markup() -> None:
    rows = [
        charts.ForestRow(
            label=f"{rank}. {name}",
            mean=0.8 / rank,
            low=0.7 / rank if rank % 3 else None,
            high=0.9 / rank if rank % 3 else None,
            letters=["a", "ab", "", "b<c"][rank % 4],
            below_best=rank % 2 == 0,
        )
        for rank, name in enumerate(["plain", "a<b>&\"c'", "x" * 150, "ünïcode", "r" * 29], 1)
    ]
    plot = charts.forest_plot(rows)
    expected = Template(FOREST_LOOP).render(Context({"plot": plot}))
    assert _markup(forest_items(plot)) == _markup(expected)
