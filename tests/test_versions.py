"""Qrels versions: cheap tags, byte-identical exports later, leaderboards and diffs as of."""

from collections.abc import Callable

import pytest
from django.core.exceptions import ValidationError
from scipy.stats import kendalltau

from annotations import selectors, services
from annotations.models import Collection, Judgement
from annotations.selectors.versions import (
    Mark,
    leaderboard_as_of,
    qrels_text_as_of,
    versions_diff,
)
from annotations.services.versions import qrels_version_tag
from tests.factories import UserFactory
from tests.stored import run_rows

QRELS = """\
q1 0 d1 3
q1 0 d2 0
q1 0 d3 1
q2 0 e1 2
q2 0 e2 0
"""
RUNS = {
    "top": "q1 Q0 d1 1 3 top\nq1 Q0 d3 2 2 top\nq2 Q0 e1 1 2 top\n",
    "mid": "q1 Q0 d3 1 3 mid\nq1 Q0 d1 2 2 mid\nq2 Q0 e2 1 2 mid\nq2 Q0 e1 2 1 mid\n",
    "low": "q1 Q0 d2 1 3 low\nq1 Q0 d4 2 2 low\nq2 Q0 e2 1 2 low\n",
}


def _export(collection: Collection) -> str:
    return b"".join(selectors.qrels_lines(collection=collection)).decode()


def _as_text(collection: Collection, mark: Mark) -> str:
    return "".join(qrels_text_as_of(collection=collection, mark=mark))


def _judge_more(collection: Collection) -> None:
    """Change a grade, add a pair, delete one, add a second assessor, adjudicate."""
    alice, bob, olga = (UserFactory(username=n) for n in ("alice", "bob", "olga"))
    q1, q2 = collection.queries.get(qid="q1"), collection.queries.get(qid="q2")
    doc = collection.documents.get
    services.judgement_record(
        query=q1, document=doc(docno="d2"), assessor=alice, grade=3, source="form"
    )
    services.judgement_record(
        query=q1, document=doc(docno="d4"), assessor=alice, grade=2, source="form"
    )
    services.judgement_record(
        query=q2, document=doc(docno="e1"), assessor=bob, grade=0, source="form"
    )
    gone = Judgement.objects.get(query=q2, document__docno="e2")
    services.judgement_delete(judgement=gone, source="api")
    from annotations.models import Membership

    Membership.objects.create(collection=collection, user=olga, role=Membership.ORGANISER)
    services.adjudication_record(query=q2, document=doc(docno="e1"), organiser=olga, grade=1)


def test_a_version_exports_the_same_bytes_before_and_after_further_judging(
    load_trec: Callable[..., Collection],
) -> None:
    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    first = qrels_version_tag(collection=campaign, name="round-1", note="after the import")
    then = _export(campaign)
    assert _as_text(campaign, Mark.of_version(first)) == then
    _judge_more(campaign)
    assert _export(campaign) != then
    assert _as_text(campaign, Mark.of_version(first)) == then  # the same bytes, later
    second = qrels_version_tag(collection=campaign, name="round-2")
    # replaying the whole history gives today's export: grades changed, added, deleted,
    # several assessors combined by the rule, an adjudication over them
    assert _as_text(campaign, Mark.of_version(second)) == _export(campaign)
    assert second.history_id > first.history_id


def test_a_version_by_time_is_the_history_up_to_that_moment(
    load_trec: Callable[..., Collection],
) -> None:
    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    version = qrels_version_tag(collection=campaign, name="v1")
    then = _export(campaign)
    _judge_more(campaign)
    assert _as_text(campaign, Mark.of_time(campaign, version.created)) == then


def test_the_leaderboard_as_of_a_version_equals_a_collection_loaded_with_its_qrels(
    load_trec: Callable[..., Collection],
) -> None:
    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    _judge_more(campaign)
    version = qrels_version_tag(collection=campaign, name="final")
    fresh = load_trec("fresh", _as_text(campaign, Mark.of_version(version)), RUNS, [2, 3])
    for k in (2, 3):
        board = leaderboard_as_of(collection=campaign, mark=Mark.of_version(version), k=k)
        stored = {name: m.ndcg for name, m in run_rows(run__collection=fresh) if m.k == k}
        assert {row.run: row.ndcg for row in board.rows} == stored  # bit for bit
        assert board.ranking == sorted(stored, key=lambda n: (-stored[n], n))


def test_the_diff_of_two_versions_lists_pairs_scores_ranks_and_tau(
    load_trec: Callable[..., Collection],
) -> None:
    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    first = Mark.of_version(qrels_version_tag(collection=campaign, name="a"))
    _judge_more(campaign)
    second = Mark.of_version(qrels_version_tag(collection=campaign, name="b"))
    diff = versions_diff(collection=campaign, first=first, second=second, k=2)
    assert [(c.qid, c.docno, c.before, c.after) for c in diff.added] == [("q1", "d4", None, 2)]
    assert [(c.qid, c.docno, c.before, c.after) for c in diff.removed] == [("q2", "e2", 0, None)]
    # q1 d2: 0 -> alice's 3 (lower median of the import's 0 and her 3 is 0: no change);
    # q2 e1: 2 -> adjudicated 1.
    assert [(c.qid, c.docno, c.before, c.after) for c in diff.changed] == [("q2", "e1", 2, 1)]
    board_a = leaderboard_as_of(collection=campaign, mark=first, k=2)
    board_b = leaderboard_as_of(collection=campaign, mark=second, k=2)
    a = {row.run: row for row in board_a.rows}
    for change in diff.runs:
        assert change.before == a[change.run].ndcg and change.rank_before == a[change.run].rank
    names = sorted(a)
    b = {row.run: row.ndcg for row in board_b.rows}
    expected = kendalltau([a[n].ndcg for n in names], [b[n] for n in names]).statistic
    assert diff.tau == pytest.approx(expected)


def test_a_version_name_is_unique_in_its_collection(load_trec: Callable[..., Collection]) -> None:
    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    qrels_version_tag(collection=campaign, name="v1")
    with pytest.raises(ValidationError, match="name"):
        qrels_version_tag(collection=campaign, name="v1")
    with pytest.raises(ValidationError, match="name"):
        qrels_version_tag(collection=campaign, name="not a slug")


def test_the_api_tags_exports_and_scores_versions(load_trec: Callable[..., Collection]) -> None:
    from rest_framework.test import APIClient

    from annotations.models import Membership

    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    olga = UserFactory(username="olga-api")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    client = APIClient()
    client.force_authenticate(olga)
    base = "/api/v1/collections/campaign"
    created = client.post(f"{base}/versions/", {"name": "r1", "note": "n"}, format="json")
    assert created.status_code == 201 and created.json()["created_by"] == "olga-api"
    then = _export(campaign)
    _judge_more(campaign)
    client.post(f"{base}/versions/", {"name": "r2"}, format="json")
    text = b"".join(client.get(f"{base}/versions/r1/qrels/").streaming_content).decode()
    assert text == then
    board = client.get(f"{base}/versions/r1/leaderboard/?k=2").json()
    mark = Mark.of_version(campaign.qrels_versions.get(name="r1"))
    expected = leaderboard_as_of(collection=campaign, mark=mark, k=2)
    assert [(r["run"], r["ndcg"]) for r in board["runs"]] == [
        (r.run, r.ndcg) for r in expected.rows
    ]
    diff = client.get(f"{base}/versions-diff/?a=r1&b=r2&k=2").json()
    assert [(c["qid"], c["docno"]) for c in diff["added"]] == [("q1", "d4")]
    assert {row["run"] for row in diff["runs"]} == set(RUNS)
    error = client.get(f"{base}/versions-diff/?a=r1&b=ghost").json()["error"]
    assert error["status"] == 404
    bad = client.get(f"{base}/as-of/qrels/?at=soon").json()["error"]
    assert bad["status"] == 400 and "at" in bad["fields"]


def test_the_versions_pages_tag_list_download_score_and_compare(
    load_trec: Callable[..., Collection],
) -> None:
    from django.test import Client

    from annotations.models import Membership

    campaign = load_trec("campaign", QRELS, RUNS, [2, 3])
    olga = UserFactory(username="olga-pages")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    client = Client()
    client.force_login(olga)
    page = "/collections/campaign/versions/"
    assert "No version yet." in client.get(page).content.decode()
    tagged = client.post(page, {"name": "round-1", "note": "after import"})
    assert tagged.status_code == 302
    then = _export(campaign)
    _judge_more(campaign)
    client.post(page, {"name": "round-2"})
    again = client.post(page, {"name": "round-2"}).content.decode()
    assert "exists already" in again  # shown next to the field, nothing tagged
    assert campaign.qrels_versions.count() == 2
    listing = client.get(page).content.decode()
    assert 'data-version="round-1"' in listing and 'data-version="round-2"' in listing
    download = client.get(f"{page}round-1/qrels/")
    assert b"".join(download.streaming_content).decode() == then
    detail = client.get(f"{page}round-1/?k=2").content.decode()
    assert 'id="version-leaderboard"' in detail
    for run in RUNS:
        assert f'<th scope="row"><span class="cut" title="{run}">{run}</span></th>' in detail
    diff = client.get(f"{page}?a=round-1&b=round-2&k=2").content.decode()
    assert 'id="diff-runs"' in diff and "1 pair added, 1 changed, 1 removed" in diff
    assert client.get(f"{page}ghost/").status_code == 404
    assessor = UserFactory(username="ann-pages")
    Membership.objects.create(collection=campaign, user=assessor, role=Membership.ASSESSOR)
    other = Client()
    other.force_login(assessor)
    assert other.get(page).status_code == 403


# Kept measures a version is scored by, as pytrec_eval is asked for them (test_measure_sets).
VERSION_MEASURES = ["AP", "P@2", "RR", "nDCG", "Bpref", "NumRet(rel=1)"]


def _trec_eval_all_of(qrels_text: str, runs: dict[str, str], name: str) -> dict[str, float]:
    """run -> trec_eval -c's `all` value of one measure, computed by pytrec_eval from the
    qrels text and the run files: the per-query values in trec_eval's query order added one
    by one over the judged queries (0 for one the run did not answer), the counts summed."""
    import pytrec_eval

    from annotations.metrics.ndcg import trec_order
    from tests.test_measure_sets import TREC

    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_text.splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    asked, key, level = TREC[name]
    out = {}
    for run, text in runs.items():
        ranking: dict[str, dict[str, float]] = {}
        for line in text.splitlines():
            qid, _, docno, _, score, _ = line.split()
            ranking.setdefault(qid, {})[docno] = float(score)
        result = pytrec_eval.RelevanceEvaluator(qrels, {asked}, relevance_level=level).evaluate(
            ranking
        )
        total = 0.0
        for qid in trec_order(qrels):
            total += result[qid][key] if qid in result else 0.0
        out[run] = total if name.startswith("NumRet") else total / len(qrels)
    return out


def test_a_version_is_scored_by_a_kept_measure_as_trec_eval_scores_its_qrels(
    load_trec: Callable[..., Collection],
) -> None:
    from django.test import Client
    from rest_framework.test import APIClient

    from annotations.metrics.measure_names import parse_measure
    from annotations.models import Membership
    from annotations.selectors.versions import measure_as_of

    runs = {**RUNS, "half": "q1 Q0 d3 1 3 half\nq1 Q0 d2 2 2 half\n"}  # q2 unanswered: -c
    campaign = load_trec("campaign", QRELS, runs, [2, 3])
    services.collection_update(collection=campaign, measures=VERSION_MEASURES)
    campaign.refresh_from_db()
    first = qrels_version_tag(collection=campaign, name="first")
    _judge_more(campaign)
    second = qrels_version_tag(collection=campaign, name="second")
    texts = {v.name: _as_text(campaign, Mark.of_version(v)) for v in (first, second)}
    assert texts["first"] != texts["second"]
    services.judgement_record(  # judging after the tags moves neither version
        query=campaign.queries.get(qid="q2"),
        document=campaign.documents.get(docno="e2"),
        assessor=UserFactory(username="late"),
        grade=3,
        source="form",
    )
    for version in (first, second):
        for name in VERSION_MEASURES:
            board = measure_as_of(
                collection=campaign, mark=Mark.of_version(version), measure=parse_measure(name)
            )
            expected = _trec_eval_all_of(texts[version.name], runs, name)
            assert {row.run: row.mean for row in board.rows} == expected  # bit for bit
            assert board.ranking == sorted(expected, key=lambda run: (-expected[run], run))
    olga = UserFactory(username="olga-measures")
    Membership.objects.create(collection=campaign, user=olga, role=Membership.ORGANISER)
    api = APIClient()
    api.force_authenticate(olga)
    base = "/api/v1/collections/campaign"
    body = api.get(f"{base}/versions/second/leaderboard/?k=2&measure=AP").json()
    expected = _trec_eval_all_of(texts["second"], runs, "AP")
    assert body["measure"]["name"] == "AP" and body["measure"]["trec_eval"] == "map"
    assert {row["run"]: row["mean"] for row in body["measure"]["runs"]} == expected
    assert "measure" not in api.get(f"{base}/versions/second/leaderboard/?k=2").json()
    refused = api.get(f"{base}/versions/second/leaderboard/?measure=ERR@20")
    assert refused.status_code == 400
    diff = api.get(f"{base}/versions-diff/?a=first&b=second&measure=RR").json()
    before = _trec_eval_all_of(texts["first"], runs, "RR")
    after = _trec_eval_all_of(texts["second"], runs, "RR")
    assert diff["measure"] == "RR"
    assert {row["run"]: (row["before"], row["after"]) for row in diff["runs"]} == {
        run: (before[run], after[run]) for run in runs
    }
    client = Client()
    client.force_login(olga)
    page = client.get("/collections/campaign/versions/second/?k=2&measure=Bpref").content.decode()
    expected = _trec_eval_all_of(texts["second"], runs, "Bpref")
    for run, value in expected.items():
        assert f'<tr data-run="{run}"><td class="num">' in page
        assert f'<td class="num">{value:.4f}</td>' in page
    listing = client.get("/collections/campaign/versions/?a=first&b=second&measure=RR")
    assert "by RR" in listing.content.decode()
