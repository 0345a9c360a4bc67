"""Tests for the management commands: create, import, export, bad input, round trips, demo."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError
from django.test import Client

from annotations import selectors
from annotations.models import (
    Collection,
    Document,
    GradeLevel,
    Judgement,
    JudgementHistory,
    Membership,
    Query,
    Run,
)
from annotations.services.imports import LOOKUP_CHUNK
from tests.factories import CollectionFactory, UserFactory
from tests.stored import run_rows

WriteFile = Callable[[str, "str | bytes"], Path]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Factories hash a password per user; the production hasher costs ~0.3 s each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def assessor(collection: Collection) -> Any:
    """alice, an assessor of "demo": qrels are imported as the judgements of a member only."""
    return member(collection, "alice")


def member(collection: Collection, username: str) -> Any:
    """An account with the assessor role in `collection`, as the members page makes one."""
    user = UserFactory(username=username)
    Membership.objects.create(collection=collection, user=user, role=Membership.ASSESSOR)
    return user


def run(command: str, *args: object) -> str:
    """Run a command as from the shell (every argument a string) and return its stdout."""
    out, err = StringIO(), StringIO()
    call_command(command, *[str(arg) for arg in args], stdout=out, stderr=err)
    return out.getvalue()


def command_error(command: str, *args: object) -> str:
    with pytest.raises(CommandError) as caught:
        run(command, *args)
    return str(caught.value)


def lines(*rows: str) -> str:
    return "".join(f"{row}\n" for row in rows)


def grades_of(collection: Collection, username: str = "alice") -> dict[tuple[str, str], int]:
    return {
        (qid, docno): grade
        for qid, docno, grade in Judgement.objects.filter(
            query__collection=collection, assessor__username=username
        ).values_list("query__qid", "document__docno", "grade")
    }


def rows_of(run: Run) -> list[tuple[str, str, int, float, str]]:
    """(qid, docno, rank, score, tag) in effective order, however results are stored."""
    return list(selectors.run_rows(run=run))


def positions_of(run: Run, qid: str) -> list[str]:
    return [docno for row_qid, docno, *_ in rows_of(run) if row_qid == qid]


def database_snapshot() -> dict[str, object]:
    """Row counts of every model plus the content an import could touch."""
    counts = {model._meta.label: model._default_manager.count() for model in apps.get_models()}
    return {
        "counts": counts,
        "judgements": sorted(
            Judgement.objects.values_list(
                "query__qid", "document__docno", "assessor__username", "grade", "note"
            )
        ),
        "history": sorted(
            JudgementHistory.objects.values_list("id", "old_grade", "new_grade", "source")
        ),
        "queries": sorted(
            Query.objects.values_list(
                "collection__slug",
                "qid",
                "title",
                "description",
                "narrative",
                "judgements_version",
                "scored_version",
            )
        ),
        "documents": sorted(
            Document.objects.values_list(
                "collection__slug", "docno", "title", "text", "url", "content_hash"
            )
        ),
        "runs": sorted(Run.objects.values_list("collection__slug", "name", "description")),
        "results": [
            (run.collection.slug, run.name, rows_of(run))
            for run in Run.objects.order_by("collection__slug", "name")
        ],
        "run_scores": sorted((name, m.k, m.ndcg) for name, m in run_rows()),
        "users": sorted(get_user_model().objects.values_list("username", flat=True)),
    }


# create_collection -----------------------------------------------------------------------


def test_create_collection_uses_the_default_scale_gain_and_cutoffs(db: None) -> None:
    out = run("create_collection", "robust04")
    assert out.strip() == (
        "created collection robust04: gain linear, cutoffs [5, 10, 20], grades 0, 1, 2, 3"
    )
    collection = Collection.objects.get(slug="robust04")
    assert (collection.name, collection.gain, collection.cutoffs) == (
        "robust04",
        "linear",
        [5, 10, 20],
    )
    assert (collection.missing_queries, collection.aggregation) == ("zero", "median")
    labels = list(collection.grades.values_list("value", "label"))
    assert labels == [
        (0, "Not relevant"),
        (1, "Marginally relevant"),
        (2, "Highly relevant"),
        (3, "Perfectly relevant"),
    ]
    assert all(collection.grades.values_list("definition", flat=True))


def test_create_collection_takes_name_gain_cutoffs_and_a_0_to_4_scale(db: None) -> None:
    out = run(
        "create_collection",
        "web",
        "--name",
        "Web track",
        "--gain",
        "exponential",
        "--cutoffs",
        "20,1,10",
        "--grades",
        "0-4",
        "--missing",
        "skip",
        "--aggregation",
        "majority",
        "--machine-grades",
        "fill",
    )
    assert "cutoffs [1, 10, 20], grades 0, 1, 2, 3, 4" in out
    collection = Collection.objects.get(slug="web")
    assert (collection.name, collection.gain, collection.sorted_cutoffs) == (
        "Web track",
        "exponential",
        [1, 10, 20],
    )
    assert (collection.missing_queries, collection.aggregation) == ("skip", "majority")
    assert collection.machine_grades == "fill"
    assert list(collection.grades.values_list("value", "label")) == [
        (value, f"Grade {value}") for value in range(5)
    ]


@pytest.mark.parametrize(
    "options",
    [
        ["--grades=-2..3"],
        ["--grades", "-2..3"],
        ["--grades", "-2,-1,0,1,2,3"],
        ["--grades=-2,-1,0,1,2,3"],
        ["--grades", "-2-3"],
        ["--grades", " -2 .. 3 "],
    ],
)
def test_create_collection_takes_a_negative_scale_as_the_readme_writes_it(
    db: None, options: list[str]
) -> None:
    out = run("create_collection", "neg", *options, "--name", "after the scale")
    assert "grades -2, -1, 0, 1, 2, 3" in out
    collection = Collection.objects.get(slug="neg")
    assert collection.name == "after the scale"
    assert list(collection.grades.values_list("value", flat=True)) == [-2, -1, 0, 1, 2, 3]


def test_a_negative_scale_admits_negative_grades_in_qrels(db: None, write_file: WriteFile) -> None:
    run("create_collection", "neg", "--grades", "-1..2")
    path = write_file("neg.qrels", "q1 0 d1 -1\nq1 0 d2 2\n")
    assert "2 created" in run("import_qrels", "neg", path)
    message = command_error("import_qrels", "neg", write_file("low.qrels", "q1 0 d3 -2\n"))
    assert "grade: -2 is not one of the allowed levels -1, 0, 1, 2" in message


def test_create_collection_accepts_a_listed_scale(db: None) -> None:
    run("create_collection", "binary", "--grades", "1,0")
    assert list(GradeLevel.objects.values_list("value", flat=True)) == [0, 1]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--cutoffs", "5,ten"], "--cutoffs '5,ten': write integers like 5,10,20"),
        (["--cutoffs", "0,10"], "cutoffs: Cutoffs must be a non-empty list of integers >= 1"),
        (["--cutoffs", ","], "Cutoffs must be a non-empty list of integers >= 1"),
        (["--cutoffs", "5,5"], "cutoffs: Cutoffs must not repeat"),
        (["--cutoffs", "5,2000"], "cutoffs: Cutoffs above 1000 are not supported"),
        (["--grades", "3-0"], "grades: '3-0' is not a grade scale"),
        (["--grades", "3..-2"], "grades: '3..-2' is not a grade scale"),
        (["--grades", "-2"], "grades: '-2' is not a grade scale; write it like '0-3', '-2..3'"),
        (["--grades", "-1..x"], "grades: '-1..x' is not a grade scale"),
        (["--grades", "-20..0"], "grades: grades must lie between -9 and 99"),
        (["--grades", "relevant"], "grades: 'relevant' is not a grade scale"),
        (["--grades", "0-x"], "grades: '0-x' is not a grade scale"),
        (["--grades", "0-100"], "grades: grades must lie between -9 and 99"),
        (["--grades", "0-999999999999"], "grades: grades must lie between -9 and 99"),
        (["--gain", "logarithmic"], "argument --gain: invalid choice: 'logarithmic'"),
        (["--missing", "drop"], "argument --missing: invalid choice: 'drop'"),
    ],
)
def test_create_collection_refuses_bad_values_with_a_clear_error(
    db: None, options: list[str], problem: str
) -> None:
    message = command_error("create_collection", "c1", *options)
    assert problem in message
    assert not Collection.objects.exists()
    assert not GradeLevel.objects.exists()


def test_create_collection_refuses_a_slug_that_is_not_a_slug(db: None) -> None:
    assert "slug: Enter a valid" in command_error("create_collection", "not a slug")
    assert not Collection.objects.exists()


def test_create_collection_refuses_a_duplicate_slug_and_keeps_the_first(db: None) -> None:
    run("create_collection", "trec8", "--gain", "exponential")
    message = command_error("create_collection", "trec8", "--grades", "0-4")
    assert message == "collection 'trec8' already exists"
    collection = Collection.objects.get()
    assert collection.gain == "exponential"
    assert collection.grades.count() == 4


# import_topics ---------------------------------------------------------------------------

TOPICS = {
    "tsv": lines("301\tsolar panel efficiency", "302\tsourdough starter"),
    "jsonl": lines(
        '{"qid": "301", "title": "solar panel efficiency", "description": "How efficient?",'
        ' "narrative": "Figures are relevant."}',
        '{"qid": 302, "title": "sourdough starter", "description": null}',
    ),
    "trec": lines(
        "<top>",
        "<num> Number: 301",
        "<title> Topic: solar panel efficiency",
        "<desc> Description:",
        "How efficient",
        "  are panels?",
        "<narr> Narrative: Figures are relevant.",
        "</top>",
        "",
        "<top>",
        "<num> Number: 302",
        "<title> sourdough starter",
        "</top>",
    ),
}
TOPIC_ROWS = {
    "tsv": [("301", "solar panel efficiency", "", ""), ("302", "sourdough starter", "", "")],
    "jsonl": [
        ("301", "solar panel efficiency", "How efficient?", "Figures are relevant."),
        ("302", "sourdough starter", "", ""),
    ],
    "trec": [
        ("301", "solar panel efficiency", "How efficient are panels?", "Figures are relevant."),
        ("302", "sourdough starter", "", ""),
    ],
}


@pytest.mark.parametrize("layout", sorted(TOPICS))
def test_import_topics_reads_each_format_and_counts_a_reimport_as_unchanged(
    collection: Collection, write_file: WriteFile, layout: str
) -> None:
    path = write_file(f"topics.{layout}", TOPICS[layout])
    assert run("import_topics", "demo", path).strip() == (
        "queries: 2 created, 0 updated, 0 unchanged"
    )
    stored = list(
        Query.objects.filter(collection=collection).values_list(
            "qid", "title", "description", "narrative"
        )
    )
    assert stored == TOPIC_ROWS[layout]
    assert run("import_topics", "demo", path).strip() == (
        "queries: 0 created, 0 updated, 2 unchanged"
    )
    assert Query.objects.filter(collection=collection).count() == 2


def test_import_topics_updates_changed_topics_and_adds_new_ones(
    collection: Collection, write_file: WriteFile
) -> None:
    run("import_topics", "demo", write_file("a.tsv", TOPICS["tsv"]))
    changed = lines("301\tsolar panel efficiency", "302\tsourdough", "303\tbicycle chains")
    out = run("import_topics", "demo", write_file("b.tsv", changed))
    assert out.strip() == "queries: 1 created, 1 updated, 1 unchanged"
    assert dict(Query.objects.values_list("qid", "title")) == {
        "301": "solar panel efficiency",
        "302": "sourdough",
        "303": "bicycle chains",
    }


def test_import_topics_fills_in_queries_a_qrels_file_created(
    collection: Collection, write_file: WriteFile
) -> None:
    run("import_qrels", "demo", write_file("qrels.txt", lines("301 0 d1 2")))
    out = run("import_topics", "demo", write_file("t.tsv", TOPICS["tsv"]))
    assert out.strip() == "queries: 1 created, 1 updated, 0 unchanged"
    assert Query.objects.get(qid="301").judgements.count() == 1


# import_documents ------------------------------------------------------------------------

DOCUMENTS = {
    "jsonl": lines(
        '{"docno": "FT1", "title": "Solar", "text": "Panels convert light.",'
        ' "url": "https://example.org/ft1", "extra": 1}',
        '{"docno": 2, "text": "Bread."}',
    ),
    "tsv3": lines("FT1\tSolar\tPanels convert light.", "2\t\tBread."),
    "tsv2": lines("FT1\tPanels convert light.", "2\tBread."),
}
DOCUMENT_ROWS = {
    "jsonl": [
        ("2", "", "Bread.", ""),
        ("FT1", "Solar", "Panels convert light.", "https://example.org/ft1"),
    ],
    "tsv3": [("2", "", "Bread.", ""), ("FT1", "Solar", "Panels convert light.", "")],
    "tsv2": [("2", "", "Bread.", ""), ("FT1", "", "Panels convert light.", "")],
}


@pytest.mark.parametrize("layout", sorted(DOCUMENTS))
def test_import_documents_reads_jsonl_and_tsv_and_counts_a_reimport_as_unchanged(
    collection: Collection, write_file: WriteFile, layout: str
) -> None:
    path = write_file(f"docs.{layout}", DOCUMENTS[layout])
    assert run("import_documents", "demo", path).strip() == (
        "documents: 2 created, 0 updated, 0 unchanged"
    )
    stored = list(
        Document.objects.filter(collection=collection)
        .order_by("docno")
        .values_list("docno", "title", "text", "url")
    )
    assert stored == DOCUMENT_ROWS[layout]
    assert all(len(h) == 64 for h in Document.objects.values_list("content_hash", flat=True))
    assert run("import_documents", "demo", path).strip() == (
        "documents: 0 created, 0 updated, 2 unchanged"
    )


def test_import_documents_updates_changed_text_and_its_hash(
    collection: Collection, write_file: WriteFile
) -> None:
    run("import_documents", "demo", write_file("a.tsv", DOCUMENTS["tsv3"]))
    old_hash = Document.objects.get(docno="FT1").content_hash
    changed = lines("FT1\tSolar\tPanels convert sunlight.", "2\t\tBread.", "3\t\tNew.")
    out = run("import_documents", "demo", write_file("b.tsv", changed))
    assert out.strip() == "documents: 1 created, 1 updated, 1 unchanged"
    document = Document.objects.get(docno="FT1")
    assert document.text == "Panels convert sunlight."
    assert document.content_hash != old_hash


# import_qrels ----------------------------------------------------------------------------


def test_import_qrels_prints_counts_and_creates_unknown_queries_and_documents(
    collection: Collection, write_file: WriteFile, assessor: Any
) -> None:
    path = write_file("qrels.txt", lines("q1 0 d1 3", "q1 0 d2 0", "q2 0 d1 1"))
    out = run("import_qrels", "demo", path, "--assessor", "alice")
    assert out.strip() == "judgements: 3 created, 0 updated, 0 unchanged"
    assert sorted(Query.objects.values_list("qid", "title")) == [("q1", ""), ("q2", "")]
    assert sorted(Document.objects.values_list("docno", "text")) == [("d1", ""), ("d2", "")]
    assert grades_of(collection) == {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d1"): 1}
    created = JudgementHistory.objects.order_by("id")
    assert [(h.old_grade, h.new_grade, h.source) for h in created] == [
        (None, 3, "import"),
        (None, 0, "import"),
        (None, 1, "import"),
    ]


def test_import_qrels_again_updates_changed_grades_with_one_history_row_each(
    worked_example: Collection, write_file: WriteFile
) -> None:
    history_before = JudgementHistory.objects.count()
    # d1 and d4 change, d2 stays, d9 is new; d3 and d5-d8 are not in the file.
    path = write_file("again.txt", lines("q1 0 d1 1", "q1 0 d2 2", "q1 0 d4 3", "q1 0 d9 2"))
    out = run("import_qrels", "demo", path, "--assessor", "alice")
    assert out.strip() == "judgements: 1 created, 2 updated, 1 unchanged"
    assert grades_of(worked_example) == {
        ("q1", "d1"): 1,
        ("q1", "d2"): 2,
        ("q1", "d3"): 3,
        ("q1", "d4"): 3,
        ("q1", "d5"): 1,
        ("q1", "d6"): 2,
        ("q1", "d7"): 3,
        ("q1", "d8"): 2,
        ("q1", "d9"): 2,
    }
    new_rows = JudgementHistory.objects.order_by("id")[history_before:]
    assert sorted((h.document.docno, h.old_grade, h.new_grade, h.source) for h in new_rows) == [
        ("d1", 3, 1, "import"),
        ("d4", 0, 3, "import"),
        ("d9", None, 2, "import"),
    ]
    assert all(h.assessor.username == "alice" for h in new_rows)


def test_import_qrels_of_the_same_file_twice_changes_nothing(
    worked_example: Collection, write_file: WriteFile
) -> None:
    before = database_snapshot()
    path = write_file("same.txt", lines(*(f"q1 0 d{i} {g}" for i, g in enumerate([3, 2], 1))))
    out = run("import_qrels", "demo", path, "--assessor", "alice")
    assert out.strip() == "judgements: 0 created, 0 updated, 2 unchanged"
    assert database_snapshot() == before


def test_import_qrels_without_assessor_uses_a_passwordless_trec_account(
    collection: Collection, write_file: WriteFile
) -> None:
    run("import_qrels", "demo", write_file("qrels.txt", lines("q1 0 d1 2")))
    judgement = Judgement.objects.get()
    assert judgement.assessor.username == "trec"
    assert not judgement.assessor.has_usable_password()


def test_import_qrels_keeps_each_assessors_judgements_apart(
    worked_example: Collection, write_file: WriteFile
) -> None:
    member(worked_example, "bob")
    run("import_qrels", "demo", write_file("bob.txt", lines("q1 0 d1 0")), "--assessor", "bob")
    assert grades_of(worked_example, "bob") == {("q1", "d1"): 0}
    assert grades_of(worked_example)[("q1", "d1")] == 3


@pytest.mark.parametrize("name", ["nobody", "outsider"])
def test_import_qrels_as_anyone_but_a_member_fails_alike_whether_the_account_exists(
    worked_example: Collection, write_file: WriteFile, name: str
) -> None:
    other = CollectionFactory(slug="other")
    member(other, "outsider")
    before = database_snapshot()
    path = write_file("qrels.txt", lines("q1 0 d1 0"))
    message = command_error("import_qrels", "demo", path, "--assessor", name)
    assert message == (
        f"assessor: '{name}' is not an assessor or organiser of this collection: add them on "
        "the Members page (/collections/demo/members/) or with POST "
        "/api/v1/collections/demo/members/ first. (nothing was changed)"
    )
    assert database_snapshot() == before


def test_import_qrels_follows_the_collections_own_scale(
    transactional_db: None, write_file: WriteFile
) -> None:
    run("create_collection", "binary", "--grades", "0-1")
    path = write_file("qrels.txt", lines("q1 0 d1 1", "q1 0 d2 2"))
    message = command_error("import_qrels", "binary", path)
    assert f"{path}:2: grade: 2 is not one of the allowed levels 0, 1" in message
    assert not Judgement.objects.exists()
    run("import_qrels", "binary", write_file("ok.txt", lines("q1 0 d1 1", "q1 0 d2 0")))
    assert Judgement.objects.count() == 2


# import_run ------------------------------------------------------------------------------


def test_import_run_names_the_run_after_its_tag(
    collection: Collection, write_file: WriteFile
) -> None:
    path = write_file("run.txt", lines("q1 Q0 d1 1 2.0 bm25", "q1 Q0 d2 2 1.0 bm25"))
    assert run("import_run", "demo", path).strip() == "run: bm25, 2 results"
    assert list(Run.objects.values_list("name", flat=True)) == ["bm25"]


def test_import_run_takes_a_name_description_and_owner(
    collection: Collection, write_file: WriteFile, assessor: Any
) -> None:
    path = write_file("run.txt", lines("q1 Q0 d1 1 2.0 bm25"))
    out = run(
        "import_run",
        "demo",
        path,
        "--name",
        "bm25-tuned",
        "--description",
        "k1=0.9",
        "--owner",
        "alice",
    )
    assert out.strip() == "run: bm25-tuned, 1 results"
    imported = Run.objects.get()
    assert (imported.name, imported.description, imported.owner) == (
        "bm25-tuned",
        "k1=0.9",
        assessor,
    )


def test_import_run_with_an_unknown_owner_fails_clearly(
    worked_example: Collection, write_file: WriteFile
) -> None:
    before = database_snapshot()
    path = write_file("run.txt", lines("q1 Q0 d1 1 2.0 bm25"))
    assert command_error("import_run", "demo", path, "--owner", "ghost") == (
        "--owner: no user named 'ghost'"
    )
    assert database_snapshot() == before


def test_import_run_refuses_an_existing_name_without_replace_and_changes_nothing(
    worked_example: Collection, write_file: WriteFile
) -> None:
    before = database_snapshot()
    path = write_file("again.txt", lines("q1 Q0 d9 1 9.0 example", "q7 Q0 d1 1 1.0 example"))
    message = command_error("import_run", "demo", path)
    assert "name: run 'example' already exists in demo" in message
    assert "--replace" in message
    assert database_snapshot() == before


def test_import_run_with_replace_replaces_the_results(
    worked_example: Collection, write_file: WriteFile
) -> None:
    example = Run.objects.get(name="example")
    path = write_file("again.txt", lines("q1 Q0 d9 1 9.0 example", "q1 Q0 d1 2 8.0 example"))
    assert run("import_run", "demo", path, "--replace").strip() == "run: example, 2 results"
    assert Run.objects.get().pk == example.pk
    assert positions_of(example, "q1") == ["d9", "d1"]
    assert len(rows_of(example)) == 2


def test_import_run_positions_follow_trec_eval_order_whatever_the_rank_column_says(
    collection: Collection, write_file: WriteFile
) -> None:
    path = write_file(
        "run.txt",
        lines(
            "q1 Q0 low 1 0.5 sys",
            "q1 Q0 d10 2 3.0 sys",
            "q1 Q0 high 3 9.0 sys",
            "q1 Q0 d9 4 3.0 sys",  # ties with d10: docno descending puts d9 first
            "q1 Q0 D9 5 3.0 sys",
            "q1 Q0 neg 6 -1.0 sys",
        ),
    )
    run("import_run", "demo", path)
    sys_run = Run.objects.get(name="sys")
    assert positions_of(sys_run, "q1") == ["high", "d9", "d10", "D9", "low", "neg"]
    ranks = {docno: rank for _, docno, rank, _, _ in rows_of(sys_run)}
    assert ranks == {"low": 1, "d10": 2, "high": 3, "d9": 4, "D9": 5, "neg": 6}


# Bad input: names the file, line and problem; exits with an error; changes nothing --------


QRELS_GOOD = [f"q1 0 d{i} {(i + 1) % 4}" for i in range(1, 9)] + [
    f"q{2 + i // 20} 0 doc{i} {i % 4}" for i in range(300)
]
RUN_GOOD = [f"q1 Q0 d{i} {i} {10 + i}.5 example" for i in range(1, 9)] + [
    f"q{2 + i // 50} Q0 doc{i} {i % 50 + 1} {100 - i % 50}.25 example" for i in range(300)
]
TOPICS_GOOD = ["q1\tsolar panel efficiency"] + [f"t{i}\ttopic {i}" for i in range(300)]
# More than one batch of the streamed document import, so a late error follows real inserts.
DOCUMENTS_GOOD = ["d1\tNew title\tNew text"] + [
    f"doc{i}\tTitle {i}\tText {i}" for i in range(LOOKUP_CHUNK + 200)
]
GOOD = {
    "import_qrels": (QRELS_GOOD, ["--assessor", "alice"]),
    "import_run": (RUN_GOOD, ["--replace"]),
    "import_topics": (TOPICS_GOOD, []),
    "import_documents": (DOCUMENTS_GOOD, []),
}


@dataclass(frozen=True)
class BadInput:
    command: str
    bad_line: str | bytes
    problem: str

    @property
    def line(self) -> int:
        return len(GOOD[self.command][0]) + 1

    def content(self) -> bytes:
        good = lines(*GOOD[self.command][0]).encode()
        bad = self.bad_line if isinstance(self.bad_line, bytes) else self.bad_line.encode()
        # A few good lines after the bad one, as in a real file.
        return good + bad + b"\n" + lines(*GOOD[self.command][0][-3:]).encode()


BAD_LINES = {
    "qrels-too-few-columns": BadInput(
        "import_qrels", "q9 0 d9", "expected 4 columns (qid iter docno grade), found 3"
    ),
    "qrels-too-many-columns": BadInput(
        "import_qrels", "q9 0 d9 1 x", "expected 4 columns (qid iter docno grade), found 5"
    ),
    "qrels-word-grade": BadInput("import_qrels", "q9 0 d9 high", "grade: 'high' is not an integer"),
    "qrels-decimal-grade": BadInput(
        "import_qrels", "q9 0 d9 1.5", "grade: '1.5' is not a whole number (grades are integers)"
    ),
    "qrels-grade-above-scale": BadInput(
        "import_qrels", "q9 0 d9 4", "grade: 4 is not one of the allowed levels 0, 1, 2, 3"
    ),
    "qrels-grade-below-scale": BadInput(
        "import_qrels", "q9 0 d9 -1", "grade: -1 is not one of the allowed levels 0, 1, 2, 3"
    ),
    "qrels-duplicate-judgement": BadInput(
        "import_qrels", "q1 0 d3 1", "docno: 'd3' is judged twice for qid 'q1', first on line 3"
    ),
    "qrels-not-utf8": BadInput(
        "import_qrels", b"q9 0 d\xe99 1", "not valid UTF-8 (byte 0xe9 at column 7)"
    ),
    "run-too-few-columns": BadInput(
        "import_run", "q9 Q0 d9 1 0.5", "expected 6 columns (qid Q0 docno rank score tag), found 5"
    ),
    "run-duplicate-document": BadInput(
        "import_run",
        "q1 Q0 d3 9 0.5 example",
        "docno: 'd3' is retrieved twice for qid 'q1', first on line 3",
    ),
    "run-bad-score": BadInput(
        "import_run", "q9 Q0 d9 1 high example", "score: 'high' is not a number"
    ),
    "run-nan-score": BadInput(
        "import_run", "q9 Q0 d9 1 nan example", "score: 'nan' is not a finite"
    ),
    "run-second-tag": BadInput(
        "import_run", "q9 Q0 d9 1 1.0 other", "tag: 'other' differs from 'example'"
    ),
    "run-not-utf8": BadInput(
        "import_run", b"q9 Q0 d9 1 1.0 ex\xffample", "not valid UTF-8 (byte 0xff"
    ),
    "topics-extra-column": BadInput(
        "import_topics", "t9\ttitle\tmore", "expected 2 tab-separated columns (qid, title), found 3"
    ),
    "topics-duplicate-qid": BadInput(
        "import_topics", "t7\tagain", "qid: duplicate 't7', first on line 9"
    ),
    "topics-not-utf8": BadInput(
        "import_topics", b"t9\tcaf\xe9", "not valid UTF-8 (byte 0xe9 at column 7)"
    ),
    "documents-missing-column": BadInput(
        "import_documents",
        "doc-x\tonly text",
        "expected 3 tab-separated columns (docno, title, text), found 2, unlike line 1",
    ),
    "documents-duplicate-docno": BadInput(
        "import_documents", "doc5\tAgain\tText", "docno: duplicate 'doc5', first on line 7"
    ),
    "documents-not-utf8": BadInput(
        "import_documents", b"doc-x\tT\t\x80", "not valid UTF-8 (byte 0x80"
    ),
}


@pytest.mark.parametrize("case", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_bad_line_after_many_good_ones_is_named_and_nothing_is_imported(
    worked_example: Collection, write_file: WriteFile, case: BadInput
) -> None:
    path = write_file("input.txt", case.content())
    options = GOOD[case.command][1]
    before = database_snapshot()
    message = command_error(case.command, "demo", path, *options)
    assert message.startswith(f"{path}:{case.line}: "), message
    assert case.problem in message
    assert message.endswith("(nothing was imported)")
    assert database_snapshot() == before


@pytest.mark.parametrize("command", sorted(GOOD))
def test_the_good_lines_of_the_bad_input_tests_do_import(
    worked_example: Collection, write_file: WriteFile, command: str
) -> None:
    """Guards the test above: without the bad line, the same file changes the database."""
    good, options = GOOD[command]
    before = database_snapshot()
    run(command, "demo", write_file("input.txt", lines(*good)), *options)
    assert database_snapshot() != before


@pytest.mark.parametrize("command", sorted(GOOD))
@pytest.mark.parametrize("content", ["", "\n  \n\t\n", "\ufeff"], ids=["empty", "blank", "bom"])
def test_an_empty_file_is_refused_and_nothing_is_imported(
    worked_example: Collection, write_file: WriteFile, command: str, content: str
) -> None:
    path = write_file("empty.txt", content)
    before = database_snapshot()
    message = command_error(command, "demo", path, *GOOD[command][1])
    assert message == f"{path}: file is empty (nothing was imported)"
    assert database_snapshot() == before


@pytest.mark.parametrize("command", sorted(GOOD))
def test_an_unknown_collection_is_named_with_the_file_and_nothing_is_imported(
    worked_example: Collection, write_file: WriteFile, command: str
) -> None:
    path = write_file("input.txt", lines(*GOOD[command][0][:5]))
    before = database_snapshot()
    message = command_error(command, "nope", path, *GOOD[command][1])
    assert message.startswith(f"{path}: unknown collection 'nope' (known: demo)"), message
    assert database_snapshot() == before


def test_a_failed_qrels_import_under_the_default_account_does_not_create_it(
    collection: Collection, write_file: WriteFile
) -> None:
    before = database_snapshot()
    path = write_file("qrels.txt", lines("q1 0 d1 1", "q1 0 d2 9"))
    assert f"{path}:2: grade:" in command_error("import_qrels", "demo", path)
    assert database_snapshot() == before
    assert not get_user_model().objects.filter(username="trec").exists()


def test_a_missing_file_is_reported_and_nothing_is_imported(
    worked_example: Collection, tmp_path: Path
) -> None:
    before = database_snapshot()
    path = tmp_path / "absent.txt"
    message = command_error("import_qrels", "demo", path)
    assert message == f"{path}: No such file or directory (nothing was imported)"
    assert database_snapshot() == before


def test_a_failed_import_exits_with_status_1_and_prints_the_error(
    worked_example: Collection, write_file: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_file("qrels.txt", lines("q1 0 d1 1", "q1 0 d2 x"))
    command = load_command_class("annotations", "import_qrels")
    with pytest.raises(SystemExit) as caught:
        command.run_from_argv(["manage.py", "import_qrels", "demo", str(path)])
    assert caught.value.code == 1
    assert f"{path}:2: grade: 'x' is not an integer" in capsys.readouterr().err


# Export and round trips ------------------------------------------------------------------


def test_export_qrels_writes_one_line_per_judged_pair_in_qid_and_docno_order(
    collection: Collection, write_file: WriteFile
) -> None:
    bob = member(collection, "bob")
    carol = member(collection, "carol")
    run("import_qrels", "demo", write_file("a.txt", lines("q2 7 d1 1", "q1 x d2 3", "q1 0 d1 0")))
    run("import_qrels", "demo", write_file("b.txt", lines("q1 0 d2 1")), "--assessor", bob.username)
    run(
        "import_qrels",
        "demo",
        write_file("c.txt", lines("q1 0 d2 2")),
        "--assessor",
        carol.username,
    )
    # d2 of q1 has grades 3, 1 and 2: the median is 2.
    assert run("export_qrels", "demo") == lines("q1 0 d1 0", "q1 0 d2 2", "q2 0 d1 1")


def test_qrels_round_trip_through_a_fresh_collection_gives_identical_text(
    collection: Collection, write_file: WriteFile
) -> None:
    rows = [
        f"{qid} 0 {docno} {(len(qid) + len(docno)) % 4}"
        for qid in ("301", "q1", "Q-2", "a.b")
        for docno in ("d1", "d10", "d9", "D9", "doc-b", "doca", "LA010189-0001")
    ]
    run("import_qrels", "demo", write_file("qrels.txt", lines(*reversed(rows))))
    first = run("export_qrels", "demo")
    assert sorted(first.splitlines()) == sorted(rows)
    run("create_collection", "copy")
    out = run("import_qrels", "copy", write_file("export.txt", first))
    assert out.strip() == f"judgements: {len(rows)} created, 0 updated, 0 unchanged"
    assert run("export_qrels", "copy") == first


def test_export_run_lists_queries_by_qid_and_results_by_effective_position(
    collection: Collection, write_file: WriteFile
) -> None:
    run(
        "import_run",
        "demo",
        write_file(
            "run.txt",
            lines(
                "q2 Q0 c 1 1.0 sys",
                "q1 Q0 a 1 1.5 sys",
                "q2 Q0 b 2 7.0 sys",
                "q1 Q0 b 2 2.5 sys",
                "q1 Q0 c 3 2.5 sys",
            ),
        ),
    )
    assert run("export_run", "demo", "sys") == lines(
        "q1 Q0 c 3 2.5 sys",
        "q1 Q0 b 2 2.5 sys",
        "q1 Q0 a 1 1.5 sys",
        "q2 Q0 b 2 7.0 sys",
        "q2 Q0 c 1 1.0 sys",
    )


def parsed_run_line(line: str) -> tuple[str, str, int, float, str]:
    qid, _, docno, rank, score, tag = line.split()
    return qid, docno, int(rank), float(score), tag


AWKWARD_SCORES = [
    0.1 + 0.2,
    1e-300,
    1e-300,  # a tie
    -1e-300,
    2.5e300,
    123456789.12345679,
    1 / 3,
    0.0,
    -0.0,  # ties with 0.0
    -7.0,
    3.0,
    3.0,
    3.0,
]


def test_run_round_trip_with_awkward_scores_and_shuffled_lines_gives_identical_text(
    collection: Collection, write_file: WriteFile
) -> None:
    rows = []
    for qid in ("q2", "q10", "q1"):
        for index, score in enumerate(AWKWARD_SCORES):
            # Ranks deliberately disagree with the scores.
            rows.append(f"{qid} Q0 {qid}-doc{index} {index + 1} {score!r} awkward")
    rows = rows[::2] + rows[1::2]  # not grouped by rank or query
    run("import_run", "demo", write_file("run.txt", lines(*rows)))
    first = run("export_run", "demo", "awkward")
    # Compared as numbers: SQLite stores -0.0 as 0.0 (PostgreSQL keeps the sign); they tie.
    assert sorted(map(parsed_run_line, first.splitlines())) == sorted(map(parsed_run_line, rows))
    run("create_collection", "copy")
    run("import_run", "copy", write_file("export.txt", first))
    assert run("export_run", "copy", "awkward") == first
    stored = Run.objects.get(collection__slug="copy")
    scores = sorted(score for qid, _, _, score, _ in rows_of(stored) if qid == "q1")
    assert scores == sorted(AWKWARD_SCORES)
    assert 0.1 + 0.2 in scores
    assert 0.3 not in scores


def test_run_round_trip_keeps_positions_for_a_file_not_in_rank_order(
    collection: Collection, write_file: WriteFile
) -> None:
    rows = [
        "q1 Q0 e 5 0.1 sys",
        "q1 Q0 a 1 0.9 sys",
        "q1 Q0 c 3 0.5 sys",
        "q1 Q0 b 2 0.5 sys",
        "q1 Q0 d 4 0.3 sys",
    ]
    run("import_run", "demo", write_file("run.txt", lines(*rows)))
    first = run("export_run", "demo", "sys")
    assert first == lines(rows[1], rows[2], rows[3], rows[4], rows[0])
    run("create_collection", "copy")
    run("import_run", "copy", write_file("export.txt", first))
    assert run("export_run", "copy", "sys") == first
    copy = Run.objects.get(collection__slug="copy")
    assert positions_of(copy, "q1") == ["a", "c", "b", "d", "e"]


def test_export_run_of_an_unknown_run_or_collection_fails_clearly(
    worked_example: Collection,
) -> None:
    assert command_error("export_run", "demo", "nope") == "no run 'nope' in demo"
    assert command_error("export_run", "nope", "example").startswith("unknown collection 'nope'")
    assert command_error("export_qrels", "nope").startswith("unknown collection 'nope'")


# load_demo -------------------------------------------------------------------------------

PASSWORD_LINE = re.compile(r"^\s+(organiser|assessor)\s+password: (\S+)$", re.MULTILINE)


def passwords(out: str) -> dict[str, str]:
    return dict(PASSWORD_LINE.findall(out))


@pytest.fixture(autouse=True)
def _demo_accounts_file(settings: Any, tmp_path: Path) -> Path:
    settings.NDCG_DEMO_ACCOUNTS_FILE = str(tmp_path / "demo-accounts.txt")
    return tmp_path / "demo-accounts.txt"


def test_load_demo_creates_the_demo_collection_and_two_accounts(
    transactional_db: None, _demo_accounts_file: Path
) -> None:
    out = run("load_demo")
    assert passwords(_demo_accounts_file.read_text()) == passwords(out)
    assert _demo_accounts_file.stat().st_mode & 0o077 == 0  # readable by its owner only
    assessor = get_user_model().objects.get(username="assessor")
    waiting = selectors.judging.assignments_of(user=assessor)
    assert len(waiting) == 1
    assignment, progress = waiting[0]
    assert assignment.pool.name == "demo"
    assert 0 < progress.total <= 10 and progress.done == 0  # a small assignment, untouched
    assert f"{progress.total} pairs waiting" in out
    demo = Collection.objects.get(slug="demo")
    assert set(passwords(out)) == {"organiser", "assessor"}
    assert demo.queries.count() >= 3
    assert sorted(demo.runs.values_list("name", flat=True)) == ["bm25", "example", "random"]
    assert Judgement.objects.filter(query__collection=demo).exists()
    roles = set(Membership.objects.values_list("user__username", "role"))
    assert roles == {("organiser", Membership.ORGANISER), ("assessor", Membership.ASSESSOR)}
    users = get_user_model().objects
    assert users.get(username="organiser").is_superuser
    assert not users.get(username="assessor").is_staff
    for username, password in passwords(out).items():
        assert users.get(username=username).check_password(password)


def test_load_demo_can_run_twice(transactional_db: None) -> None:
    run("load_demo")
    before = database_snapshot()
    out = run("load_demo")
    assert "0 created, 0 updated" in out
    assert set(passwords(out)) == {"organiser", "assessor"}
    after = database_snapshot()
    assert after == before


def test_the_printed_organiser_password_logs_into_the_admin(transactional_db: None) -> None:
    password = passwords(run("load_demo"))["organiser"]
    client = Client()
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "organiser", "password": password, "next": "/admin/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    page = client.get("/admin/annotations/collection/")
    assert page.status_code == 200
    assert "demo" in page.content.decode()


def test_import_run_imports_several_files_together(
    collection: Collection, write_file: WriteFile
) -> None:
    first = write_file("a.txt", lines("q1 Q0 d1 1 2.0 bm25", "q1 Q0 d2 2 1.0 bm25"))
    second = write_file("b.txt", lines("q1 Q0 d2 1 2.0 dense", "q2 Q0 d3 1 1.0 dense"))
    out = run("import_run", "demo", first, second)
    assert out.splitlines() == ["run: bm25, 2 results", "run: dense, 2 results"]
    assert positions_of(Run.objects.get(name="dense"), "q1") == ["d2"]
    assert Document.objects.filter(collection=collection).count() == 3


def test_import_run_of_several_files_imports_none_when_one_is_bad(
    worked_example: Collection, write_file: WriteFile
) -> None:
    before = database_snapshot()
    good = write_file("good.txt", lines("q1 Q0 d1 1 2.0 bm25", "q9 Q0 new 1 1.0 bm25"))
    bad = write_file("bad.txt", lines("q1 Q0 d1 1 2.0 dense", "q1 Q0 d2 2 x dense"))
    message = command_error("import_run", "demo", good, bad)
    assert message == f"{bad}:2: score: 'x' is not a number (nothing was imported)"
    assert database_snapshot() == before


def test_import_run_name_is_refused_with_several_files(
    collection: Collection, write_file: WriteFile
) -> None:
    first = write_file("a.txt", lines("q1 Q0 d1 1 2.0 bm25"))
    second = write_file("b.txt", lines("q1 Q0 d1 1 2.0 dense"))
    assert "--name names one run" in command_error(
        "import_run", "demo", first, second, "--name", "x"
    )
    assert not Run.objects.exists()


def test_serve_demo_prints_the_address_it_listens_on_and_the_accounts_after_the_banner(
    tmp_path: Path,
) -> None:
    """`make demo`'s last step, as a real process: any port (0: the system picks one); its
    Celery worker stops with it."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    root = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "NDCG_DEMO_ACCOUNTS_FILE": str(tmp_path / "accounts.txt"),
        "DJANGO_RUNSERVER_HIDE_WARNING": "true",
        "PYTHONUNBUFFERED": "1",
    }
    manage = [sys.executable, str(root / "manage.py")]
    for command in (["migrate", "--no-input", "-v0"], ["load_demo"]):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True)
    server = subprocess.Popen(
        [*manage, "serve_demo", "127.0.0.1:0", "--noreload", "--skip-checks"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 60
        assert server.stdout is not None
        while time.monotonic() < deadline and not any("also in" in line for line in lines):
            lines.append(server.stdout.readline())
        output = "".join(lines)
        banner = output.index("Starting development server")
        address = re.search(r"The demo is at (http://127\.0\.0\.1:(\d+)/)", output)
        assert address is not None and int(address.group(2)) > 0, output
        assert output.index("The demo is at") > banner  # after the banner, not above it
        assert set(passwords(output[banner:])) == {"organiser", "assessor"}
        with urllib.request.urlopen(address.group(1) + "accounts/login/", timeout=10) as page:
            assert page.status == 200
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        assert len(children) == 1, children  # the worker
    finally:
        server.terminate()
        server.wait(timeout=20)
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_the_demos_worker_reads_every_queue_a_task_is_routed_to_and_runs_the_sweeps(
    settings: Any,
) -> None:
    from annotations.management.commands.serve_demo import worker_command

    command = worker_command()
    queues = set(command[command.index("-Q") + 1].split(","))
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert routed | {"celery"} == queues
    assert "--beat" in command
