"""A collection's other measures are stored per (run, query), kept live on every judgement,
and equal trec_eval's (pytrec_eval's) values and `all` lines bit for bit."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import pytrec_eval
from django.core.exceptions import ValidationError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import scores, selectors, services
from annotations.formats import score_bytes
from annotations.metrics.measure_names import parse_measure
from annotations.metrics.ndcg import trec_order
from annotations.models import Collection, Document, Query, QueryScore, Run, RunScore
from annotations.selectors import measure_values
from tests.factories import CollectionFactory, UserFactory
from tests.stored import judge_at_random, kept_values, trec_eval_values

WRITE = Callable[..., Path]

# ir_measures name -> (trec_eval's measure as pytrec_eval is asked for it, the key of its
# value, trec_eval's relevance level -l).
TREC: dict[str, tuple[str, str, int]] = {
    "P@2": ("P.2", "P_2", 1),
    "AP": ("map", "map", 1),
    "AP@5": ("map_cut.5", "map_cut_5", 1),
    "AP(rel=2)": ("map", "map", 2),
    "P@5": ("P.5", "P_5", 1),
    "P(rel=2)@3": ("P.3", "P_3", 2),
    "R@10": ("recall.10", "recall_10", 1),
    "RR": ("recip_rank", "recip_rank", 1),
    "Rprec": ("Rprec", "Rprec", 1),
    "Bpref": ("bpref", "bpref", 1),
    "infAP": ("infAP", "infAP", 1),
    "Success@1": ("success.1", "success_1", 1),
    "nDCG": ("ndcg", "ndcg", 1),
    "NumRet": ("num_ret", "num_ret", 1),
    "NumRet(rel=1)": ("num_rel_ret", "num_rel_ret", 1),
    "SetF": ("set_F", "set_F", 1),
}
# Deep enough that R@10 and the measures without a cutoff read past the in-row heads.
DEPTH = 150


def _collection(write_file: WRITE, rng: random.Random, **options: object) -> Collection:
    """Three runs with many tied scores over 4 queries (one run misses a query); rankings
    longer than the in-row head, so the whole-ranking measures read them whole."""
    collection = CollectionFactory(
        slug=f"measures-{rng.randrange(10**6)}", cutoffs=[1, 3, 5], **options
    )
    docs = [f"d{i}" for i in range(DEPTH + 30)]
    for tag in ("alpha", "beta", "gamma"):
        lines = []
        for q in range(4):
            if tag == "gamma" and q == 3:
                continue  # a run that misses a query
            picked = rng.sample(docs, rng.randint(2, DEPTH))
            for rank, docno in enumerate(picked, start=1):
                score = rng.choice([1.0, 2.0, 2.0, 3.5])  # many ties
                lines.append(f"q{q} Q0 {docno} {rank} {score} {tag}")
        services.run_import(
            collection=collection, source=write_file(f"{tag}.txt", "\n".join(lines))
        )
    return collection


def _trec_eval(collection: Collection) -> dict[tuple[str, str, str], float]:
    return trec_eval_values(collection, TREC)


def _stored(collection: Collection) -> dict[tuple[str, str, str], float]:
    return kept_values(collection)


def _trec_eval_all(
    collection: Collection, per_query: dict[tuple[str, str, str], float]
) -> dict[tuple[str, str], float]:
    """trec_eval -c's `all` line: the values added in its query order over their count; the
    counts (num_ret, num_rel_ret) summed."""
    qids = trec_order({qid for _, qid, _ in per_query})
    out: dict[tuple[str, str], float] = {}
    for run in Run.objects.filter(collection=collection):
        for name in collection.measures:
            total = 0.0
            for qid in qids:
                total += per_query[(run.name, qid, name)]
            out[(run.name, name)] = total if name.startswith("NumRet") else total / len(qids)
    return out


def _means(collection: Collection) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for name in collection.measures:
        means, pending = measure_values.measure_means(collection, parse_measure(name))
        assert pending == []
        out.update({(mean.run.name, name): mean.value for mean in means})
    return out


@pytest.mark.parametrize("seed", [11, 12])
def test_judgement_changes_keep_every_kept_measure_equal_to_trec_eval(
    transactional_db: None, write_file: WRITE, seed: int
) -> None:
    rng = random.Random(seed)
    collection = _collection(write_file, rng)
    # Most documents judged: the rankings' first results hold enough judged ones for nDCG,
    # so only the measures that read deeper make the recomputation read them whole.
    lines = [
        f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(4) for d in rng.sample(range(180), 120)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(lines)),
        assessor=UserFactory(username=f"nist{seed}"),
    )
    services.collection_update(collection=collection, measures=list(TREC))
    collection.refresh_from_db()
    assert collection.measures == list(TREC)
    assessors = [UserFactory(username=f"m{seed}-{i}") for i in range(2)]
    queries = list(Query.objects.filter(collection=collection))
    documents = list(Document.objects.filter(collection=collection))
    for step in range(30):
        judge_at_random(rng, queries, documents, assessors, delete_share=0.2)
        if step % 6 == 5:
            expected = _trec_eval(collection)
            assert _stored(collection) == expected, f"step {step}"  # == on doubles: every bit
            assert _means(collection) == _trec_eval_all(collection, expected)
            assert scores.scores_verify(collection=collection) == []


def test_a_change_of_measures_rescores_every_run_and_an_import_scores_its_run(
    transactional_db: None, write_file: WRITE
) -> None:
    rng = random.Random(5)
    collection = _collection(write_file, rng)
    lines = [
        f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(4) for d in rng.sample(range(40), 20)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(lines)),
        assessor=UserFactory(username="nist"),
    )
    assert set(QueryScore.objects.values_list("measures", flat=True)) == {""}
    services.collection_update(collection=collection, measures=["map", "P_5", "nDCG"])
    collection.refresh_from_db()
    assert collection.measures == ["AP", "P@5", "nDCG"]  # stored in ir_measures' syntax
    # Each row names its set by a key of 16 hex digits; the names are the collection's.
    layout = hashlib.sha256(b"AP P@5 nDCG").hexdigest()[:16]
    assert set(RunScore.objects.values_list("measures", flat=True)) == {layout}
    assert set(QueryScore.objects.values_list("measures", flat=True)) == {layout}
    # 8 bytes per kept measure in each row.
    assert {len(bytes(v)) for v in QueryScore.objects.values_list("measure_values", flat=True)} == {
        24
    }
    collection.measures = ["AP", "P@5", "nDCG"]
    assert _stored(collection) == _trec_eval(collection)
    services.run_import(
        collection=collection,
        source=write_file("delta.txt", "q0 Q0 d1 1 2.0 delta\nq1 Q0 d3 1 1.0 delta"),
    )
    assert _stored(collection) == _trec_eval(collection)
    assert scores.scores_verify(collection=collection) == []
    # Back to none: rows and runs hold no other measure.
    services.collection_update(collection=collection, measures=[])
    assert set(QueryScore.objects.values_list("measure_values", flat=True)) == {b""}


def _num_rel(qrels: dict[str, int], level: int) -> float:
    """pytrec_eval's num_rel of one query; it does not depend on the ranking, so a ranking of
    one document outside the qrels stands for the run that did not answer the query."""
    evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"num_rel"}, relevance_level=level)
    return float(evaluator.evaluate({"q": {"outside-the-qrels": 1.0}})["q"]["num_rel"])


def test_a_query_a_run_did_not_answer_counts_what_trec_eval_c_gives_it(
    transactional_db: None, write_file: WRITE
) -> None:
    rng = random.Random(3)
    collection = _collection(write_file, rng)  # gamma does not answer q3
    lines = [f"q{q} 0 d{d} {(d + q) % 4}" for q in range(4) for d in range(0, 60, 3)]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(lines)),
        assessor=UserFactory(username="nist"),
    )
    kept = ["NumRel", "NumRel(rel=2)", "RBPResid", "RBPResid(p=0.5)@5", "AP"]
    services.collection_update(collection=collection, measures=kept)
    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in selectors.qrels_rows(collection=collection):
        qrels.setdefault(qid, {})[docno] = grade
    gamma = Run.objects.get(collection=collection, name="gamma")

    def per_query(name: str) -> dict[str, tuple[float, bool]]:
        rows, _ = measure_values.run_measure_values(collection, parse_measure(name), gamma)
        assert rows is not None
        return {qid: (value, answered) for qid, value, answered in rows}

    # The query's relevant documents at the measure's level, as trec_eval counts them.
    assert per_query("NumRel")["q3"] == (_num_rel(qrels["q3"], 1), False)
    assert per_query("NumRel(rel=2)")["q3"] == (_num_rel(qrels["q3"], 2), False)
    # trec_eval -c's `all` of num_rel counts every qrels grade > 0 of every judged query,
    # whatever -l says (m_num_rel.c): for every run, gamma included.
    total = float(sum(_num_rel(grades, 1) for grades in qrels.values()))
    assert _num_rel(qrels["q3"], 2) < _num_rel(qrels["q3"], 1)  # the levels differ here
    for name in ("NumRel", "NumRel(rel=2)"):
        means, pending = measure_values.measure_means(collection, parse_measure(name))
        assert pending == []
        assert {mean.run.name: mean.value for mean in means} == dict.fromkeys(
            ("alpha", "beta", "gamma"), total
        )
    # Nothing of an unanswered ranking is known: RBP's residual is all of it, 1.
    assert per_query("RBPResid")["q3"] == (1.0, False)
    assert per_query("RBPResid(p=0.5)@5")["q3"] == (
        0.5**5 + 0.5 * (1 + 0.5 + 0.25 + 0.125 + 0.0625),
        False,
    )
    residuals = per_query("RBPResid")
    means, _ = measure_values.measure_means(collection, parse_measure("RBPResid"))
    total = 0.0
    for qid in trec_order(residuals):
        total += residuals[qid][0]
    assert {mean.run.name: mean.value for mean in means}["gamma"] == total / 4
    # AP: 0 for the unanswered query, as before.
    assert per_query("AP")["q3"] == (0.0, False)
    assert scores.scores_verify(collection=collection) == []


def test_verify_reports_a_run_whose_measure_values_are_pending(
    transactional_db: None, write_file: WRITE
) -> None:
    rng = random.Random(4)
    collection = _collection(write_file, rng)
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "q0 0 d1 1\nq1 0 d2 2\nq3 0 d3 1"),
        assessor=UserFactory(username="nist"),
    )
    services.collection_update(collection=collection, measures=["NumRel", "AP"])
    assert scores.scores_verify(collection=collection) == []
    # A rescore cut short: gamma's values are still those of the former measure set.
    RunScore.objects.filter(run__name="gamma").update(measures=score_bytes.measures_layout(["AP"]))
    assert scores.scores_verify(collection=collection) == [
        "run=gamma NumRel: no mean (values pending)",
        "run=gamma AP: no mean (values pending)",
    ]


def test_a_spelling_of_the_same_set_is_no_change_and_rescores_nothing(
    transactional_db: None,
) -> None:
    collection = CollectionFactory(slug="same", measures=["AP", "P@10"])
    services.collection_update(collection=collection, measures=["MAP", "P_10"])
    assert collection.measures == ["AP", "P@10"]


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        (["AP", "Foo@10"], "entry 2: measure 'Foo@10': unknown measure 'Foo'"),
        (["P"], None),  # trec_eval's P: its default cutoffs
        (["P@0"], "entry 1: measure 'P@0': cutoff '0' is not an integer >= 1"),
        (["ERR"], "entry 1: measure 'ERR': ERR needs a cutoff"),
        (["AP(rel=x)"], "parameter rel='x' is not a number"),
        ([""], "entry 1: '' is not a measure name"),
        ("AP", "a list of measure names"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(db: None, entries: object, says: str | None) -> None:
    collection = CollectionFactory(slug="named")
    if says is None:
        services.collection_update(collection=collection, measures=entries)
        assert collection.measures[:2] == ["P@5", "P@10"]
        return
    with pytest.raises(ValidationError) as raised:
        services.collection_update(collection=collection, measures=entries)
    assert says in " ".join(raised.value.message_dict["measures"])


def test_err_is_refused_on_a_scale_beyond_its_grades(db: None) -> None:
    deep = services.collection_create(
        slug="deep", grades=[(g, f"g{g}", "") for g in range(6)], cutoffs=[5]
    )
    with pytest.raises(ValidationError, match="ERR counts grades up to 4"):
        services.collection_update(collection=deep, measures=["ERR@10"])
    shallow = services.collection_create(slug="shallow", measures=["ERR@10"])
    assert shallow.measures == ["ERR@10"]
    with pytest.raises(ValidationError, match="ERR counts grades up to 4"):
        services.collection_grades_set(
            collection=shallow, grades=[(g, f"g{g}", "") for g in range(6)]
        )


def test_the_layout_key_names_the_set_and_its_order_in_17_bytes() -> None:
    key = score_bytes.measures_layout(["AP", "P@10", "RBP(p=0.9)"])
    assert key == hashlib.sha256(b"AP P@10 RBP(p=0.9)").hexdigest()[:16]
    assert score_bytes.measures_layout(["P@10", "AP", "RBP(p=0.9)"]) != key  # another order
    assert score_bytes.measures_layout([]) == ""
    with pytest.raises(ValueError, match="no space"):
        score_bytes.measures_layout(["A P"])


# --- the API -------------------------------------------------------------------------------

API = "/api/v1/collections"


def _api_collection(write_file: WRITE) -> tuple[Collection, APIClient]:
    organiser = UserFactory(username="organiser")
    collection = services.collection_create(
        organiser=organiser, slug="kept", cutoffs=[2, 10], measures=["AP", "P@2"]
    )
    services.judgements_import(
        collection=collection,
        source=write_file("q.qrels", "q1 0 d1 3\nq1 0 d2 0\nq1 0 d4 1\nq2 0 d3 2\n"),
        assessor=organiser,
    )
    for name, lines in (
        ("base", "q1 Q0 d2 1 9.5 base\nq1 Q0 d1 2 8.0 base\nq2 Q0 d3 1 3.0 base"),
        ("rival", "q1 Q0 d1 1 9.5 rival\nq1 Q0 d4 2 8.0 rival"),  # no answer for q2
    ):
        services.run_import(collection=collection, source=write_file(f"{name}.txt", lines))
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=organiser)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return collection, client


def test_the_run_scores_api_answers_a_kept_measure_per_query_and_its_mean(
    transactional_db: None, write_file: WRITE
) -> None:
    collection, client = _api_collection(write_file)
    body = client.get(f"{API}/kept/runs/rival/scores/?measure=AP").json()
    # rival: q1 finds d1 at 1 and d4 at 2 of 2 relevant: AP 1.0; q2 unanswered: 0 (-c).
    assert body["measure"] == {
        "name": "AP",
        "trec_eval": "map",
        "pending": False,
        "mean": 0.5,
        "queries": 2,
        "per_query": [
            {"qid": "q1", "value": 1.0, "answered": True},
            {"qid": "q2", "value": 0.0, "answered": False},
        ],
    }
    expected = _trec_eval(collection)
    base = client.get(f"{API}/kept/runs/base/scores/?measure=P@2").json()["measure"]
    assert [row["value"] for row in base["per_query"]] == [
        expected[("base", "q1", "P@2")],
        expected[("base", "q2", "P@2")],
    ]
    assert "measure" not in client.get(f"{API}/kept/runs/base/scores/").json()
    # Another spelling of a kept measure reads it too.
    assert client.get(f"{API}/kept/runs/base/scores/?measure=MAP").json()["measure"]["name"] == "AP"


@pytest.mark.parametrize(
    ("asked", "says"),
    [
        ("RR", "measure 'RR' is not kept by this collection; it keeps: AP, P@2"),
        ("Foo", "unknown measure 'Foo'"),
    ],
)
def test_a_measure_the_collection_does_not_keep_is_a_400_naming_it(
    transactional_db: None, write_file: WRITE, asked: str, says: str
) -> None:
    _, client = _api_collection(write_file)
    for path in ("runs/base/scores/", "leaderboard/"):
        response = client.get(f"{API}/kept/{path}?measure={asked}")
        assert response.status_code == 400
        assert says in str(response.json())


def test_the_leaderboard_api_answers_every_runs_mean_of_a_kept_measure(
    transactional_db: None, write_file: WRITE
) -> None:
    collection, client = _api_collection(write_file)
    body = client.get(f"{API}/kept/leaderboard/?k=2&measure=AP").json()
    assert body["measures"] == ["AP", "P@2"]
    expected = _trec_eval_all(collection, _trec_eval(collection))
    assert [
        {key: row[key] for key in ("run", "mean", "queries")} for row in body["measure"]["runs"]
    ] == [
        {"run": "base", "mean": expected[("base", "AP")], "queries": 2},
        {"run": "rival", "mean": expected[("rival", "AP")], "queries": 2},
    ]  # each with its letters: tests/test_measure_significance.py
    assert body["measure"]["pending"] == []
    assert "nDCG@k's" in body["measure"]["shown"]
    assert [run["name"] for run in body["runs"]]  # nDCG@k's rows as without the measure
    assert "measure" not in client.get(f"{API}/kept/leaderboard/?k=2").json()


def test_measures_are_set_at_creation_and_changed_through_the_api(
    transactional_db: None, write_file: WRITE
) -> None:
    _, client = _api_collection(write_file)
    assert client.get(f"{API}/kept/").json()["measures"] == ["AP", "P@2"]
    response = client.patch(f"{API}/kept/", {"measures": ["RR", "bpref"]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["measures"] == ["RR", "Bpref"]
    rr = client.get(f"{API}/kept/runs/base/scores/?measure=RR").json()["measure"]
    assert (
        rr["per_query"][0]["value"]
        == _trec_eval(Collection.objects.get(slug="kept"))[("base", "q1", "RR")]
    )
    bad = client.patch(f"{API}/kept/", {"measures": ["RR", "P@x"]}, format="json")
    assert bad.status_code == 400
    assert "entry 2: measure 'P@x'" in str(bad.json())
    created = client.post(
        f"{API}/", {"slug": "fresh", "measures": ["map", "P_10"]}, format="json"
    ).json()
    assert created["measures"] == ["AP", "P@10"]


def test_the_leaderboard_csv_has_a_column_per_kept_measure(
    transactional_db: None, write_file: WRITE
) -> None:
    collection, client = _api_collection(write_file)
    response = client.get(f"{API}/kept/leaderboard/report/?k=2&as=csv")
    assert response.status_code == 200
    lines = response.content.decode().splitlines()
    header = lines[0].split(",")
    assert header[-3:] == ["machine_grades", "AP", "P@2"]
    expected = _trec_eval_all(collection, _trec_eval(collection))
    for line in lines[1:]:
        cells = line.split(",")
        run = cells[1]
        assert float(cells[-2]) == expected[(run, "AP")]
        assert float(cells[-1]) == expected[(run, "P@2")]


def test_migrating_turns_each_rows_measure_names_into_the_sets_key_and_back(
    transactional_db: None, write_file: WRITE
) -> None:
    """Rows written with the names of their set ("AP P@5 nDCG") hold its key after the
    migration, and read as before; back, the current set's rows get their names again."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    rng = random.Random(9)
    collection = _collection(write_file, rng)
    lines = [
        f"q{q} 0 d{d} {rng.randint(0, 3)}" for q in range(4) for d in rng.sample(range(40), 20)
    ]
    services.judgements_import(
        collection=collection,
        source=write_file("qrels.txt", "\n".join(lines)),
        assessor=UserFactory(username="nist"),
    )
    services.collection_update(collection=collection, measures=["AP", "P@5", "nDCG"])
    collection.refresh_from_db()
    key = collection.measures_layout
    before = _stored(collection)
    RunScore.objects.filter(run__name="gamma").update(measures="dropped")  # another set's
    keys_before = [("annotations", "0037_measure_significance")]
    executor = MigrationExecutor(connection)
    executor.migrate(keys_before)
    old = executor.loader.project_state(keys_before).apps
    assert set(
        old.get_model("annotations", "QueryScore").objects.values_list("measures", flat=True)
    ) == {"AP P@5 nDCG"}
    old_runs = old.get_model("annotations", "RunScore").objects
    assert set(old_runs.values_list("measures", flat=True)) == {"AP P@5 nDCG", "dropped"}
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert set(QueryScore.objects.values_list("measures", flat=True)) == {key}
    assert RunScore.objects.get(run__name="gamma").measures == score_bytes.measures_layout(
        ["dropped"]
    )  # still not the collection's: pending its rescore
    RunScore.objects.filter(run__name="gamma").update(measures=key)
    assert _stored(collection) == before == _trec_eval(collection)
