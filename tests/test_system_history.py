"""A search system's runs over time: the history (page and API) against pytrec_eval and the
bootstrap, what changed between two runs, the schedule's sweep, and `system.regressed`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import pytrec_eval
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.metrics import significance
from annotations.models import (
    Collection,
    ImportJob,
    Membership,
    Pool,
    PoolEntry,
    Run,
    SearchSystem,
)
from annotations.selectors.system_history import runs_changed, system_history
from annotations.selectors.system_schedule import systems_due
from annotations.services.imports import QueryFields, documents_ensure, queries_store
from annotations.services.system_schedule import system_fetches_sweep
from annotations.services.systems import system_create
from annotations.services.versions import qrels_version_tag
from annotations.services.webhooks import subscription_create
from tests.factories import CollectionFactory, UserFactory, record_grades

QIDS = [f"q{n:02d}" for n in range(1, 13)]
GRADES = {(qid, "d1"): 2 for qid in QIDS} | {(qid, "d2"): 1 for qid in QIDS}
GOOD = ["d1", "d2", "d3"]  # every query's judged documents first
BAD = ["d3", "d4", "d5"]  # none of them
SWAPPED = ["d2", "d1", "d3"]

Capture = Callable[..., Any]


@pytest.fixture
def lab(db: None) -> dict[str, Any]:
    """12 queries each with d1 (grade 2) and d2 (grade 1) judged, AP kept beside nDCG@k,
    an organiser, a system, and a webhook that wants every event."""
    collection = CollectionFactory(slug="lab", cutoffs=[3, 10], measures=["AP", "P@2"])
    queries_store(collection=collection, queries=[QueryFields(q, f"topic {q}", "") for q in QIDS])
    documents_ensure(collection=collection, docnos=["d1", "d2", "d3", "d4", "d5"])
    organiser = UserFactory(username="olga")
    services.membership_grant(collection=collection, user=organiser, role=Membership.ORGANISER)
    record_grades(collection, organiser, GRADES)
    system = system_create(
        collection=collection, name="engine", created_by=organiser,
        url_template="http://127.0.0.1:9/docs/_search?q={{title}}",
    )  # fmt: skip
    hook = subscription_create(
        collection=collection, url="http://93.184.216.34/hook", created_by=None
    )
    return {"collection": collection, "organiser": organiser, "system": system, "hook": hook}


def _fetched(
    capture: Capture, system: SearchSystem, name: str, rankings: dict[str, list[str]]
) -> Run:
    """A run stored as a fetch stores it (linked to its system in the storing transaction),
    then scored by the worker's task after the commit (eager)."""
    results = {
        qid: [(docno, float(10 - place), place) for place, docno in enumerate(docs, start=1)]
        for qid, docs in rankings.items()
    }
    with capture(execute=True):
        run, _ = services.run_store(collection=system.collection, run_name=name, results=results)
        Run.objects.filter(id=run.id).update(system=system)
    return Run.objects.select_related("collection", "system").get(id=run.id)


def _regressions(hook: Any) -> list[dict[str, Any]]:
    bodies = [json.loads(body) for body in hook.deliveries.values_list("body", flat=True)]
    return [body["data"] for body in bodies if body["type"] == "system.regressed"]


def _oracle(rankings: dict[str, list[str]], measure: str) -> dict[str, float]:
    qrels = {qid: {"d1": 2, "d2": 1} for qid in QIDS}
    run = {qid: {d: float(10 - i) for i, d in enumerate(docs)} for qid, docs in rankings.items()}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    key = measure.replace(".", "_")
    return {qid: evaluated[qid][key] if qid in evaluated else 0.0 for qid in QIDS}


GOOD_RUN = dict.fromkeys(QIDS, GOOD)
# Ten queries lose every judged document; two keep them.
BAD_RUN = {qid: (BAD if n < 10 else GOOD) for n, qid in enumerate(QIDS)}
# One query better than BAD_RUN, none worse.
MENDED_RUN = {qid: (GOOD if n in (0, 10, 11) else BAD) for n, qid in enumerate(QIDS)}
# One query slightly worse than MENDED_RUN: not significant.
SLIPPED_RUN = MENDED_RUN | {"q12": SWAPPED}


def test_the_history_holds_each_runs_mean_and_bootstrap_ci_in_fetch_order(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system = lab["system"]
    _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    _fetched(django_capture_on_commit_callbacks, system, "wednesday", MENDED_RUN)
    history = system_history(system=system, k=3)
    assert [point.run.name for point in history.points] == ["monday", "tuesday", "wednesday"]
    assert history.measure == "nDCG@3" and not history.pending
    for point, rankings in zip(history.points, (GOOD_RUN, BAD_RUN, MENDED_RUN), strict=True):
        values = [_oracle(rankings, "ndcg_cut.3")[qid] for qid in QIDS]
        assert point.queries == 12
        assert point.mean == pytest.approx(sum(values) / 12, abs=1e-12)
        # The leaderboard's interval: the percentile bootstrap, 10,000 resamples, seed 0.
        assert (point.ci_low, point.ci_high) == significance.bootstrap_ci(values)
    # By hand: every judged document on top scores 1, none scores 0.
    assert [point.mean for point in history.points] == pytest.approx([1.0, 2 / 12, 3 / 12])
    assert history.points[0].ci_low == history.points[0].ci_high == 1.0
    # A kept measure: AP as trec_eval's map, per query, its mean over the 12 queries.
    ap = system_history(system=system, k=3, measure=lab["collection"].kept_measures[0])
    assert ap.measure == "AP" and ap.k is None
    for point, rankings in zip(ap.points, (GOOD_RUN, BAD_RUN, MENDED_RUN), strict=True):
        values = [_oracle(rankings, "map")[qid] for qid in QIDS]
        assert point.mean == pytest.approx(sum(values) / 12, abs=1e-12)
        assert (point.ci_low, point.ci_high) == significance.bootstrap_ci(values)


def _oracle_on(
    rankings: dict[str, list[str]], grades: dict[str, int], measure: str
) -> dict[str, float]:
    """pytrec_eval's per-query values with every query's judged documents `grades`."""
    qrels = {qid: dict(grades) for qid in QIDS}
    run = {qid: {d: float(10 - i) for i, d in enumerate(docs)} for qid, docs in rankings.items()}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return {qid: evaluated[qid][measure.replace(".", "_")] for qid in QIDS}


def test_the_history_on_a_qrels_version_scores_every_run_on_the_judgements_of_then(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    collection, system, organiser = lab["collection"], lab["system"], lab["organiser"]
    _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    then = qrels_version_tag(collection=collection, name="v1", created_by=organiser)
    # Later, d3 is judged highly relevant everywhere and a run that ranks it first comes.
    with django_capture_on_commit_callbacks(execute=True):
        record_grades(collection, organiser, {(qid, "d3"): 3 for qid in QIDS})
    _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    now = qrels_version_tag(collection=collection, name="v2", created_by=organiser)
    history = system_history(system=system, k=3, version=then)
    assert history.version == then
    for point, rankings in zip(history.points, (GOOD_RUN, BAD_RUN), strict=True):
        old = _oracle_on(rankings, {"d1": 2, "d2": 1}, "ndcg_cut.3")
        current = _oracle_on(rankings, {"d1": 2, "d2": 1, "d3": 3}, "ndcg_cut.3")
        assert point.mean == pytest.approx(sum(current.values()) / 12, abs=1e-12)
        assert point.on_version is not None and point.on_version.queries == 12
        assert point.on_version.mean == pytest.approx(sum(old.values()) / 12, abs=1e-12)
        bootstrap = significance.bootstrap_ci([old[qid] for qid in QIDS])
        assert (point.on_version.ci_low, point.on_version.ci_high) == pytest.approx(bootstrap)
    # On v1 monday was far better; on today's judgements tuesday's d3 narrows the gap.
    monday, tuesday = history.points
    assert monday.on_version and tuesday.on_version
    assert monday.on_version.mean == 1.0 and tuesday.on_version.mean == pytest.approx(2 / 12)
    assert monday.mean is not None and monday.mean < 1.0
    # A version of the judgements as they stand gives the current means and CIs exactly.
    for point in system_history(system=system, k=3, version=now).points:
        assert point.on_version is not None
        assert (point.on_version.mean, point.on_version.ci_low, point.on_version.ci_high) == (
            point.mean, point.ci_low, point.ci_high
        )  # fmt: skip
    # A kept measure is not scored on versions: no version means.
    by_ap = system_history(system=system, k=3, measure=collection.kept_measures[0], version=then)
    assert by_ap.version is None and all(point.on_version is None for point in by_ap.points)


def test_what_changed_lists_the_moved_queries_the_top_k_and_the_paired_test(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system = lab["system"]
    old = _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    new = _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    change = runs_changed(old=old, new=new, k=3)
    # Ten queries fell from 1 to 0, two did not move (left out of `moved`).
    assert [(row.qid, row.b, row.a, row.difference) for row in change.moved] == [
        (qid, 1.0, 0.0, -1.0) for qid in QIDS[:10]
    ]
    assert change.comparison.mean_a == pytest.approx(2 / 12)
    assert change.comparison.mean_b == 1.0
    assert (change.comparison.wins, change.comparison.ties, change.comparison.losses) == (0, 2, 10)
    # The exact sign-flip test gives 2 * 2^2 / 2^12 (the 10 equal losses all flipped or not,
    # the two zeros either way); 10,000 random flips come near it.
    exact = significance.paired_randomization_test([0.0] * 10 + [1.0] * 2, [1.0] * 12, exact=True)
    assert exact == pytest.approx(8 / 4096)
    assert change.comparison.p_value is not None
    assert abs(change.comparison.p_value - exact) < 0.002
    assert change.significant and change.regressed
    # Top 3: d1 d2 d3 became d3 d4 d5 on ten queries.
    assert [(top.qid, top.entered, top.left) for top in change.tops] == [
        (qid, ["d4", "d5"], ["d1", "d2"]) for qid in QIDS[:10]
    ]
    # Unjudged in the new top 3: d3, d4, d5 of ten queries and d3 of two.
    assert change.unjudged == 32
    # Better, but by one query: not significant.
    mended = _fetched(django_capture_on_commit_callbacks, system, "wednesday", MENDED_RUN)
    later = runs_changed(old=new, new=mended, k=3)
    assert [(row.qid, row.difference) for row in later.moved] == [("q01", 1.0)]
    assert later.comparison.p_value == 1.0 and not later.significant and not later.regressed


def test_what_changed_compares_on_any_measure_the_collection_keeps(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system = lab["system"]
    ap, p2 = lab["collection"].kept_measures
    old = _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    new = _fetched(
        django_capture_on_commit_callbacks, system, "tuesday", dict.fromkeys(QIDS, SWAPPED)
    )
    # d1 (grade 2) and d2 (grade 1) swapped: nDCG@3 drops on every query, AP does not move
    # (both relevant documents are still the first two).
    at3 = runs_changed(old=old, new=new, k=3)
    assert len(at3.moved) == 12 and at3.regressed
    by_ap = runs_changed(old=old, new=new, k=3, measure=ap)
    assert by_ap.comparison.measure_label == "AP"
    assert by_ap.moved == [] and not by_ap.significant and by_ap.comparison.ties == 12
    oracle = _oracle(dict.fromkeys(QIDS, SWAPPED), "map")
    assert [row.a for row in by_ap.comparison.rows] == [oracle[qid] for qid in QIDS]
    assert by_ap.tops == at3.tops == []  # the same three documents in each top 3
    # P@2 from a run that loses both relevant documents on ten queries.
    bad = _fetched(django_capture_on_commit_callbacks, system, "wednesday", BAD_RUN)
    by_p2 = runs_changed(old=new, new=bad, k=3, measure=p2)
    before, after = _oracle(dict.fromkeys(QIDS, SWAPPED), "P.2"), _oracle(BAD_RUN, "P.2")
    assert [(row.qid, row.b, row.a) for row in by_p2.moved] == [
        (qid, before[qid], after[qid]) for qid in QIDS[:10]
    ]
    assert by_p2.comparison.mean_a == pytest.approx(sum(after.values()) / 12, abs=1e-12)
    assert by_p2.regressed


def test_a_significantly_worse_run_sends_system_regressed_and_a_slight_slip_does_not(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system, hook = lab["system"], lab["hook"]
    _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    assert _regressions(hook) == []  # a first run has nothing to compare with
    _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    (told,) = _regressions(hook)
    assert {key: told[key] for key in told if key != "p_value"} == {
        "collection": "lab", "system": "engine", "run": "tuesday", "previous_run": "monday",
        "measure": "nDCG@3", "k": 3, "mean": pytest.approx(2 / 12), "previous_mean": 1.0,
        "difference": pytest.approx(-10 / 12), "alpha": 0.05, "queries": 12,
        "queries_worse": 10, "queries_better": 0,
    }  # fmt: skip
    assert told["p_value"] < 0.005
    _fetched(django_capture_on_commit_callbacks, system, "wednesday", MENDED_RUN)  # better
    slipped = _fetched(django_capture_on_commit_callbacks, system, "thursday", SLIPPED_RUN)
    change = runs_changed(old=Run.objects.get(name="wednesday"), new=slipped, k=3)
    assert change.comparison.mean_difference is not None
    assert change.comparison.mean_difference < 0 and not change.significant  # worse, by chance
    assert [told["run"] for told in _regressions(hook)] == ["tuesday"]
    # A run of no system is compared with nothing.
    with django_capture_on_commit_callbacks(execute=True):
        services.run_store(collection=lab["collection"], run_name="plain", results={
            qid: [("d5", 1.0, 1)] for qid in QIDS
        })  # fmt: skip
    assert len(_regressions(hook)) == 1


def test_the_sweep_starts_the_fetches_that_are_due_and_only_those(lab: dict[str, Any]) -> None:
    collection = lab["collection"]
    now = timezone.now()

    def system(name: str, every: int | None, *fetches: tuple[str, float]) -> SearchSystem:
        found = system_create(
            collection=collection, name=name, created_by=None, fetch_every_hours=every,
            url_template="http://127.0.0.1:9/docs/_search?q={{title}}",
        )  # fmt: skip
        for state, hours_ago in fetches:
            job = ImportJob.objects.create(
                collection=collection, kind=ImportJob.FETCH, system=found, file_name=name,
                size=0, run_name=f"{name}-{hours_ago}", state=state,
            )  # fmt: skip
            ImportJob.objects.filter(id=job.id).update(created=now - timedelta(hours=hours_ago))
        return found

    never = system("never-fetched", 6)
    stale = system("stale", 6, ("done", 30.0), ("done", 6.5))
    failed = system("failed-long-ago", 24, ("failed", 25.0))
    recent = system("recent", 6, ("done", 30.0), ("done", 5.5))
    system("recent-failure", 6, ("failed", 1.0))
    system("going", 1, ("running", 3.0))
    system("manual", None, ("done", 1000.0))
    assert systems_due(now=now) == [never.id, stale.id, failed.id]
    started = system_fetches_sweep(now=now)
    assert sorted(job.system_id for job in started) == sorted([never.id, stale.id, failed.id])
    assert {job.state for job in started} == {ImportJob.QUEUED}  # its task runs after commit
    assert all(job.created_by is None and job.lines_total == 12 for job in started)
    # Queued now: the next sweep starts nothing; an hour later only `recent` is due.
    assert system_fetches_sweep(now=now) == []
    assert systems_due(now=now + timedelta(hours=1)) == [recent.id]
    # Six hours after the queued fetches, the six-hourly systems are due again.
    ImportJob.objects.filter(system__in=[never, stale, failed], state="queued").update(state="done")
    assert systems_due(now=timezone.now() + timedelta(hours=6, minutes=1)) == sorted(
        [never.id, stale.id, recent.id, SearchSystem.objects.get(name="recent-failure").id]
    )


def test_a_schedule_is_checked_when_described(lab: dict[str, Any]) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="fetch_every_hours"):
        system_create(
            collection=lab["collection"], name="zero", created_by=None, fetch_every_hours=0,
            url_template="http://127.0.0.1:9/docs/_search?q={{title}}",
        )  # fmt: skip


def test_the_history_and_changes_api_answer_organisers(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system = lab["system"]
    _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=lab['organiser'])}")
    base = "/api/v1/collections/lab/systems/engine"
    body = api.get(f"{base}/history/").json()
    assert (body["measure"], body["k"], body["main_k"], body["pending"]) == ("nDCG@3", 3, 3, False)
    assert [(r["run"], r["mean"], r["queries"]) for r in body["runs"]] == [
        ("monday", 1.0, 12),
        ("tuesday", pytest.approx(2 / 12), 12),
    ]
    values = [0.0] * 10 + [1.0] * 2
    assert [body["runs"][1]["ci_low"], body["runs"][1]["ci_high"]] == list(
        significance.bootstrap_ci(values)
    )
    at10 = api.get(f"{base}/history/?k=10&measure=P@2").json()
    assert at10["measure"] == "P@2" and at10["k"] is None
    assert [r["mean"] for r in at10["runs"]] == [1.0, pytest.approx(2 / 12)]
    assert api.get(f"{base}/history/?measure=nDCG@7").status_code == 400
    assert api.get(f"{base}/history/?k=4").status_code == 400
    assert api.get(f"{base}/history/?since=1").status_code == 400
    qrels_version_tag(collection=lab["collection"], name="v1", created_by=None)
    on_v1 = api.get(f"{base}/history/?version=v1").json()
    assert on_v1["version"] == "v1" and body["version"] is None
    assert [r["version_mean"] for r in on_v1["runs"]] == [r["mean"] for r in body["runs"]]
    assert on_v1["runs"][1]["version_ci_low"] == body["runs"][1]["ci_low"]
    assert on_v1["runs"][1]["version_queries"] == 12
    assert all(r["version_mean"] is None for r in body["runs"])
    unknown = api.get(f"{base}/history/?version=v9")
    assert unknown.status_code == 400 and "v1" in unknown.json()["error"]["fields"]["version"][0]
    assert api.get(f"{base}/history/?version=v1&measure=AP").status_code == 400
    changed = api.get(f"{base}/changes/").json()
    assert (changed["run"], changed["previous_run"], changed["k"]) == ("tuesday", "monday", 3)
    assert changed["regressed"] is True and changed["significant"] is True
    assert (changed["better"], changed["same"], changed["worse"]) == (0, 2, 10)
    assert changed["moved"][0] == {
        "qid": "q01",
        "score": 0.0,
        "previous_score": 1.0,
        "difference": -1.0,
    }
    assert changed["tops"][0] == {"qid": "q01", "entered": ["d4", "d5"], "left": ["d1", "d2"]}
    assert changed["unjudged"] == 32
    swapped = api.get(f"{base}/changes/?run=monday&previous=tuesday").json()
    assert swapped["difference"] == pytest.approx(10 / 12) and swapped["regressed"] is False
    by_ap = api.get(f"{base}/changes/?measure=AP").json()
    compared = api.get("/api/v1/collections/lab/compare/?a=tuesday&b=monday&measure=AP").json()
    assert (by_ap["measure"], by_ap["k"]) == ("AP", 3)
    assert (by_ap["mean"], by_ap["previous_mean"], by_ap["p_value"]) == (
        compared["mean_a"], compared["mean_b"], compared["p_value"]
    )  # fmt: skip
    assert [row["score"] for row in by_ap["moved"]] == [0.0] * 10
    assert by_ap["tops"] == changed["tops"]  # the top k is the same whatever the measure
    refused = api.get(f"{base}/changes/?measure=RBP")
    assert refused.status_code == 400 and "measure" in refused.json()["error"]["fields"]
    assert api.get(f"{base}/changes/?run=monday").status_code == 400  # no run before it
    assert api.get(f"{base}/changes/?run=nope").status_code == 404
    # Assessors see no system.
    assessor = UserFactory(username="ann")
    services.membership_grant(collection=lab["collection"], user=assessor, role=Membership.ASSESSOR)
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=assessor)}")
    assert api.get(f"{base}/history/").status_code == 403


def test_the_pages_show_the_history_what_changed_and_send_the_new_top_k_to_judging(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    system = lab["system"]
    _fetched(django_capture_on_commit_callbacks, system, "monday", GOOD_RUN)
    _fetched(django_capture_on_commit_callbacks, system, "tuesday", BAD_RUN)
    client = Client()
    client.force_login(lab["organiser"])
    page = client.get(reverse("system-history", args=["lab", "engine"])).content.decode()
    assert 'id="history-plot"' in page and "Mean nDCG@3 over time" in page
    assert "0.1667" in page and "1.0000" in page
    ap = client.get(reverse("system-history", args=["lab", "engine"]) + "?measure=AP")
    assert "Mean AP over time" in ap.content.decode()
    unknown = client.get(reverse("system-history", args=["lab", "engine"]) + "?measure=RBP")
    assert "not kept by this collection" in unknown.content.decode()
    assert "Mean nDCG@3 over time" in unknown.content.decode()
    qrels_version_tag(collection=lab["collection"], name="v1", created_by=None)
    on_v1 = client.get(reverse("system-history", args=["lab", "engine"]) + "?version=v1")
    assert "Mean nDCG@3 over time on qrels v1" in on_v1.content.decode()
    assert ">on v1</th>" in on_v1.content.decode()
    missing = client.get(reverse("system-history", args=["lab", "engine"]) + "?version=v9")
    assert "No qrels version named" in missing.content.decode()
    state = client.get(reverse("system-history-state", args=["lab", "engine"])).json()
    assert state["active"] is False and 'id="history-runs"' in state["html"]
    changes = client.get(reverse("system-changes", args=["lab", "engine"])).content.decode()
    assert "Significantly worse" in changes and "32 pairs" in changes
    assert "tuesday against monday at nDCG@3" in changes
    by_ap = client.get(reverse("system-changes", args=["lab", "engine"]) + "?measure=AP")
    assert "tuesday against monday by AP" in by_ap.content.decode()
    assert "Queries that moved most in AP" in by_ap.content.decode()
    assert "measure=AP" in by_ap.content.decode()  # the compare page's link keeps it
    unknown = client.get(reverse("system-changes", args=["lab", "engine"]) + "?measure=RBP")
    assert "not kept by this collection" in unknown.content.decode()
    assert "tuesday against monday at nDCG@3" in unknown.content.decode()
    response = client.post(
        reverse("system-changes-to-pool", args=["lab", "engine"]), {"run": "tuesday", "k": "3"}
    )
    pool = Pool.objects.get(name="tuesday-top3")
    assert response.status_code == 302 and response["Location"].endswith(f"/pools/{pool.id}/")
    assert PoolEntry.objects.filter(pool=pool).count() == 32
    assert not PoolEntry.objects.filter(pool=pool, document__docno__in=["d1", "d2"]).exists()
    # Sent again to the same pool: nothing new.
    client.post(
        reverse("system-changes-to-pool", args=["lab", "engine"]),
        {"run": "tuesday", "k": "3", "pool": str(pool.id)},
    )
    assert PoolEntry.objects.filter(pool=pool).count() == 32
    # The system page and a fetch page follow an active fetch.
    detail = client.get(reverse("system-detail", args=["lab", "engine"])).content.decode()
    assert 'id="system-fetches-body"' in detail and "judges.js" in detail
    job = ImportJob.objects.create(
        collection=lab["collection"], kind=ImportJob.FETCH, system=system, file_name="engine",
        size=0, run_name="engine-next", lines_total=12, lines_done=5, state=ImportJob.RUNNING,
    )  # fmt: skip
    followed = client.get(reverse("system-state", args=["lab", "engine"])).json()
    assert followed["active"] is True and "engine-next" in followed["html"]
    fetch = client.get(reverse("system-fetch-state", args=["lab", "engine", job.id])).json()
    assert fetch["active"] is True and "5 of 12" in fetch["html"]
    assert client.get(reverse("system-history-state", args=["lab", "engine"])).json()["active"]


def test_a_collection_keeps_its_systems_runs_linked_and_unlinked_on_delete(
    lab: dict[str, Any], django_capture_on_commit_callbacks: Capture
) -> None:
    run = _fetched(django_capture_on_commit_callbacks, lab["system"], "monday", GOOD_RUN)
    lab["system"].delete()
    run.refresh_from_db()
    assert run.system_id is None  # the run stays, a plain run
    assert Collection.objects.get(slug="lab").runs.count() == 1


def test_beat_sweeps_the_schedules_every_few_minutes() -> None:
    from annotations import tasks
    from ndcg_platform.settings import CELERY_BEAT_SCHEDULE

    entry = CELERY_BEAT_SCHEDULE["system-fetches-sweep"]
    assert entry["task"] == tasks.system_fetches_sweep.name
    assert float(entry["schedule"]) <= 300.0
