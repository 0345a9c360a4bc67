"""All-pairs significance on a 34-run campaign: letters, the two snapshot passes, the
significance page and the reports from the page, the API and `evaluate`."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotations import services
from annotations.models import Collection, LeaderboardSnapshot, Membership
from annotations.scores import refresh_queue, refresh_work, snapshots
from annotations.scores import significance as significance_pass
from tests.campaigns import RUNS, run_name
from tests.campaigns import campaign as build_campaign
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def campaign(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = build_campaign(write_file)
    organiser = UserFactory(username="olga")
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    assessor = UserFactory(username="alice")
    Membership.objects.create(collection=collection, user=assessor, role="assessor")
    return collection


def _as(username: str) -> Client:
    client = Client()
    client.force_login(UserFactory._meta.model.objects.get(username=username))
    return client


def _shares(a: str, b: str) -> bool:
    return bool(set(a) & set(b))


def test_clearly_separated_runs_of_a_34_run_campaign_get_different_letters(
    campaign: Collection,
) -> None:
    board = snapshots.leaderboard_complete(collection=campaign, k=10)
    assert board.significance_current and len(board.rows) == RUNS
    means = [row.ndcg for row in board.rows]
    assert means[0] > 0.7 and means[-1] < 0.1  # the shape of a real campaign
    letters = [row.letters for row in board.rows]
    assert len({letter for text in letters for letter in text}) >= 4  # not one group
    first, middle, last = board.rows[0], board.rows[RUNS // 2], board.rows[-1]
    assert not _shares(first.letters, middle.letters)
    assert not _shares(first.letters, last.letters)
    assert not _shares(middle.letters, last.letters)
    assert first.letters.startswith("a") and not first.below_best
    assert all(row.below_best for row in board.rows[RUNS // 2 :])
    # neighbours are close: most adjacent pairs share a letter (no chain of tiers needed)
    adjacent = sum(_shares(a, b) for a, b in itertools.pairwise(letters))
    assert adjacent >= (RUNS - 1) // 2
    # the letters are the HSD's, computed from the stored matrix with the documented seed
    stored = LeaderboardSnapshot.objects.get(collection=campaign, k=10)
    matrix = np.frombuffer(bytes(stored.per_query)).reshape(RUNS, len(stored.query_ids))
    assert np.allclose(matrix.mean(axis=1), means, rtol=0, atol=1e-12)
    document, _ = significance_pass.significance_compute(
        stamp=stored.stamp, run_ids=[row.run.id for row in board.rows], matrix=matrix
    )
    assert [entry[1] for entry in document["runs"]] == letters


def test_the_rows_refresh_leaves_the_hsd_to_a_pass_of_its_own(
    campaign: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshots.leaderboard_complete(collection=campaign, k=10)
    assert before.significance_current
    monkeypatch.setattr(refresh_queue, "_publish", lambda *a, **kw: None)  # no worker yet
    services.judgement_record(
        query=campaign.queries.get(qid="q000"),
        document=campaign.documents.get(docno="n0-0"),
        assessor=UserFactory(),
        grade=3,
        source="api",
    )
    calls: list[int] = []
    real = significance_pass.randomised_tukey_hsd

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(significance_pass, "randomised_tukey_hsd", counting)
    assert refresh_work.leaderboards_refresh_task(collection_id=campaign.id) == 2
    first = snapshots.leaderboard_read(collection=campaign, k=10)
    assert first is not None and first.computed_stamp != before.computed_stamp and not calls
    assert not first.significance_current  # the letters of the previous scores, marked
    assert first.rows[0].letters  # still shown meanwhile
    assert refresh_work.significance_task(collection_id=campaign.id) == 5
    assert refresh_work.significance_task(collection_id=campaign.id) == 10
    second = snapshots.leaderboard_read(collection=campaign, k=10)
    assert calls == [1, 1] and second is not None and second.significance_current
    third = snapshots.leaderboard_read(collection=campaign, k=10)
    assert calls == [1, 1] and third is not None and third.significance_current


def _judge(campaign: Collection, qid: str, grade: int) -> None:
    services.judgement_record(
        query=campaign.queries.get(qid=qid),
        document=campaign.documents.get(docno="n0-0"),
        assessor=UserFactory(),
        grade=grade,
        source="api",
    )


def _shown_stamp(client: Client, campaign: Collection) -> tuple[str, str]:
    """The stamp the leaderboard page's table carries (``data-stamp``), and the page."""
    html = client.get(f"/collections/{campaign.slug}/leaderboard/?k=10").content.decode()
    found = re.search(r'id="leaderboard-live" data-stamp="([^"]*)"', html)
    assert found
    return found.group(1), html


def test_the_open_page_holding_a_stale_board_waits_for_its_recomputation(
    campaign: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _as("olga")
    state_url = f"/collections/{campaign.slug}/leaderboard/state/?k=10"
    snapshots.leaderboard_complete(collection=campaign, k=10)
    monkeypatch.setattr(refresh_queue, "_publish", lambda *a, **kw: None)  # no worker yet
    _judge(campaign, "q003", 3)
    shown, html = _shown_stamp(client, campaign)
    assert 'id="leaderboard-stale"' in html  # the last board, marked refreshing
    state = client.get(state_url).json()
    assert state["table"] == shown != state["stamp"]  # a reload shows nothing new
    refresh_work.leaderboards_refresh_task(collection_id=campaign.id)  # the worker's rows
    assert client.get(state_url).json()["table"] == f"{state['stamp']}+significance"
    while refresh_work.significance_task(collection_id=campaign.id):
        pass
    assert client.get(state_url).json()["table"] == state["stamp"]


def test_the_worker_refresh_runs_both_passes(campaign: Collection) -> None:
    snapshots.leaderboards_refresh(collection=campaign)
    for k in (5, 10):
        stored = LeaderboardSnapshot.objects.get(collection=campaign, k=k)
        assert stored.significance["stamp"] == stored.stamp
        assert len(bytes(stored.pairs)) == 8 * RUNS * RUNS
        assert stored.significance["permutations"] == 10_000 and stored.significance["seed"] == 0


def test_permutations_are_reduced_in_whole_thousands_past_the_budget() -> None:
    assert significance_pass.HSD_BUDGET == 500_000_000
    assert significance_pass.hsd_permutations(110, 249) == 10_000
    assert significance_pass.hsd_permutations(500, 249) == 4_000
    assert significance_pass.hsd_permutations(5000, 2490) == 1_000  # never below


def test_reports_are_one_text_from_the_page_the_api_and_the_command(campaign: Collection) -> None:
    client = _as("olga")
    page = client.get(f"/collections/{campaign.slug}/leaderboard/report/?k=10&as=csv")
    api = client.get(f"/api/v1/collections/{campaign.slug}/leaderboard/report/?k=10&as=csv")
    out = io.StringIO()
    call_command("evaluate", campaign.slug, "--format", "leaderboard-csv", "--k", "10", stdout=out)
    assert page.status_code == 200 and api.status_code == 200
    assert page["Content-Type"].startswith("text/csv")
    assert 'filename="trec34-leaderboard-ndcg10.csv"' in page["Content-Disposition"]
    text = page.content.decode()
    assert api.content.decode() == text and out.getvalue() == text
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [
        "rank", "run", "mean", "ci_low", "ci_high", "judged", "queries", "group", "machine_grades"
    ]  # fmt: skip
    board = snapshots.leaderboard_current(collection=campaign, k=10)
    for cells, row in zip(rows[1:], board.rows, strict=True):
        assert cells[1] == row.run.name and len(cells[1]) == 150
        assert float(cells[2]) == row.ndcg and cells[2] == repr(row.ndcg)  # shortest round trip
        assert cells[7] == row.letters and cells[7]
        assert cells[8] == campaign.machine_grades == "people"  # a new collection's rule

    latex = client.get(f"/api/v1/collections/{campaign.slug}/leaderboard/report/?k=10&as=latex")
    out = io.StringIO()
    call_command("evaluate", campaign.slug, "--format", "leaderboard-latex", stdout=out)
    body = latex.content.decode()
    assert latex["Content-Type"].startswith("application/x-tex") and out.getvalue() == body
    assert r"\toprule" in body and r"\bottomrule" in body and "randomised Tukey HSD" in body
    assert body.count(r" \\") == RUNS + 1  # the header and one line per run
    top = board.rows[0]
    assert f"\\textbf{{{top.ndcg:.4f}}}" in body
    assert re.search(r"\[0\.\d{4}, 0\.\d{4}\]", body)


def test_a_report_of_an_unknown_kind_is_refused_with_a_clear_message(
    campaign: Collection,
) -> None:
    client = _as("olga")
    api = client.get(f"/api/v1/collections/{campaign.slug}/leaderboard/report/?as=pdf")
    assert api.status_code == 400 and "csv, latex" in api.content.decode()
    assert client.get(f"/collections/{campaign.slug}/leaderboard/report/?as=x").status_code == 404
    with pytest.raises(CommandError, match="leave --run out"):
        call_command("evaluate", campaign.slug, "--format", "leaderboard-csv", "--run", run_name(0))


def test_the_significance_page_draws_the_matrix_one_pair_and_the_heat_map(
    campaign: Collection,
) -> None:
    snapshots.leaderboard_complete(collection=campaign, k=10)
    client = _as("olga")
    html = client.get(
        f"/collections/{campaign.slug}/leaderboard/significance/?k=10"
        f"&a={run_name(0)}&b={run_name(RUNS - 1)}"
    ).content.decode()
    matrix = html[html.index('id="pair-matrix"') : html.index("</svg>", html.index("pair-matrix"))]
    detail = significance_pass.significance_detail(collection=campaign, k=10)
    assert detail is not None
    titles = re.findall(r'<g class="heat-row"><title>(.*?)</title>', matrix)
    assert titles == [f"{i + 1}. {detail.names[run]}" for i, run in enumerate(detail.pair_ids)]
    cells = json.loads(
        html[html.index('id="matrix-cells"') :].split(">", 1)[1].split("</script>", 1)[0]
    )  # each pair's numbers, read by pointing at its cell
    assert cells["names"] == [detail.names[run_id] for run_id in detail.pair_ids]
    assert cells["p"] == [[round(float(v), 4) for v in row] for row in detail.p_adjusted]
    assert {v < cells["alpha"] for row in cells["p"] for v in row} == {True, False}
    heat = html[html.index('id="query-heat-map"') :]
    heat = heat[: heat.index("</svg>")]
    rows = re.findall(r'<g class="heat-row"><title>(.*?)</title>(.*?)</g>', heat)
    board = snapshots.leaderboard_current(collection=campaign, k=10)
    assert [title for title, _ in rows] == [f"{row.rank}. {row.run.name}" for row in board.rows]
    for _, paths in rows:  # every row's bands cover its 50 queries once, 10 px a query
        bands = re.findall(r"M([\d.]+) [\d.]+h([\d.]+)v", paths)
        starts = sorted((float(x), float(w)) for x, w in bands)
        assert sum(w for _, w in starts) == 50 * 10
        assert all(a + w == b for (a, w), (b, _) in itertools.pairwise(starts))
    assert len(html) < 150_000  # banded rows and the numbers once: the page stays small
    assert 'id="pair-result"' in html and "significantly different" in html
    assert "simultaneous" in html and "10000 permutations" in html
    summary = re.search(r"(\d+) of (\d+) pairs", html)
    assert summary and int(summary.group(2)) == RUNS * (RUNS - 1) // 2
    assert 0 < int(summary.group(1)) < RUNS * (RUNS - 1) // 2

    by_qid = client.get(f"/collections/{campaign.slug}/leaderboard/significance/?k=10")
    hardest = client.get(
        f"/collections/{campaign.slug}/leaderboard/significance/?k=10&sort=difficulty"
    )
    heat_qid = by_qid.context["heat"]()
    heat_hard = hardest.context["heat"]()
    labels = [full for _, _, full in heat_qid["plot"].column_labels]
    assert labels == sorted(labels)
    detail = significance_pass.significance_detail(collection=campaign, k=10)
    assert detail is not None
    means = dict(
        zip([qid for qid, _ in detail.queries], detail.per_query.mean(axis=0), strict=True)
    )
    hard = [means[full] for _, _, full in heat_hard["plot"].column_labels]
    assert hard == sorted(hard)


def test_the_significance_page_stays_small_at_105_runs(
    transactional_db: None, write_file: Callable[..., Path]
) -> None:
    """105 runs with 150-character names over 50 queries: the matrix's 60 runs, the heat
    map's 50 and every pair's numbers in under 250 kB."""
    collection = build_campaign(write_file, slug="trec105", runs=105)
    Membership.objects.create(collection=collection, user=UserFactory(username="olga"),
                              role="organiser")  # fmt: skip
    snapshots.leaderboard_complete(collection=collection, k=10)
    html = _as("olga").get(f"/collections/{collection.slug}/leaderboard/significance/?k=10")
    text = html.content.decode()
    assert text.count('<g class="heat-row">') == 60 + 50
    assert "the matrix shows the best 60 of 105 runs" in text
    assert len(html.content) < 250_000, len(html.content)


def test_the_matrix_and_the_heat_map_draw_the_best_runs_up_to_their_caps(
    campaign: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotations.views import significance as page

    monkeypatch.setattr(page, "MATRIX_RUNS", 10)
    monkeypatch.setattr(page, "HEAT_RUNS", 12)
    snapshots.leaderboard_complete(collection=campaign, k=10)
    html = _as("olga").get(f"/collections/{campaign.slug}/leaderboard/significance/?k=10")
    text = html.content.decode()
    matrix = text[text.index('id="pair-matrix"') : text.index("</svg>", text.index("pair-matrix"))]
    assert matrix.count('<g class="heat-row">') == 10
    assert f"the matrix shows the best 10 of {RUNS} runs" in text
    assert "45 pairs of the 10 best runs" in text
    heat = text[text.index('id="query-heat-map"') :]
    assert heat[: heat.index("</svg>")].count('<g class="heat-row">') == 12
    assert f"the best 12 of {RUNS}" in text
    board = snapshots.leaderboard_current(collection=campaign, k=10)
    best = [row.run.name for row in board.rows]
    assert best[9] in matrix and best[10] not in matrix  # the best ten, in rank order
    start = text.index('id="pair-a"')
    run_select = text[start : text.index("</select>", start)]
    assert run_select.count("<option") == RUNS  # one pair of any two runs stays reachable


def test_the_pictures_are_blinded_as_the_leaderboard_is(campaign: Collection) -> None:
    assessor = _as("alice")  # the leaderboard is not opened to assessors
    for path in ("leaderboard/", "leaderboard/significance/", "leaderboard/report/?as=csv"):
        assert assessor.get(f"/collections/{campaign.slug}/{path}").status_code in (403, 404)
    api = assessor.get(f"/api/v1/collections/{campaign.slug}/leaderboard/report/?as=csv")
    assert api.status_code in (403, 404)
