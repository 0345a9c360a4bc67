"""Significance groups of every kept measure: a worker's randomised Tukey HSD pass per measure,
equal to the HSD run on trec_eval's (pytrec_eval's) per-query values; the leaderboard's
letters column, the significance page and the API read it, and never compute it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from django.core.cache import cache
from django.test import Client
from lxml import html as lxml_html
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.metrics.hsd import randomised_tukey_hsd
from annotations.metrics.measure_names import parse_measure
from annotations.metrics.ndcg import trec_order
from annotations.models import Collection, MeasureSignificance, Query
from annotations.scores import measure_significance, refresh_queue, refresh_work
from annotations.scores.significance import hsd_permutations
from annotations.selectors import leaderboards
from tests.test_measure_pages import KEPT, RUNS, kept  # noqa: F401 (a fixture)
from tests.test_measure_sets import _trec_eval, _trec_eval_all

TESTED = [name for name in KEPT if not name.startswith("NumRet")]


@pytest.fixture(autouse=True)
def _no_boards_held() -> Iterator[None]:
    """Boards are cached per collection id and stamp; a rolled-back database reuses both."""
    cache.clear()
    yield
    cache.clear()


def _expected(collection: Collection, name: str, answered_by_all: bool = False) -> dict[str, Any]:
    """The HSD as computed outside the platform: pytrec_eval's per-query values, the runs
    ranked by trec_eval's `all` value (then by name), the queries in trec_eval's order
    (only those every run answered, when unanswered ones do not count)."""
    per_query = _trec_eval(collection)
    qids = trec_order({qid for _, qid, _ in per_query})
    if answered_by_all:  # trec_eval without -c: a run's mean is over the queries it answered
        answered = {
            run.name: set(run.rankings.values_list("query__qid", flat=True))
            for run in collection.runs.all()
        }
        means = {}
        for run, asked in answered.items():
            total, counted = 0.0, [qid for qid in qids if qid in asked]
            for qid in counted:
                total += per_query[(run, qid, name)]
            means[(run, name)] = total / len(counted)
        qids = [qid for qid in qids if all(qid in asked for asked in answered.values())]
    else:
        means = _trec_eval_all(collection, per_query)
    runs = sorted({run for run, _ in means}, key=lambda run: (-means[(run, name)], run))
    matrix = np.asarray(
        [[per_query[(run, qid, name)] for qid in qids] for run in runs], dtype=np.float64
    )
    result = randomised_tukey_hsd(
        matrix,
        permutations=hsd_permutations(len(runs), len(qids)),
        seed=leaderboards.HSD_SEED,
        alpha=leaderboards.ALPHA,
    )
    return {
        "runs": runs,
        "qids": qids,
        "means": [means[(run, name)] for run in runs],
        "matrix": matrix,
        "letters": dict(zip(runs, result.letters(), strict=True)),
        "below": dict(zip(runs, result.below_best(), strict=True)),
        "p": result.p_adjusted,
        "alpha": leaderboards.ALPHA,
    }


def _stored(collection: Collection, name: str) -> MeasureSignificance:
    return MeasureSignificance.objects.get(collection=collection, measure=name)


def _page(client: Client, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return lxml_html.fromstring(response.content.decode())


def test_every_kept_measure_gets_the_hsd_of_trec_evals_values(
    kept: tuple[Collection, Client],  # noqa: F811
) -> None:
    """The worker's passes, run after every change as a worker runs them, hold what the
    HSD gives on pytrec_eval's values: the same ranking, matrix, letters and p-values."""
    collection, _ = kept
    assert sorted(
        MeasureSignificance.objects.filter(collection=collection).values_list("measure", flat=True)
    ) == sorted(TESTED)  # the summed counts get no pass
    for name in TESTED:
        expected = _expected(collection, name)
        stored = _stored(collection, name)
        ids = {run.id: run.name for run in collection.runs.all()}
        assert [ids[run_id] for run_id, _, _ in stored.rows] == expected["runs"]
        assert [mean for _, _, mean in stored.rows] == expected["means"]
        qids = dict(Query.objects.filter(collection=collection).values_list("id", "qid"))
        assert [qids[query_id] for query_id in stored.query_ids] == expected["qids"]
        values = np.frombuffer(bytes(stored.per_query), dtype="<f8")
        assert values.tobytes() == expected["matrix"].tobytes()  # every bit
        runs = len(expected["runs"])
        pairs = np.frombuffer(bytes(stored.pairs), dtype="<f8").reshape(runs, runs)
        assert pairs.tobytes() == np.ascontiguousarray(expected["p"]).tobytes()
        letters = {ids[entry[0]]: entry[1] for entry in stored.significance["runs"]}
        below = {ids[entry[0]]: entry[2] for entry in stored.significance["runs"]}
        assert letters == expected["letters"] and below == expected["below"]
        assert stored.significance["stamp"] == stored.stamp
    # Runs do differ: the test is not vacuous.
    assert any(len(set(_expected(collection, name)["letters"].values())) > 1 for name in TESTED)


def test_the_leaderboard_by_a_measure_shows_its_letters_and_the_api_answers_them(
    kept: tuple[Collection, Client],  # noqa: F811
) -> None:
    collection, client = kept
    for name in ("AP", "Bpref"):
        expected = _expected(collection, name)
        tree = _page(client, f"/collections/kept/leaderboard/?k=5&measure={name}")
        headers = [
            " ".join(th.text_content().split())
            for th in tree.xpath("//table[@id='measure-leaderboard']/thead//th")
        ]
        assert headers[3] == "Group"
        rows = tree.xpath("//table[@id='measure-leaderboard']/tbody/tr")
        assert [tr.get("data-run") for tr in rows] == expected["runs"]
        for tr in rows:
            run = tr.get("data-run")
            assert tr.xpath(".//span[@class='group']")[0].text == expected["letters"][run]
            assert bool(tr.xpath(".//span[contains(@class, 'below')]")) == expected["below"][run]
        assert not tree.xpath("//*[@id='significance-pending']")
        stamp = tree.xpath("//div[@id='leaderboard-live']/@data-stamp")[0]
        state = client.get(f"/collections/kept/leaderboard/state/?k=5&measure={name}").json()
        assert stamp == state["table"] == state["stamp"]  # current: nothing to reload for
    # A count summed over queries: no groups.
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=NumRet(rel=1)")
    assert "Group" not in tree.xpath("//table[@id='measure-leaderboard']/thead")[0].text_content()

    api = APIClient()
    organiser = collection.memberships.get(role="organiser").user
    token, _ = Token.objects.get_or_create(user=organiser)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    body = api.get("/api/v1/collections/kept/leaderboard/?k=5&measure=RR").json()["measure"]
    expected = _expected(collection, "RR")
    assert [row["run"] for row in body["runs"]] == expected["runs"]
    assert {row["run"]: row["letters"] for row in body["runs"]} == expected["letters"]
    assert {row["run"]: row["below_best"] for row in body["runs"]} == expected["below"]
    best = int(np.argmax(expected["matrix"].mean(axis=1)))  # the highest mean
    assert [row["p_best"] for row in body["runs"]] == [
        float(expected["p"][best, expected["runs"].index(row["run"])]) for row in body["runs"]
    ]
    assert body["significance"]["current"] is True
    assert body["significance"]["permutations"] == 10_000 and body["significance"]["seed"] == 0
    counts = api.get("/api/v1/collections/kept/leaderboard/?k=5&measure=NumRet(rel=1)").json()
    assert counts["measure"]["significance"] is None
    assert {row["letters"] for row in counts["measure"]["runs"]} == {""}


def test_the_significance_page_draws_a_measures_matrix_pair_and_heat_map(
    kept: tuple[Collection, Client],  # noqa: F811
) -> None:
    collection, client = kept
    expected = _expected(collection, "P@5")
    runs, p = expected["runs"], expected["p"]
    a, b = runs[0], runs[-1]
    tree = _page(client, f"/collections/kept/leaderboard/significance/?k=5&measure=P@5&a={a}&b={b}")
    assert tree.xpath("//select[@id='measure-choice']/option[@selected]/@value") == ["P@5"]
    assert tree.xpath("//select[@id='measure-choice']/option/@value") == ["", *TESTED]
    significant = int(np.count_nonzero(np.triu(p < expected["alpha"], 1)))
    summary = " ".join(tree.xpath("//p[@id='matrix-summary']")[0].text_content().split())
    assert summary.startswith(f"{significant} of {RUNS * (RUNS - 1) // 2} pairs of the {RUNS}")
    result = " ".join(tree.xpath("//dl[@id='pair-result']")[0].text_content().split())
    difference = expected["means"][0] - expected["means"][-1]
    assert f"{difference:.4f}" in result and f"{float(p[0, -1]):.4f}" in result
    assert "P@5 per run and query" in tree.xpath("//h2[@id='heat-heading']")[0].text_content()
    assert tree.xpath("//svg[@id='query-heat-map']")
    assert "measure=P%405" in tree.xpath("//a[@id='sort-difficulty']/@href")[0]
    # nDCG@k's page is as it was; a count is refused with a reason and nDCG@k shown.
    tree = _page(client, "/collections/kept/leaderboard/significance/?k=5")
    assert "nDCG@5 per run and query" in tree.xpath("//h2[@id='heat-heading']")[0].text_content()
    tree = _page(client, "/collections/kept/leaderboard/significance/?k=5&measure=NumRet(rel=1)")
    assert "no significance groups" in tree.xpath("//*[@id='measure-error']")[0].text_content()


def test_letters_behind_the_scores_are_marked_until_the_worker_stores_the_next(
    kept: tuple[Collection, Client],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no worker, a judgement leaves a measure's letters behind: pages and the API say
    so and compute nothing; the worker's passes (one measure per task) bring them, and the
    open page's state then asks for a reload."""
    collection, client = kept
    published: list[str] = []
    monkeypatch.setattr(
        refresh_queue, "_publish", lambda task, *args, **kw: published.append(task.name)
    )
    before = _stored(collection, "AP").computed_at
    services.judgement_record(
        query=collection.queries.get(qid="q03"),
        document=collection.documents.get(docno="d7"),
        assessor=collection.memberships.get(role="organiser").user,
        grade=3,
        source="form",
    )
    refresh_work.leaderboards_refresh_task(collection_id=collection.id)
    assert "annotations.tasks.refresh_significance" in published
    state_url = "/collections/kept/leaderboard/state/?k=5&measure=AP"
    state = client.get(state_url).json()
    assert state["table"] == f"{state['stamp']}+significance"
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=AP")
    assert tree.xpath("//*[@id='significance-pending']")
    assert tree.xpath("//div[@id='leaderboard-live']/@data-stamp")[0] == state["table"]
    tree = _page(client, "/collections/kept/leaderboard/significance/?k=5&measure=AP")
    assert "being recomputed" in tree.xpath("//p[@id='significance-method']")[0].text_content()
    assert _stored(collection, "AP").computed_at == before  # reads computed nothing
    done = []
    while step := refresh_work.significance_task(collection_id=collection.id):
        done.append(step)
    assert done == [5, 10, *TESTED]  # nDCG@k's cutoffs first, then each measure
    assert client.get(state_url).json()["table"] == state["stamp"]
    expected = _expected(collection, "AP")
    ids = {run.id: run.name for run in collection.runs.all()}
    assert {
        ids[entry[0]]: entry[1] for entry in _stored(collection, "AP").significance["runs"]
    } == expected["letters"]


def test_a_measure_without_a_pass_is_being_computed_and_the_sweep_queues_it(
    kept: tuple[Collection, Client],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collection, client = kept
    published: list[str] = []
    monkeypatch.setattr(
        refresh_queue, "_publish", lambda task, *args, **kw: published.append(task.name)
    )
    MeasureSignificance.objects.filter(collection=collection, measure="RR").delete()
    tree = _page(client, "/collections/kept/leaderboard/significance/?k=5&measure=RR")
    assert tree.xpath("//p[@id='significance-computing'][@role='status']")
    assert not tree.xpath("//svg[@id='pair-matrix']")
    tree = _page(client, "/collections/kept/leaderboard/?k=5&measure=RR")
    assert {span.text for span in tree.xpath("//span[@class='group']")} == {"\u2013"}
    assert not MeasureSignificance.objects.filter(collection=collection, measure="RR").exists()
    assert published == []  # pages queue nothing
    assert refresh_work.leaderboards_sweep() == 1
    assert published == ["annotations.tasks.refresh_significance"]
    assert refresh_work.significance_task(collection_id=collection.id) == "RR"
    assert MeasureSignificance.objects.filter(collection=collection, measure="RR").exists()


def test_skipped_queries_test_runs_on_the_queries_every_run_answered_and_dropped_measures_go(
    kept: tuple[Collection, Client],  # noqa: F811
) -> None:
    collection, _ = kept
    services.collection_update(collection=collection, missing_queries="skip")
    collection.refresh_from_db()
    expected = _expected(collection, "AP", answered_by_all=True)
    assert len(expected["qids"]) < 30  # run03 misses some: they are left out
    stored = _stored(collection, "AP")
    qids = dict(Query.objects.filter(collection=collection).values_list("id", "qid"))
    assert [qids[query_id] for query_id in stored.query_ids] == expected["qids"]
    runs = len(expected["runs"])
    pairs = np.frombuffer(bytes(stored.pairs), dtype="<f8").reshape(runs, runs)
    assert pairs.tobytes() == np.ascontiguousarray(expected["p"]).tobytes()
    # A measure no longer kept loses its pass with the next one.
    services.collection_update(collection=collection, measures=["AP", "P@5"])
    collection.refresh_from_db()
    assert sorted(
        MeasureSignificance.objects.filter(collection=collection).values_list("measure", flat=True)
    ) == ["AP", "P@5"]
    assert measure_significance.measure_significance_behind(collection) is None
    assert parse_measure("AP") in measure_significance.tested_measures(collection)
