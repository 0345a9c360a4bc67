"""The `evaluate` command: trec_eval's `-c -q` layout from stored scores, and output pipes
that close early (`| head -1`) ending it quietly, as they end trec_eval."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
import pytrec_eval
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.models import Collection
from tests.conftest import optional_module
from tests.factories import CollectionFactory

WriteFile = Callable[[str, "str | bytes"], Path]

# q3 is judged but the run does not answer it; q4 is answered but not judged.
QRELS = "q1 0 d1 3\nq1 0 d2 1\nq1 0 d3 2\nq2 0 d4 2\nq2 0 d5 0\nq3 0 d6 1\n"
RUN = "q1 Q0 d2 1 3.0 sys\nq1 Q0 d3 2 2.5 sys\nq1 Q0 d9 3 2.0 sys\nq2 Q0 d4 1 1.0 sys\n"
RUN += "q4 Q0 d1 1 1.0 sys\n"
KS = (2, 5)


def evaluate(*args: str) -> str:
    out = StringIO()
    call_command("evaluate", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def trec_eval_lines() -> list[str]:
    """What trec_eval 10 prints with `-c -q -m ndcg_cut.2,5` (pytrec_eval computes the
    values; trec_eval prints every judged query, 0 for those the run did not answer)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    ranking: dict[str, dict[str, float]] = {}
    for line in RUN.splitlines():
        qid, _, docno, _, score, _ = line.split()
        ranking.setdefault(qid, {})[docno] = float(score)
    result = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.2,5"}).evaluate(ranking)
    lines = []
    for qid in sorted(qrels):
        for k in KS:
            value = result.get(qid, {}).get(f"ndcg_cut_{k}", 0.0)
            lines.append(f"{'ndcg_cut_' + str(k):<22}\t{qid}\t{value:.4f}")
    for k in KS:
        values = [result.get(qid, {}).get(f"ndcg_cut_{k}", 0.0) for qid in qrels]
        lines.append(f"{'ndcg_cut_' + str(k):<22}\tall\t{sum(values) / len(values):.4f}")
    return lines


def load(collection: Collection, write_file: WriteFile) -> None:
    call_command("import_qrels", collection.slug, write_file("t.qrels", QRELS), stdout=StringIO())
    call_command("import_run", collection.slug, write_file("t.run", RUN), stdout=StringIO())


def test_per_query_lines_are_trec_eval_c_q_with_a_0_line_for_each_unanswered_query(
    transactional_db: None, write_file: WriteFile
) -> None:
    load(CollectionFactory(slug="demo", cutoffs=list(KS)), write_file)
    out = evaluate("demo", "--run", "sys", "-q").splitlines()
    assert out == trec_eval_lines()
    assert f"{'ndcg_cut_2':<22}\tq3\t0.0000" in out
    assert not any("\tq4\t" in line for line in out)  # not judged: not evaluated


def test_with_missing_queries_skipped_no_0_line_is_printed(
    transactional_db: None, write_file: WriteFile
) -> None:
    load(CollectionFactory(slug="demo", cutoffs=list(KS), missing_queries="skip"), write_file)
    out = evaluate("demo", "--run", "sys", "-q").splitlines()
    assert [line.split("\t")[1] for line in out] == ["q1", "q1", "q2", "q2", "all", "all"]


# --- -m: other measures, computed from the current qrels ---------------------------------

# trec_eval -c -q -m ... prints its measures in its own table's order, whatever -m's order.
TREC_ORDER = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P_1",
    "P_5",
    "recall_5",
    "infAP",
    "ndcg",
    "ndcg_cut_2",
    "map_cut_5",
    "success_1",
    "set_P",
    "set_recall",
    "set_F",
]
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}


def trec_eval_m_lines(level: int) -> list[str]:
    """trec_eval -c -q -l LEVEL -m <TREC_ORDER> from pytrec_eval's values: every judged
    query (0, or its num_rel, when unanswered), then the `all` lines, counts summed and
    num_rel counted over the qrels' grades > 0 (m_num_rel.c with -c)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    ranking: dict[str, dict[str, float]] = {}
    for line in RUN.splitlines():
        qid, _, docno, _, score, _ = line.split()
        ranking.setdefault(qid, {})[docno] = float(score)
    request = {
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "Rprec",
        "bpref",
        "recip_rank",
        "P.1,5",
        "recall.5",
        "infAP",
        "ndcg",
        "ndcg_cut.2",
        "map_cut.5",
        "success.1",
        "set_P",
        "set_recall",
        "set_F",
    }
    result = pytrec_eval.RelevanceEvaluator(qrels, request, relevance_level=level).evaluate(ranking)
    for qid in qrels:
        if qid not in result:
            result[qid] = {name: 0.0 for name in TREC_ORDER}
            result[qid]["num_rel"] = float(sum(g >= level for g in qrels[qid].values()))

    def line(name: str, qid: str, value: float) -> str:
        shown = str(int(value)) if name in COUNTS else f"{value:6.4f}"
        return f"{name:<22}\t{qid}\t{shown}"

    lines = [line(name, qid, result[qid][name]) for qid in sorted(qrels) for name in TREC_ORDER]
    for name in TREC_ORDER:
        total = 0.0
        for qid in sorted(qrels):
            total += result[qid][name]
        if name == "num_rel":
            total = sum(g > 0 for grades in qrels.values() for g in grades.values())
        lines.append(line(name, "all", total if name in COUNTS else total / len(qrels)))
    return lines


@pytest.mark.parametrize("level", [1, 2])
def test_m_prints_trec_eval_c_q_for_every_measure(
    transactional_db: None, write_file: WriteFile, level: int
) -> None:
    load(CollectionFactory(slug="demo", cutoffs=list(KS)), write_file)
    # Both syntaxes, in any order, repeated names once.
    names = [
        "set_F",
        "success.1",
        "map_cut.5",
        "ndcg_cut.2",
        "nDCG",
        "infAP",
        "R@5",
        "P.1,5",
        "recip_rank",
        "Bpref",
        "Rprec",
        "map",
        "num_rel_ret",
        "NumRel",
        "num_ret",
        "P@5",
        "SetP",
        "set_recall",
    ]
    args = [part for name in names for part in ("-m", name)]
    out = evaluate("demo", "--run", "sys", "-q", "-l", str(level), *args).splitlines()
    assert out == trec_eval_m_lines(level)


def test_m_with_measures_outside_trec_eval_and_several_runs(
    transactional_db: None, write_file: WriteFile
) -> None:
    collection = CollectionFactory(slug="demo", cutoffs=list(KS), missing_queries="skip")
    load(collection, write_file)
    call_command(
        "import_run",
        "demo",
        write_file("u.run", "q2 Q0 d5 1 2.0 other\nq2 Q0 d4 2 1.0 other\n"),
        stdout=StringIO(),
    )
    out = evaluate("demo", "-m", "ERR@2", "-m", "Judged@2", "-m", "RR", "-q").splitlines()
    # ERR@2 on q2 for "other": d5 (0) then d4 (2): r = 3/16 at rank 2.
    assert out[:4] == [
        f"{'recip_rank':<22}\tq2\t0.5000",
        f"{'ERR@2':<22}\tq2\t{3 / 16 / 2:6.4f}",
        f"{'Judged@2':<22}\tq2\t1.0000",
        f"{'runid':<22}\tall\tother",
    ]
    assert out[7].split("\t")[:2] == [f"{'recip_rank':<22}", "q1"]  # then "sys": q1, q2
    assert out[-4] == f"{'runid':<22}\tall\tsys"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "Foo@3"], "unknown measure 'Foo'"),
        (["-m", "nDCG(rel=2)@5"], "known measures"),
        (["-m", "map", "--format", "json"], "leave --format and --k out"),
        (["-m", "map", "-l", "0"], "the relevance level is >= 1"),
    ],
)
def test_m_refuses_what_it_cannot_read(
    transactional_db: None, write_file: WriteFile, args: list[str], message: str
) -> None:
    load(CollectionFactory(slug="demo", cutoffs=list(KS)), write_file)
    with pytest.raises(CommandError, match=message):
        evaluate("demo", *args)


# --- closed pipes, with real processes ----------------------------------------------------


def manage(database: Path, *args: str, **popen: object) -> subprocess.Popen[bytes]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"CELERY_BROKER_URL", "DJANGO_CACHE_URL"}
    }
    env["DATABASE_URL"] = f"sqlite:///{database}"
    command = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args]
    return subprocess.Popen(command, env=env, **popen)  # type: ignore[call-overload, no-any-return]


def manage_ok(database: Path, *args: str) -> None:
    process = manage(database, *args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()


@pytest.fixture(scope="module")
def big_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database of its own, with enough queries that every command writes more than
    a pipe holds (64 kB), so the reader always leaves before the writer is done."""
    folder = tmp_path_factory.mktemp("pipes")
    database = folder / "pipes.sqlite3"
    # 100 queries (each recomputation is a commit) of 120 documents, at 40 cutoffs
    pairs = [(f"q{q}", f"d{q}-{d}") for q in range(100) for d in range(120)]
    (folder / "big.qrels").write_text("".join(f"{q} 0 {d} 1\n" for q, d in pairs))
    (folder / "big.run").write_text("".join(f"{q} Q0 {d} 1 1.0 big\n" for q, d in pairs[120:]))
    cutoffs = ",".join(str(k) for k in range(5, 205, 5))
    manage_ok(database, "migrate", "-v0")
    manage_ok(database, "create_collection", "demo", "--cutoffs", cutoffs)
    manage_ok(database, "import_qrels", "demo", str(folder / "big.qrels"))
    manage_ok(database, "import_run", "demo", str(folder / "big.run"))
    return database


@pytest.mark.parametrize(
    "command",
    [
        ("evaluate", "demo", "--run", "big", "-q"),
        ("export_qrels", "demo"),
        ("export_run", "demo", "big"),
    ],
)
def test_a_reader_that_stops_after_one_line_ends_the_command_quietly(
    big_database: Path, command: tuple[str, ...]
) -> None:
    writer = manage(big_database, *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None and writer.stderr is not None
    first = writer.stdout.readline()  # as `| head -1` reads
    writer.stdout.close()
    err = writer.stderr.read().decode()
    writer.wait(timeout=120)
    assert first.strip()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert writer.returncode == 141  # 128 + SIGPIPE, as trec_eval's in `| head -1`


def test_a_pipe_closed_before_any_output_ends_it_quietly_too(big_database: Path) -> None:
    """The reader gone before the first write: the error comes at the first flush."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    writer = manage(
        big_database, "evaluate", "demo", "--run", "big", stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    _, err = writer.communicate(timeout=120)
    assert "Traceback" not in err.decode() and "BrokenPipeError" not in err.decode()
    assert writer.returncode == 141


def test_the_shell_pipeline_prints_the_first_line_only(big_database: Path) -> None:
    manage_py = Path(settings.BASE_DIR) / "manage.py"
    script = f"'{sys.executable}' '{manage_py}' evaluate demo --run big -q | head -1"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{big_database}"}
    env.pop("CELERY_BROKER_URL", None)
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, timeout=120)
    assert done.stdout.decode() == f"{'ndcg_cut_5':<22}\tq0\t0.0000\n"  # q0: not answered
    assert done.stderr.decode() == ""


# --- --convention: another library's nDCG@k on the same qrels and run ----------------------


def _parsed() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    run: dict[str, dict[str, float]] = {}
    for line in RUN.splitlines():
        qid, _, docno, _, score, _ = line.split()
        run.setdefault(qid, {})[docno] = float(score)
    return qrels, run


def _lines(per_query: dict[str, dict[str, float]], means: dict[str, float]) -> list[str]:
    lines = [
        f"{name:<22}\t{qid}\t{value:.4f}"
        for qid in sorted(per_query)
        for name, value in per_query[qid].items()
    ]
    return lines + [f"{name:<22}\tall\t{value:.4f}" for name, value in means.items()]


def test_convention_sklearn_is_ndcg_score_per_query_on_the_runs_own_documents(
    transactional_db: None, write_file: WriteFile
) -> None:
    ndcg_score = optional_module("sklearn.metrics").ndcg_score
    load(CollectionFactory(slug="demo", cutoffs=list(KS)), write_file)
    qrels, run = _parsed()
    per_query: dict[str, dict[str, float]] = {}
    for qid in sorted(qrels):
        docs = run.get(qid, {})
        for k in KS:
            if len(docs) > 1:
                labels = [qrels[qid].get(docno, 0) for docno in docs]
                value = float(ndcg_score([labels], [list(docs.values())], k=k))
            else:  # ndcg_score refuses one document; its formula gives 1.0 (q2), none 0 (q3)
                value = 1.0 if docs else 0.0
            per_query.setdefault(qid, {})[f"ndcg_cut_{k}"] = value
    means = {
        f"ndcg_cut_{k}": sum(per_query[qid][f"ndcg_cut_{k}"] for qid in per_query) / 3 for k in KS
    }
    out = evaluate("demo", "--convention", "sklearn", "-q").splitlines()
    assert out == _lines(per_query, means)
    # The platform's own numbers are not these: q1's ideal list differs (d1, unretrieved).
    assert out != evaluate("demo", "-q").splitlines()


def test_convention_ranx_and_ir_measures_equal_the_libraries(
    transactional_db: None, write_file: WriteFile
) -> None:
    ranx = optional_module("ranx")
    import ir_measures

    collection = CollectionFactory(slug="demo", cutoffs=list(KS), missing_queries="skip")
    load(collection, write_file)
    qrels, run = _parsed()
    del run["q4"]  # not judged: neither library evaluates it
    # ranx: make_comparable adds q3 (unanswered) as 0, whatever the collection's rule.
    ranx_run = ranx.Run(run)
    metrics = [f"ndcg@{k}" for k in KS]
    means = ranx.evaluate(ranx.Qrels(qrels), ranx_run, metrics, make_comparable=True)
    per_query = {
        qid: {f"ndcg_cut_{k}": ranx_run.scores[f"ndcg@{k}"][qid] for k in KS} for qid in qrels
    }
    expected = _lines(per_query, {f"ndcg_cut_{k}": means[f"ndcg@{k}"] for k in KS})
    assert evaluate("demo", "--convention", "ranx", "-q").splitlines() == expected
    # ir_measures: nDCG@2 from pytrec_eval and its own Judged@5, q3 counted 0.
    measures = [ir_measures.nDCG @ 2, ir_measures.Judged @ 5]
    names = {measures[0]: "ndcg_cut_2", measures[1]: "Judged@5"}
    per_query = {}
    for metric in ir_measures.iter_calc(measures, qrels, run):
        per_query.setdefault(metric.query_id, {})[names[metric.measure]] = metric.value
    per_query = {qid: dict(sorted(values.items())) for qid, values in per_query.items()}
    aggregate = ir_measures.calc_aggregate(measures, qrels, run)
    expected = _lines(per_query, {names[m]: aggregate[m] for m in measures})
    out = evaluate("demo", "--convention", "ir_measures", "-q", "-m", "nDCG@2", "-m", "Judged@5")
    assert sorted(out.splitlines()) == sorted(expected)


def test_convention_refuses_what_the_library_does_not_define(
    transactional_db: None, write_file: WriteFile
) -> None:
    load(CollectionFactory(slug="demo", cutoffs=list(KS)), write_file)
    with pytest.raises(CommandError, match="nDCG@k only"):
        evaluate("demo", "--convention", "sklearn", "-m", "P@5")
    with pytest.raises(CommandError, match="pytrec_eval"):
        evaluate("demo", "--convention", "ir_measures", "-m", "map")
    with pytest.raises(CommandError, match="trec_eval's layout"):
        evaluate("demo", "--convention", "ranx", "--format", "json")
    with pytest.raises(CommandError, match="is scored at"):
        evaluate("demo", "--convention", "ranx", "--k", "3")
