"""Every kept measure where people look: the leaderboard ranked by one (with its bootstrap CI)
or all side by side, the query page, the run page, compare and its API; each number shown
equal to trec_eval's (pytrec_eval's) value."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from lxml import html as lxml_html
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import selectors, services
from annotations.metrics import significance
from annotations.metrics.measure_names import parse_measure
from annotations.metrics.ndcg import trec_order
from annotations.models import Collection, Run
from annotations.selectors import leaderboards, measure_values
from tests.factories import UserFactory
from tests.test_measure_sets import _trec_eval, _trec_eval_all

WRITE = Callable[..., Path]
KEPT = ["AP", "P@5", "RR", "nDCG", "Bpref", "R@10", "NumRet(rel=1)"]
RUNS = 12
QUERIES = 30


@pytest.fixture(autouse=True)
def _no_boards_held() -> Iterator[None]:
    """Boards are cached per collection id and stamp; a rolled-back database reuses both."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def kept(transactional_db: None, write_file: WRITE) -> tuple[Collection, Client]:
    """12 runs over 30 queries with tied scores (one run misses queries), most documents
    judged on a 0-3 scale, seven kept measures; the organiser logged in."""
    rng = random.Random(41)
    organiser = UserFactory(username="organiser")
    collection = services.collection_create(
        organiser=organiser, slug="kept", cutoffs=[5, 10], measures=KEPT
    )
    lines = [
        f"q{q:02d} 0 d{d} {rng.randint(0, 3)}"
        for q in range(QUERIES)
        for d in rng.sample(range(80), 40)
    ]
    services.judgements_import(
        collection=collection, source=write_file("qrels.txt", "\n".join(lines)), assessor=organiser
    )
    for number in range(RUNS):
        tag = f"run{number:02d}"
        run_lines = []
        for q in range(QUERIES):
            if number == 3 and q % 4 == 0:
                continue  # a run that misses queries: they count 0 (-c)
            for rank, d in enumerate(rng.sample(range(90), rng.randint(3, 60)), start=1):
                run_lines.append(f"q{q:02d} Q0 d{d} {rank} {rng.choice([1.0, 2.0, 3.5])} {tag}")
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(run_lines))
        )
    collection.refresh_from_db()
    client = Client()
    client.force_login(organiser)
    return collection, client


def _page(client: Client, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return lxml_html.fromstring(response.content.decode())


def _cells(row: Any) -> list[str]:
    return [" ".join(cell.text_content().split()) for cell in row.xpath("./td")]


def _vector(
    collection: Collection, expected: dict[tuple[str, str, str], float], run: str, name: str
) -> list[float]:
    qids = trec_order({qid for _, qid, _ in expected})
    return [expected[(run, qid, name)] for qid in qids]


def test_the_leaderboard_ranks_runs_by_a_kept_measure_with_its_bootstrap_ci(
    kept: tuple[Collection, Client],
) -> None:
    collection, client = kept
    expected = _trec_eval(collection)
    means = _trec_eval_all(collection, expected)
    for name in ("AP", "P@5", "Bpref"):
        board = measure_values.measure_board(collection, parse_measure(name))
        order = sorted(
            (run for run, measure in means if measure == name),
            key=lambda run: (-means[(run, name)], run),
        )
        assert [row.run.name for row in board.rows] == order
        for row in board.rows:
            assert row.mean == means[(row.run.name, name)]  # every bit
            # The engine's bootstrap with the nDCG@k leaderboard's resamples, confidence, seed.
            assert (row.ci_low, row.ci_high) == significance.bootstrap_ci(
                _vector(collection, expected, row.run.name, name),
                resamples=leaderboards.BOOTSTRAP_RESAMPLES,
                confidence=leaderboards.CONFIDENCE,
                seed=leaderboards.BOOTSTRAP_SEED,
            )
        tree = _page(client, f"/collections/kept/leaderboard/?k=5&measure={name}")
        shown = tree.xpath("//table[@id='measure-leaderboard']/tbody/tr")
        assert [tr.get("data-run") for tr in shown] == order
        for tr, row in zip(shown, board.rows, strict=True):
            cells = _cells(tr)
            assert cells[1] == str(row.rank)
            assert cells[4] == f"{row.mean:.4f}"  # after the significance group
            assert cells[5] == f"[{row.ci_low:.4f}, {row.ci_high:.4f}]"
        note = tree.xpath("//p[@id='measure-shown']")[0].text_content()
        assert f"Ranked by mean {name}" in note and "nDCG@5's only" in note
        assert tree.xpath("//select[@id='measure-choice']/option[@selected]/@value") == [name]
    # A count is summed as trec_eval's all line does: no interval.
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=NumRet(rel=1)")
    assert "95% CI" not in tree.xpath("//table[@id='measure-leaderboard']/thead")[0].text_content()
    first = tree.xpath("//table[@id='measure-leaderboard']/tbody/tr")[0]
    assert (
        _cells(first)[3] == f"{max(v for (r, m), v in means.items() if m == 'NumRet(rel=1)'):.4f}"
    )


def test_every_kept_measure_side_by_side_on_the_leaderboard(
    kept: tuple[Collection, Client],
) -> None:
    collection, client = kept
    means = _trec_eval_all(collection, _trec_eval(collection))
    # Beside nDCG@k's ranking: one column per kept measure after nDCG@k's columns.
    tree = _page(client, "/collections/kept/leaderboard/?k=5&side=all")
    headers = [
        " ".join(th.text_content().split())
        for th in tree.xpath("//table[@id='leaderboard']/thead//th")
    ]
    assert headers[-len(KEPT) :] == KEPT
    rows = tree.xpath("//table[@id='leaderboard']/tbody/tr")
    assert len(rows) == RUNS
    for tr in rows:
        values = _cells(tr)[-len(KEPT) :]
        assert values == [f"{means[(tr.get('data-run'), name)]:.4f}" for name in KEPT]
    # Ranked by one measure, the others beside it (nDCG@k included).
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=RR&side=all")
    headers = [
        " ".join(th.text_content().split())
        for th in tree.xpath("//table[@id='measure-leaderboard']/thead//th")
    ]
    others = [name for name in KEPT if name != "RR"]
    assert headers[-len(others) - 1 : -1] == others
    for tr in tree.xpath("//table[@id='measure-leaderboard']/tbody/tr"):
        values = _cells(tr)[-len(others) - 1 : -1]
        assert values == [f"{means[(tr.get('data-run'), name)]:.4f}" for name in others]
    # The cutoff links keep the choice.
    assert tree.xpath("//nav[@class='cutoffs']/a/@href")[0] == "?k=5&measure=RR&side=all"


def test_a_measure_the_collection_does_not_keep_shows_nDCG_and_says_why(
    kept: tuple[Collection, Client],
) -> None:
    _, client = kept
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=ERR@20")
    assert (
        "is not kept by this collection" in tree.xpath("//*[@id='measure-error']")[0].text_content()
    )
    assert tree.xpath("//table[@id='leaderboard']")


def test_the_query_page_shows_every_runs_value_of_every_kept_measure(
    kept: tuple[Collection, Client],
) -> None:
    collection, client = kept
    expected = _trec_eval(collection)
    for qid in ("q00", "q07"):
        tree = _page(client, f"/collections/kept/queries/{qid}/?k=5")
        headers = [
            " ".join(th.text_content().split())
            for th in tree.xpath("//table[@id='query-runs']/thead//th")
        ]
        assert headers == ["Run", "nDCG@5", "judged@5", *KEPT]
        rows = tree.xpath("//table[@id='query-runs']/tbody/tr")
        assert len(rows) == RUNS
        for tr in rows:
            run = " ".join(tr.xpath("./td")[0].text_content().split())
            values = tr.xpath("./td[contains(@class, 'measure')]")
            if run == "run03" and qid == "q00":  # not answered: nothing stored
                assert [td.text_content() for td in values] == ["\u2013"] * len(KEPT)
                continue
            assert [float(td.get("data-value")) for td in values] == [
                expected[(run, qid, name)] for name in KEPT
            ]  # every bit (repr)


def test_the_run_page_shows_per_query_values_and_means_of_every_kept_measure(
    kept: tuple[Collection, Client],
) -> None:
    collection, client = kept
    expected = _trec_eval(collection)
    means = _trec_eval_all(collection, expected)
    for run in ("run03", "run07"):
        tree = _page(client, f"/collections/kept/runs/{run}/?k=5")
        mean_cells = tree.xpath("//table[@id='run-measure-means']/tbody/tr/td")
        assert [td.text_content() for td in mean_cells] == [
            f"{means[(run, name)]:.4f}" for name in KEPT
        ]
        rows = tree.xpath("//table[@id='per-query']/tbody/tr")
        assert len(rows) == QUERIES  # zero mode: every evaluated query, unanswered ones 0
        for tr in rows:
            qid = tr.xpath("./td")[0].text_content().strip()
            values = [
                float(td.get("data-value")) for td in tr.xpath("./td[contains(@class, 'measure')]")
            ]
            assert values == [expected[(run, qid, name)] for name in KEPT]


def test_compare_page_and_api_pair_a_kept_measures_per_query_values(
    kept: tuple[Collection, Client],
) -> None:
    collection, client = kept
    expected = _trec_eval(collection)
    means = _trec_eval_all(collection, expected)
    organiser = collection.memberships.get(role="organiser").user
    api = APIClient()
    token, _ = Token.objects.get_or_create(user=organiser)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    body = api.get("/api/v1/collections/kept/compare/?a=run03&b=run05&k=5&measure=AP").json()
    assert body["measure"] == "AP"
    assert body["queries"] == QUERIES
    assert body["mean_a"] == means[("run03", "AP")] and body["mean_b"] == means[("run05", "AP")]
    for row in body["per_query"]:
        a, b = expected[("run03", row["qid"], "AP")], expected[("run05", row["qid"], "AP")]
        assert (row["a"], row["b"], row["difference"]) == (a, b, a - b)
    wins = sum(row["a"] > row["b"] for row in body["per_query"])
    assert body["wins"] == wins
    assert (
        api.get("/api/v1/collections/kept/compare/?a=run03&b=run05&k=5").json()["measure"]
        == "nDCG@5"
    )
    refused = api.get("/api/v1/collections/kept/compare/?a=run03&b=run05&measure=ERR@20")
    assert refused.status_code == 400 and "not kept" in str(refused.json())

    tree = _page(client, "/collections/kept/compare/?a=run03&b=run05&k=5&measure=AP")
    assert "by AP" in tree.xpath("//h2[@id='summary-heading']")[0].text_content()
    assert tree.xpath("//select[@id='compare-measure']/option[@selected]/@value") == ["AP"]
    assert tree.xpath("//*[@id='compare-p']")[0].text_content() == f"{body['p_value']:.4f}"
    shown = {
        tr.get("data-qid"): [
            float(td.get("data-value")) for td in tr.xpath("./td[@data-value]")[:3]
        ]
        for tr in tree.xpath("//table[@id='compare-rows']/tbody/tr")
    }
    assert shown == {
        row["qid"]: [row["a"], row["b"], row["difference"]] for row in body["per_query"]
    }


def test_a_measure_board_keeps_the_intervals_of_runs_whose_values_did_not_move(
    kept: tuple[Collection, Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a judgement only the runs whose values moved are resampled; the board equals
    the one computed from nothing."""
    collection, _ = kept
    measure = parse_measure("P@5")
    measure_values.measure_board(collection, measure)
    run = Run.objects.get(collection=collection, name="run05")
    relevant = {
        docno
        for qid, docno, grade in selectors.qrels_rows(collection=collection)
        if qid == "q02" and grade > 0
    }
    top = [row[1] for row in selectors.run_rows(run=run) if row[0] == "q02"][:5]
    docno = next(d for d in top if d not in relevant)  # P@5 moves for runs with it in the top 5
    services.judgement_record(
        query=collection.queries.get(qid="q02"),
        document=collection.documents.get(docno=docno),
        assessor=collection.memberships.get(role="organiser").user,
        grade=3,
        source="form",
    )
    resampled: list[int] = []
    real = leaderboards.significance_arrays.bootstrap_cis

    def counting(rows: Any, **options: Any) -> Any:
        resampled.append(len(rows))
        return real(rows, **options)

    monkeypatch.setattr(leaderboards.significance_arrays, "bootstrap_cis", counting)
    after = measure_values.measure_board(collection, measure)
    assert 0 < resampled[0] < RUNS
    cache.clear()
    assert measure_values.measure_board(collection, measure).rows == after.rows
    assert resampled[-1] == RUNS
