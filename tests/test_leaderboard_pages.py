"""The leaderboard page a page of runs at a time: ranks, the CI plot's scale, flip marks, search."""

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.test import Client

from annotations import services
from annotations.formats import charts
from annotations.models import Collection, Membership
from annotations.selectors.impact import AdjacentPair, FlipState
from annotations.selectors.leaderboards import LeaderboardRow, RunRef
from annotations.views.leaderboard_pages import flips_shown, leaderboard_slice
from annotations.views.significance import forest_of
from tests.factories import UserFactory

Capture = Callable[..., AbstractContextManager[Any]]
RUNS = 7
DOCS = [f"d{i}" for i in range(1, 9)]


@pytest.fixture(autouse=True)
def _small_pages(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setattr("annotations.views.leaderboard_pages.PAGE_RUNS", 3)


@pytest.fixture
def board_of_seven(
    db: None, django_capture_on_commit_callbacks: Capture, write_file: Any
) -> Collection:
    """Seven runs of distinct quality: run ``Run-i`` puts the relevant documents i places
    down (names of mixed case, for the search)."""
    with django_capture_on_commit_callbacks(execute=True):
        collection = services.collection_create(slug="paged", cutoffs=[5])
        qrels = "".join(f"q{q} 0 {doc} {3 if doc in ('d1', 'd2') else 0}\n" for q in (1, 2)
                        for doc in DOCS)  # fmt: skip
        services.judgements_import(
            collection=collection, source=write_file("p.qrels", qrels), assessor=UserFactory()
        )
        for index in range(RUNS):
            order = [*DOCS[2 : 2 + index], "d1", "d2", *DOCS[2 + index :]]
            services.run_store(
                collection=collection,
                run_name=f"Run-{index}",
                results={q: [(d, None, i) for i, d in enumerate(order, 1)] for q in ("q1", "q2")},
            )
    Membership.objects.create(
        collection=collection, user=UserFactory(username="olga"), role="organiser"
    )
    return collection


def _page(query: str) -> str:
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username="olga"))
    response = client.get(f"/collections/paged/leaderboard/?k=5{query}")
    assert response.status_code == 200
    return response.content.decode()


def _table_ranks(html: str) -> list[int]:
    table = html.split('id="leaderboard"')[1].split("</table>")[0]
    ranked = r'<td class="num">(\d+)</td>\s*<td class="name"><a'
    return [int(rank) for rank in re.findall(ranked, table)]


def _forest_rows(html: str) -> list[str]:
    return re.findall(r'<g class="forest-row[^"]*">\s*<title>([^<]*)</title>', html)


def _axis(html: str) -> tuple[list[str], str]:
    plot = html.split('id="forest-plot"')[1].split("</svg>")[0]
    ticks = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle"', plot)
    best = re.search(r'<line x1="([\d.]+)" x2="[\d.]+" y1="20" y2="[\d.]+" stroke="#0b4a82"', plot)
    assert best is not None
    return ticks, best.group(1)


def test_each_page_shows_its_ranks_in_the_table_and_the_plot_on_one_scale(
    board_of_seven: Collection,
) -> None:
    first, second, last = _page(""), _page("&page=2"), _page("&page=3")
    assert _table_ranks(first) == [1, 2, 3]
    assert _table_ranks(second) == [4, 5, 6]
    assert _table_ranks(last) == [7]
    assert [len(_forest_rows(html)) for html in (first, second, last)] == [3, 3, 1]
    assert _forest_rows(second)[0].startswith("4. Run-3")
    assert _axis(first) == _axis(second) == _axis(last)  # whole board's axis and best line
    assert "Runs 4\u20136 of 7 · page 2 of 3" in second
    assert 'rel="prev"' in second and 'rel="next"' in second
    assert 'rel="prev"' not in first and 'rel="next"' not in last
    assert '<span aria-current="page">2</span>' in second


def test_every_run_on_one_page_and_unreadable_pages_fall_back(board_of_seven: Collection) -> None:
    everything = _page("&page=all")
    assert _table_ranks(everything) == list(range(1, RUNS + 1))
    assert len(_forest_rows(everything)) == RUNS
    assert "All 7 runs." in everything and 'id="leaderboard-paged"' in everything
    assert _table_ranks(_page("&page=99")) == [7]  # past the end: the last page
    odd_pages = ("x", "0", "-1", "1.5", "%E2%91%A1", "9" * 40)  # circled two: not a decimal
    for odd in odd_pages:
        assert _table_ranks(_page(f"&page={odd}")) in ([1, 2, 3], [7])


def test_a_search_shows_the_matching_runs_with_their_ranks(board_of_seven: Collection) -> None:
    found = _page("&q=run-4")
    assert _table_ranks(found) == [5] and _forest_rows(found)[0].startswith("5. Run-4")
    assert "1 of 7 runs match “run-4”" in found
    none = _page("&q=%3Cscript%3E")
    assert _table_ranks(none) == [] and "No run matches this search." in none
    assert "<script>" not in none.split('id="leaderboard-slice"')[1].split("</form>")[0]


def test_a_board_within_one_page_has_no_pager(
    board_of_seven: Collection, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("annotations.views.leaderboard_pages.PAGE_RUNS", 100)
    html = _page("")
    assert _table_ranks(html) == list(range(1, RUNS + 1)) and 'id="leaderboard-slice"' not in html


def _row(rank: int) -> LeaderboardRow:
    return LeaderboardRow(
        rank=rank, run=RunRef(rank, f"r{rank}", None), ndcg=1 / rank, ci_low=0.5 / rank,
        ci_high=min(1.0, 2 / rank), judged=1.0, ndcg_condensed=1 / rank, queries=2,
        ndcg_top_grade=1 / rank, pending=False, letters="a", below_best=False, p_best=None,
    )  # fmt: skip


def _rows(count: int) -> list[LeaderboardRow]:
    return [_row(rank) for rank in range(1, count + 1)]


def test_the_slice_and_its_flip_marks() -> None:
    rows = _rows(7)
    shown = leaderboard_slice(rows, page="2", search=None)
    assert [row.rank for row in shown.rows] == [4, 5, 6] and shown.partial
    assert (shown.first_rank_index, shown.last_rank_index, shown.pages) == (4, 6, 3)
    pairs = [AdjacentPair(f"r{i}", f"r{i + 1}", can_flip=True, queued=0) for i in range(1, 7)]
    flips = FlipState(pairs=pairs, stamp="s", digest="d")
    assert [pair.upper for pair in flips_shown(flips, shown)] == ["r4", "r5", "r6"]
    whole = leaderboard_slice(rows, page="all", search=None)
    assert flips_shown(flips, whole) == pairs and whole.key == "all"


def test_the_plot_of_a_page_keeps_the_whole_boards_axis_and_best_line() -> None:
    rows = _rows(7)
    board: Any = type("Board", (), {"rows": rows})()
    page = forest_of(board, rows[3:6])()
    whole = forest_of(board, rows)()
    assert [item.row.label for item in page.items] == ["4. r4", "5. r5", "6. r6"]
    assert page.ticks == whole.ticks and page.best_x == whole.best_x == whole.items[0].x
    alone = charts.forest_plot([item.row for item in page.items])  # its own axis
    assert alone.best_x == alone.items[0].x
