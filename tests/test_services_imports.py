"""Tests for the import and judgement services: counts, history, rescoring, all-or-nothing."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from annotations import selectors, services
from annotations.formats.trec import TrecFormatError
from annotations.models import (
    Collection,
    Document,
    IdealScore,
    Judgement,
    JudgementHistory,
    Query,
    Run,
)
from annotations.services import ImportSummary
from tests.factories import CollectionFactory, DocumentFactory, QueryFactory, UserFactory
from tests.stored import query_score, run_score

WriteFile = Callable[[str, "str | bytes"], Path]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Factories hash a password per user; the production hasher costs ~0.3 s each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def stream(text: str) -> io.BytesIO:
    return io.BytesIO(text.encode())


def ndcg_at_6(run_name: str = "example") -> float:
    return query_score(run__name=run_name, query__qid="q1", k=6).ndcg


def dcg(grades: list[int]) -> float:
    """Linear-gain DCG written out by hand: grade / log2(position + 1)."""
    return sum(grade / math.log2(position + 1) for position, grade in enumerate(grades, 1))


def fresh(query: Query) -> Query:
    return Query.objects.get(pk=query.pk)


# Topics and documents --------------------------------------------------------------------


def test_topics_import_reports_created_updated_and_unchanged(db: None) -> None:
    collection = CollectionFactory()
    first = services.topics_import(collection=collection, source=stream("1\ta\n2\tb\n"))
    assert first == ImportSummary(created=2, updated=0, unchanged=0)
    assert str(first) == "2 created, 0 updated, 0 unchanged"
    again = services.topics_import(collection=collection, source=stream("1\ta\n2\tB\n3\tc\n"))
    assert again == ImportSummary(created=1, updated=1, unchanged=1)


def test_topics_import_from_a_stream_names_the_upload_in_its_errors(db: None) -> None:
    collection = CollectionFactory()
    with pytest.raises(TrecFormatError) as caught:
        services.topics_import(
            collection=collection, source=stream("1\ta\n1\tb\n"), name="topics.tsv"
        )
    assert str(caught.value) == "topics.tsv:2: qid: duplicate '1', first on line 1"
    assert not Query.objects.exists()


def test_documents_import_is_all_or_nothing_across_batches(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("annotations.services.imports.LOOKUP_CHUNK", 2)
    collection = CollectionFactory()
    text = "".join(f"d{i}\ttext {i}\n" for i in range(7)) + "d3\tagain\n"
    with pytest.raises(TrecFormatError) as caught:
        services.documents_import(collection=collection, source=stream(text), name="docs.tsv")
    assert str(caught.value) == "docs.tsv:8: docno: duplicate 'd3', first on line 4"
    assert not Document.objects.exists()


def test_documents_import_counts_across_batches(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("annotations.services.imports.LOOKUP_CHUNK", 2)
    collection = CollectionFactory()
    text = "".join(f"d{i}\ttext {i}\n" for i in range(5))
    assert services.documents_import(collection=collection, source=stream(text)) == (
        ImportSummary(created=5)
    )
    changed = text.replace("text 3", "changed") + "d5\tnew\n"
    assert services.documents_import(collection=collection, source=stream(changed)) == (
        ImportSummary(created=1, updated=1, unchanged=4)
    )
    assert Document.objects.get(docno="d3").text == "changed"


def test_ids_named_only_by_qrels_or_runs_are_created_once_per_collection(db: None) -> None:
    collection, other = CollectionFactory(), CollectionFactory()
    QueryFactory(collection=other, qid="q1")
    first = services.queries_ensure(collection=collection, qids=["q1", "q2", "q1"])
    assert first == services.queries_ensure(collection=collection, qids=["q2", "q1"])
    assert Query.objects.filter(collection=collection).count() == 2
    docs = services.documents_ensure(collection=collection, docnos=["d1", "d1", "d2"])
    assert set(docs) == {"d1", "d2"}
    assert services.documents_ensure(collection=collection, docnos=["d2"]) == {"d2": docs["d2"]}
    assert Document.objects.filter(collection=collection).count() == 2


# Qrels -----------------------------------------------------------------------------------


def test_judgements_import_records_source_and_changing_user_in_history(db: None) -> None:
    collection = CollectionFactory()
    alice, organiser = UserFactory(), UserFactory()
    summary = services.judgements_import(
        collection=collection,
        source=stream("q1 0 d1 2\n"),
        assessor=alice,
        history_source="api",
        changed_by=organiser,
    )
    assert summary == ImportSummary(created=1)
    history = JudgementHistory.objects.get()
    assert (history.assessor, history.changed_by, history.source) == (alice, organiser, "api")
    assert (history.old_grade, history.new_grade) == (None, 2)


def test_judgements_import_marks_only_the_queries_it_changed(db: None) -> None:
    collection = CollectionFactory()
    alice = UserFactory()
    services.judgements_import(
        collection=collection, source=stream("q1 0 d1 2\nq2 0 d1 1\n"), assessor=alice
    )
    versions = dict(Query.objects.values_list("qid", "judgements_version"))
    services.judgements_import(
        collection=collection, source=stream("q1 0 d1 2\nq2 0 d1 3\n"), assessor=alice
    )
    after = dict(Query.objects.values_list("qid", "judgements_version"))
    assert after == {"q1": versions["q1"], "q2": versions["q2"] + 1}


def test_judgements_import_rescores_after_commit(worked_example: Collection, assessor: Any) -> None:
    assert ndcg_at_6() == pytest.approx(0.7850023719699)
    # d1 (at rank 1) drops from 3 to 0.
    services.judgements_import(
        collection=worked_example, source=stream("q1 0 d1 0\n"), assessor=assessor
    )
    expected = dcg([0, 2, 3, 0, 1, 2]) / dcg([3, 3, 2, 2, 2, 1])
    assert ndcg_at_6() == pytest.approx(expected)
    assert not Query.objects.get(qid="q1").scores_pending


# Runs ------------------------------------------------------------------------------------


def test_run_import_returns_the_run_and_its_result_count(db: None) -> None:
    collection = CollectionFactory()
    owner = UserFactory()
    imported, count = services.run_import(
        collection=collection,
        source=stream("q1 Q0 d1 1 1.0 bm25\nq2 Q0 d1 1 1.0 bm25\n"),
        owner=owner,
        description="baseline",
    )
    assert count == 2
    assert (imported.name, imported.owner, imported.description) == ("bm25", owner, "baseline")
    assert imported.scored_at is None  # scored after commit


@pytest.mark.parametrize("name", ["two words", "", "x" * 201])
def test_run_store_refuses_a_name_that_is_not_an_identifier(db: None, name: str) -> None:
    collection = CollectionFactory()
    with pytest.raises(ValidationError) as caught:
        services.run_store(collection=collection, run_name=name, results={"q1": [("d1", 1.0, 1)]})
    assert "not a valid run name" in caught.value.message_dict["name"][0]
    assert not Run.objects.exists()
    assert not Query.objects.exists()


def test_run_store_refuses_a_document_twice_for_one_query_and_stores_nothing(db: None) -> None:
    collection = CollectionFactory()
    results = {"q2": [("d2", 1.0, 1)], "q1": [("d1", 1.0, 1), ("d1", 0.5, 2)]}
    with pytest.raises(ValueError, match="duplicate docno 'd1'"):
        services.run_store(collection=collection, run_name="sys", results=results)
    assert not Run.objects.exists()
    assert not Query.objects.exists()
    assert not Document.objects.exists()


def test_run_import_replace_keeps_the_description_unless_given(db: None) -> None:
    collection = CollectionFactory()
    services.run_import(
        collection=collection, source=stream("q1 Q0 d1 1 1.0 bm25\n"), description="first"
    )
    replaced, _ = services.run_import(
        collection=collection, source=stream("q1 Q0 d2 1 1.0 bm25\n"), replace=True
    )
    assert replaced.description == "first"
    assert [docno for _, docno, *_ in selectors.run_rows(run=replaced)] == ["d2"]


def test_replacing_a_run_rescores_it_and_leaves_other_runs_alone(
    worked_example: Collection, write_file: WriteFile
) -> None:
    services.run_import(
        collection=worked_example, source=stream("q1 Q0 d8 1 1.0 other\nq1 Q0 d4 2 0.5 other\n")
    )
    other_before = ndcg_at_6("other")
    # The ideal ranking: nDCG@6 becomes 1.
    ideal = "".join(
        f"q1 Q0 {docno} {rank} {10 - rank}.0 example\n"
        for rank, docno in enumerate(["d1", "d3", "d7", "d2", "d6", "d8"], 1)
    )
    services.run_import(collection=worked_example, source=stream(ideal), replace=True)
    assert ndcg_at_6() == pytest.approx(1.0)
    assert ndcg_at_6("other") == other_before
    assert run_score(run__name="example", k=6).ndcg == pytest.approx(1.0)
    assert Run.objects.get(name="example").scored_at is not None


# judgement_record and judgement_delete ---------------------------------------------------


@pytest.fixture
def pair(db: None) -> tuple[Query, Document]:
    collection = CollectionFactory()
    return QueryFactory(collection=collection), DocumentFactory(collection=collection)


def record(query: Query, document: Document, assessor: Any, grade: int, **extra: Any) -> Judgement:
    return services.judgement_record(
        query=query,
        document=document,
        assessor=assessor,
        grade=grade,
        source=extra.pop("source", "form"),
        **extra,
    )


def test_judgement_record_writes_a_history_row_for_creation_and_change(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice, organiser = UserFactory(), UserFactory()
    record(query, document, alice, 1)
    record(query, document, alice, 3, source="api", changed_by=organiser, note="clearer now")
    rows = list(
        JudgementHistory.objects.order_by("id").values_list(
            "old_grade", "new_grade", "source", "changed_by", "note"
        )
    )
    assert rows == [
        (None, 1, "form", alice.pk, ""),
        (1, 3, "api", organiser.pk, "clearer now"),
    ]
    assert Judgement.objects.get().grade == 3
    assert fresh(query).judgements_version == 2


def test_judgement_record_of_an_unchanged_grade_writes_no_history(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice = UserFactory()
    first = record(query, document, alice, 2)
    version = fresh(query).judgements_version
    again = record(query, document, alice, 2)  # a double submit
    assert again.pk == first.pk
    assert Judgement.objects.count() == 1
    assert JudgementHistory.objects.count() == 1
    assert fresh(query).judgements_version == version


def test_judgement_record_of_a_new_note_keeps_it_in_history_without_rescoring(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice = UserFactory()
    record(query, document, alice, 2)
    version = fresh(query).judgements_version
    record(query, document, alice, 2, note="borderline")
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.note) == (2, 2, "borderline")
    assert fresh(query).judgements_version == version


@pytest.mark.parametrize("grade", [4, -1, 100])
def test_judgement_record_refuses_a_grade_off_the_scale_and_writes_nothing(
    pair: tuple[Query, Document], grade: int
) -> None:
    query, document = pair
    alice = UserFactory()
    record(query, document, alice, 1)
    with pytest.raises(ValidationError) as caught:
        record(query, document, alice, grade)
    assert f"{grade} is not on the scale" in caught.value.message_dict["grade"][0]
    assert Judgement.objects.get().grade == 1
    assert JudgementHistory.objects.count() == 1
    assert fresh(query).judgements_version == 1


def test_judgement_record_refuses_a_document_of_another_collection(
    pair: tuple[Query, Document],
) -> None:
    query, _ = pair
    stranger = DocumentFactory()  # in a collection of its own
    with pytest.raises(ValidationError) as caught:
        record(query, stranger, UserFactory(), 1)
    assert "document" in caught.value.message_dict
    assert not Judgement.objects.exists()
    assert not JudgementHistory.objects.exists()


def test_judgement_delete_keeps_a_history_row_and_marks_the_query(
    pair: tuple[Query, Document],
) -> None:
    query, document = pair
    alice, organiser = UserFactory(), UserFactory()
    judgement = record(query, document, alice, 3)
    services.judgement_delete(judgement=judgement, source="admin", changed_by=organiser)
    assert not Judgement.objects.exists()
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.source) == (3, None, "admin")
    assert (latest.assessor, latest.changed_by) == (alice, organiser)
    assert fresh(query).judgements_version == 2
    # Deleting again (a second click) does nothing.
    services.judgement_delete(judgement=judgement, source="admin", changed_by=organiser)
    assert JudgementHistory.objects.count() == 2


def test_judgement_record_and_delete_rescore_after_commit(
    worked_example: Collection, assessor: Any
) -> None:
    query = Query.objects.get(qid="q1")
    d7 = Document.objects.get(docno="d7")  # judged 3, not retrieved by the run
    judgement = Judgement.objects.get(document=d7)
    services.judgement_delete(judgement=judgement, source="form")
    # The ideal ranking loses one 3: [3, 3, 2, 2, 2, 1].
    assert ndcg_at_6() == pytest.approx(dcg([3, 2, 3, 0, 1, 2]) / dcg([3, 3, 2, 2, 2, 1]))
    record(query, d7, assessor, 3)
    assert ndcg_at_6() == pytest.approx(0.7850023719699)
    assert not fresh(query).scores_pending


def test_import_assessor_creates_the_default_account_once(db: None) -> None:
    first = services.import_assessor()
    assert services.import_assessor() == first
    assert first.username == services.IMPORT_ASSESSOR
    assert not first.has_usable_password()


# A judgement saved with the ORM, after commit (annotations/signals.py) --------------------


def test_a_judgement_created_with_the_orm_is_recorded_as_other_and_rescored(
    worked_example: Collection,
) -> None:
    query = Query.objects.get(qid="q1")
    bob = UserFactory(username="bob")
    d1 = Document.objects.get(docno="d1")
    # A fourth 3 for a new document raises the ideal DCG.
    d9 = DocumentFactory(collection=worked_example, docno="d9")
    Judgement.objects.create(query=query, document=d9, assessor=bob, grade=3)
    history = JudgementHistory.objects.latest("id")
    assert (history.old_grade, history.new_grade, history.source) == (None, 3, "other")
    assert ndcg_at_6() == pytest.approx(dcg([3, 2, 3, 0, 1, 2]) / dcg([3, 3, 3, 3, 2, 2]))
    assert IdealScore.objects.get(query=query, k=6).idcg == pytest.approx(dcg([3, 3, 3, 3, 2, 2]))
    assert not fresh(query).scores_pending
    # Changed with save(): another "other" row, and d1 drops out of the scores.
    judgement = Judgement.objects.get(document=d1)
    judgement.grade = 0
    judgement.save()
    latest = JudgementHistory.objects.latest("id")
    assert (latest.old_grade, latest.new_grade, latest.source) == (3, 0, "other")
    assert ndcg_at_6() == pytest.approx(dcg([0, 2, 3, 0, 1, 2]) / dcg([3, 3, 3, 2, 2, 2]))
    assert not fresh(query).scores_pending


def test_judgements_import_in_batches_is_all_or_nothing(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad line in a later batch rolls back the batches already written."""
    monkeypatch.setattr("annotations.services.judgements.QRELS_BATCH", 3)
    collection = CollectionFactory()
    assessor = UserFactory()
    good = "".join(f"q{i % 2} 0 d{i} {i % 4}\n" for i in range(8))
    with pytest.raises(TrecFormatError, match=r"qrels\.txt:9: grade"):
        services.judgements_import(
            collection=collection,
            source=stream(good + "q1 0 dx 7\n"),
            name="qrels.txt",
            assessor=assessor,
        )
    assert not Judgement.objects.exists()
    assert not JudgementHistory.objects.exists()
    assert not Query.objects.filter(collection=collection).exists()


def test_judgements_import_in_batches_counts_and_updates_across_batches(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("annotations.services.judgements.QRELS_BATCH", 3)
    collection = CollectionFactory()
    assessor = UserFactory()
    first = "".join(f"q{i % 2} 0 d{i} 1\n" for i in range(8))
    assert services.judgements_import(
        collection=collection, source=stream(first), assessor=assessor
    ) == ImportSummary(8, 0, 0)
    second = "".join(f"q{i % 2} 0 d{i} {2 if i < 4 else 1}\n" for i in range(10))
    assert services.judgements_import(
        collection=collection, source=stream(second), assessor=assessor
    ) == ImportSummary(2, 4, 4)
    assert Judgement.objects.filter(grade=2).count() == 4
    assert JudgementHistory.objects.filter(old_grade=1, new_grade=2).count() == 4


def test_judgements_import_looks_up_many_queries_in_chunks_and_keeps_other_assessors(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More queries in a batch than one lookup takes: every existing judgement is still
    found (updated or unchanged, never created twice), and another assessor's are untouched."""
    monkeypatch.setattr("annotations.services.judgements.LOOKUP_CHUNK", 2)
    collection = CollectionFactory()
    assessor, other = UserFactory(), UserFactory()
    first = "".join(f"q{i} 0 d{i % 3} 1\n" for i in range(7))
    services.judgements_import(collection=collection, source=stream(first), assessor=other)
    assert services.judgements_import(
        collection=collection, source=stream(first), assessor=assessor
    ) == ImportSummary(7, 0, 0)
    second = "".join(f"q{i} 0 d{i % 3} {2 if i % 2 else 1}\n" for i in range(9))
    assert services.judgements_import(
        collection=collection, source=stream(second), assessor=assessor
    ) == ImportSummary(2, 3, 4)
    assert Judgement.objects.filter(assessor=assessor).count() == 9
    assert set(Judgement.objects.filter(assessor=other).values_list("grade", flat=True)) == {1}


def rankings_of(run: Run) -> dict[str, tuple[int, list[str], bytes, bytes]]:
    """qid -> (size, docnos in stored order, packed scores, packed ranks)."""
    docnos = dict(Document.objects.filter(collection=run.collection).values_list("id", "docno"))
    return {
        ranking.query.qid: (
            ranking.size,
            [docnos[i] for i in ranking.document_ids()],
            bytes(ranking.scores),
            bytes(ranking.ranks),
        )
        for ranking in run.rankings.select_related("query")
    }


RUN_LINES = [
    "q2 Q0 b 3 2.5 sys",
    "q1 Q0 a 1 1.5 sys",
    "q1 Q0 B 2 1.5 sys",
    "q1 Q0 aa 7 1.5 sys",
    'q1 Q0 d,"1" 4 -0 sys',
    "q1 Q0 c\\x 5 0 sys",
    "q1 Q0 top 6 3 sys",
]


def test_plain_and_irregular_files_store_identical_rankings(db: None) -> None:
    """A plain file is read into columns, one with tabs by the line reader; both store the
    same bytes in the same order."""
    first, second = CollectionFactory(), CollectionFactory()
    plain = "\n".join(RUN_LINES) + "\n"
    tabbed = "\n".join(line.replace(" ", "\t") for line in RUN_LINES) + "\n"
    columnar, _ = services.run_import(collection=first, source=stream(plain))
    line_read, _ = services.run_import(collection=second, source=stream(tabbed))
    stored = rankings_of(columnar)
    assert stored == rankings_of(line_read)
    assert stored["q1"][1] == ["top", "aa", "a", "B", 'd,"1"', "c\\x"]  # -0 ties 0


def test_runs_import_stores_what_one_file_at_a_time_stores(db: None) -> None:
    together, apart = CollectionFactory(), CollectionFactory()
    files = [
        "q1 Q0 d1 1 3 one\nq1 Q0 d2 2 2 one\nq2 Q0 d3 1 1 one\n",
        "q1 Q0 d2 1 3 two\nq3 Q0 d4 1 2 two\nq3 Q0 d1 2 1 two\n",
        "q1\tQ0\td5\t1\t1\tthree\n",  # the line reader's
        "q2 Q0 d5 1 1 four\nq2 Q0 d1 2 0.5 four\n",
    ]
    imported = services.runs_import(collection=together, sources=[stream(f) for f in files])
    assert [(run.name, count) for run, count in imported] == [
        ("one", 3),
        ("two", 3),
        ("three", 1),
        ("four", 2),
    ]
    for text in files:
        services.run_import(collection=apart, source=stream(text))
    for name in ("one", "two", "three", "four"):
        assert rankings_of(Run.objects.get(collection=together, name=name)) == rankings_of(
            Run.objects.get(collection=apart, name=name)
        )
    docnos = Document.objects.filter(collection=together).values_list("docno", flat=True)
    assert sorted(docnos) == ["d1", "d2", "d3", "d4", "d5"]
    assert all(run.scored_at is None for run, _ in imported)


def test_runs_import_finds_documents_the_collection_already_has(db: None) -> None:
    collection = CollectionFactory()
    known = DocumentFactory(collection=collection, docno="d1", title="kept")
    services.runs_import(
        collection=collection,
        sources=[stream("q1 Q0 d2 1 1 one\n"), stream("q1 Q0 d1 1 1 two\nq1 Q0 d2 2 0 two\n")],
    )
    run = Run.objects.get(name="two")
    assert run.rankings.get().document_ids() == [
        known.id,
        Document.objects.get(collection=collection, docno="d2").id,
    ]
    assert Document.objects.get(id=known.id).title == "kept"


def test_runs_import_imports_nothing_when_one_file_is_bad(
    worked_example: Collection, write_file: WriteFile
) -> None:
    counts = (Run.objects.count(), Document.objects.count(), Query.objects.count())
    good = write_file("good.txt", "q1 Q0 d1 1 2.0 bm25\nq9 Q0 new 1 1.0 bm25\n")
    bad = write_file("bad.txt", "q1 Q0 d1 1 2.0 dense\nq1 Q0 d1 2 1.0 dense\n")
    with pytest.raises(TrecFormatError) as caught:
        services.runs_import(collection=worked_example, sources=[good, bad])
    assert str(caught.value).startswith(f"{bad}:2: docno: 'd1' is retrieved twice")
    assert (Run.objects.count(), Document.objects.count(), Query.objects.count()) == counts


def test_runs_import_refuses_two_files_of_one_tag(db: None) -> None:
    collection = CollectionFactory()
    with pytest.raises(ValidationError) as caught:
        services.runs_import(
            collection=collection,
            sources=[stream("q1 Q0 d1 1 1 sys\n"), stream("q1 Q0 d2 1 1 sys\n")],
        )
    assert "both hold run 'sys'" in caught.value.message_dict["name"][0]
    assert not Run.objects.exists()


def test_a_rank_beyond_32_bits_is_ignored_and_reported_with_its_line(db: None) -> None:
    collection = CollectionFactory()
    (imported,) = services.run_files_import(
        collection=collection,
        sources=[stream("q1 Q0 d1 1 1 sys\nq1 Q0 d2 4294967296 2 sys\n")],
        names=["run.txt"],
    )
    assert (imported.ignored_ranks, imported.first_ignored_rank_line) == (1, 2)
    # stored as its place in trec_eval's order (d2 first: the higher score)
    assert imported.run.rankings.get().rank_values() == [1, 1]


class Unseekable(io.RawIOBase):
    """A pipe-like stream: readable once, no seek (an upload streamed from elsewhere)."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self.inner.readinto(buffer)


@pytest.mark.parametrize("case", ["unseekable", "larger than the columnar limit"])
def test_files_that_cannot_be_read_whole_go_through_the_line_reader(
    db: None, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from annotations.formats import run_arrow

    reads: list[bytes] = []
    real = run_arrow.read_run_columns
    monkeypatch.setattr(
        run_arrow, "read_run_columns", lambda data: reads.append(data) or real(data)
    )
    text = "\n".join(RUN_LINES) + "\n"
    if case == "unseekable":
        source: Any = io.BufferedReader(Unseekable(text.encode()))
    else:
        monkeypatch.setattr(run_arrow, "MAX_BYTES", 10)
        source = stream(text)
    first, second = CollectionFactory(), CollectionFactory()
    run, count = services.run_import(collection=first, source=source)
    assert reads == []  # never read whole
    assert count == len(RUN_LINES)
    columnar, _ = services.run_import(collection=second, source=stream(text.replace("sys", "s2")))
    assert rankings_of(run) == rankings_of(columnar)


def test_a_run_file_opened_in_text_mode_is_refused_with_the_reason(db: None) -> None:
    with pytest.raises(TypeError, match="binary mode"):
        services.run_import(collection=CollectionFactory(), source=io.StringIO(RUN_LINES[0]))
    assert not Run.objects.exists()


def test_runs_import_replaces_existing_runs_only_when_asked(db: None) -> None:
    collection = CollectionFactory()
    services.run_import(collection=collection, source=stream("q1 Q0 d1 1 1 one\n"))
    files = [stream("q1 Q0 d2 1 1 one\n"), stream("q1 Q0 d3 1 1 two\n")]
    with pytest.raises(ValidationError, match="run 'one' already exists"):
        services.runs_import(collection=collection, sources=files)
    assert list(Run.objects.values_list("name", flat=True)) == ["one"]
    files = [stream("q1 Q0 d2 1 1 one\n"), stream("q1 Q0 d3 1 1 two\n")]
    replaced = services.runs_import(collection=collection, sources=files, replace=True)
    assert [run.name for run, _ in replaced] == ["one", "two"]
    assert rankings_of(Run.objects.get(name="one"))["q1"][1] == ["d2"]


def test_runs_import_of_no_files_changes_nothing(db: None) -> None:
    assert services.runs_import(collection=CollectionFactory(), sources=[]) == []
    assert not Run.objects.exists()


def test_runs_import_with_a_missing_file_imports_nothing(
    db: None, write_file: WriteFile, tmp_path: Path
) -> None:
    collection = CollectionFactory()
    good = write_file("good.txt", "q1 Q0 d1 1 1 one\n")
    with pytest.raises(FileNotFoundError):
        services.runs_import(collection=collection, sources=[good, tmp_path / "absent.txt"])
    assert not Run.objects.exists()
    assert not Document.objects.exists()
