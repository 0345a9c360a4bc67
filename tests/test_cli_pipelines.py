"""The command line in pipelines: `-` reads standard input on every import, `evaluate`
prints every run, every option has its help, and a standard collection loads from
ir_datasets' own registry (a dataset of local files: nothing is downloaded)."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from annotations.models import Collection, Document, Judgement, Query, Run
from tests.factories import CollectionFactory

ROOT = Path(__file__).resolve().parent.parent
QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\nq2 0 d1 0\n"
RUN_A = "q1 Q0 d1 1 3.0 alpha\nq1 Q0 d2 2 2.0 alpha\nq2 Q0 d1 1 1.0 alpha\n"
RUN_B = "q1 Q0 d2 1 3.0 beta\nq2 Q0 d3 1 2.0 beta\nq2 Q0 d1 2 1.0 beta\n"
TOPICS = '{"qid": "q1", "title": "solar"}\n{"qid": "q2", "title": "floods"}\n'
DOCUMENTS = '{"docno": "d1", "text": "one"}\n{"docno": "d2", "text": "two"}\n'


def manage(database: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "DATABASE_URL"}}
    env["DATABASE_URL"] = f"sqlite:///{database}"
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipes") / "pipes.sqlite3"
    assert manage(path, "migrate", "-v0").returncode == 0
    assert manage(path, "create_collection", "piped", "--cutoffs", "2,5").returncode == 0
    return path


def test_every_import_reads_standard_input_given_as_a_dash(database: Path) -> None:
    for command, text, says in [
        ("import_topics", TOPICS, "queries: 2 created"),
        ("import_documents", DOCUMENTS, "documents: 2 created"),
        ("import_qrels", QRELS, "judgements: 4 created"),
        ("import_run", RUN_A, "alpha"),
    ]:
        done = manage(database, command, "piped", "-", stdin=text)
        assert done.returncode == 0 and says in done.stdout, (command, done.stdout, done.stderr)
    empty = manage(database, "import_topics", "piped", "-", stdin="")
    assert empty.returncode != 0 and "<stdin>: file is empty" in empty.stderr
    scores = manage(database, "evaluate", "piped", "--run", "alpha").stdout
    assert scores.startswith("ndcg_cut_2")
    refused = manage(database, "import_qrels", "piped", "-", stdin="q9 0 d1 x\n")
    assert refused.returncode != 0
    assert "<stdin>:1" in refused.stderr and "nothing was imported" in refused.stderr
    twice = manage(database, "import_run", "piped", "-", "-", stdin=RUN_B)
    assert twice.returncode != 0 and "once" in twice.stderr


def test_evaluate_prints_every_run_one_block_each_as_trec_eval_would(
    transactional_db: None, write_file
) -> None:  # type: ignore[no-untyped-def]
    CollectionFactory(slug="two", cutoffs=[2, 5])
    call_command("import_qrels", "two", str(write_file("q.qrels", QRELS)), stdout=StringIO())
    for name, text in (("a.run", RUN_A), ("b.run", RUN_B)):
        call_command("import_run", "two", str(write_file(name, text)), stdout=StringIO())

    def evaluate(*args: str) -> str:
        out = StringIO()
        call_command("evaluate", "two", *args, stdout=out, stderr=StringIO())
        return out.getvalue()

    every = evaluate("-q")
    alone = {name: evaluate("--run", name, "-q") for name in ("alpha", "beta")}
    header = "runid                 \tall\t"

    def block(name: str) -> str:
        """trec_eval -q's order: per-query lines, the runid line, the `all` lines."""
        lines = alone[name].splitlines(keepends=True)
        means = [line for line in lines if "\tall\t" in line]
        assert means == lines[-len(means) :] and len(means) == 2
        return "".join(lines[: -len(means)]) + f"{header}{name}\n" + "".join(means)

    assert every == block("alpha") + block("beta")
    assert "ndcg_cut_5            \tq2\t" in alone["beta"]


def test_every_option_of_every_command_says_what_it_does() -> None:
    django_own = {
        "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
        "force_color", "skip_checks",
    }  # fmt: skip
    silent = []
    for name, app in get_commands().items():
        if app != "annotations":
            continue
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            if action.dest not in django_own and not action.help:
                silent.append(f"{name} {action.option_strings or action.dest}")
    assert not silent, silent


# --- ir_datasets --------------------------------------------------------------------------


def test_a_standard_collection_loads_with_one_command(
    transactional_db: None, local_dataset: str
) -> None:
    collection = CollectionFactory(slug="standard", cutoffs=[1, 2])
    out = StringIO()
    call_command("import_ir_datasets", "standard", local_dataset, stdout=out)
    printed = out.getvalue()
    assert "queries: 2 created" in printed and "docs: 3 created" in printed
    assert f"scoreddocs: run '{local_dataset}', 4 results" in printed
    first = Query.objects.get(collection=collection, qid="301")
    assert (first.title, first.description, first.narrative) == (
        "solar power",
        "How is it stored?",
        "Batteries count.",
    )
    assert Document.objects.get(collection=collection, docno="D3").text == "the Rhine"
    grades = {
        (qid, docno): grade
        for qid, docno, grade in Judgement.objects.filter(query__collection=collection).values_list(
            "query__qid", "document__docno", "grade"
        )
    }
    assert grades == {("301", "D1"): 2, ("301", "D2"): 1, ("302", "D3"): 1, ("302", "D1"): 0}
    run = Run.objects.get(collection=collection)
    scores = StringIO()
    call_command("evaluate", "standard", "--run", run.name, stdout=scores, stderr=StringIO())
    # 301: D2 (1) then D1 (2), ideal 2,1; 302: D1 (0), D3 (1), ideal 1,0: trec_eval's values
    assert "ndcg_cut_1            \tall\t0.2500" in scores.getvalue()


def test_a_dataset_part_it_lacks_or_an_unknown_id_changes_nothing(
    transactional_db: None, local_dataset: str
) -> None:
    collection = CollectionFactory(slug="refused", cutoffs=[2])
    with pytest.raises(CommandError, match="is not a dataset ir_datasets knows"):
        call_command("import_ir_datasets", "refused", "no-such/dataset", stdout=StringIO())
    with pytest.raises(CommandError, match="unknown docpairs"):
        call_command(
            "import_ir_datasets", "refused", local_dataset, "--parts", "docpairs",
            stdout=StringIO(),
        )  # fmt: skip
    assert not Query.objects.filter(collection=collection).exists()
    assert Collection.objects.filter(slug="refused").exists()


def test_a_dataset_not_on_disk_and_out_of_reach_names_its_files_and_imports_nothing(
    transactional_db: None, ir_datasets_offline: Path
) -> None:
    """Without a network (every download through a proxy that refuses), the message names the
    dataset, the files missing under IR_DATASETS_HOME with their addresses, and what to do."""
    home = ir_datasets_offline
    CollectionFactory(slug="offline", cutoffs=[2])
    with pytest.raises(CommandError) as raised:
        call_command("import_ir_datasets", "offline", "vaswani", "-q", stdout=StringIO())
    message = str(raised.value)
    assert message.startswith("dataset: vaswani (queries): ir_datasets could not read")
    assert f"Missing: {home / 'vaswani' / 'npl.tar.gz'} (from http://" in message
    assert f"under IR_DATASETS_HOME ({home})" in message and "nothing was changed" in message
    assert not Query.objects.filter(collection__slug="offline").exists()


def test_without_ir_datasets_installed_the_command_says_how_to_add_it(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # an import of it fails
    CollectionFactory(slug="bare", cutoffs=[2])
    with pytest.raises(
        CommandError,
        match=r"ir_datasets is not installed: pip install 'ndcg-platform\[ir-datasets\]'",
    ):
        call_command("import_ir_datasets", "bare", "vaswani", stdout=StringIO())


# --- progress ----------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int | None]] = []

    def update(self, task: str, completed: int, total: int | None = None) -> None:
        self.seen.append((task, completed, total))


def test_progress_counts_lines_and_never_runs_ahead_of_them(tmp_path: Path) -> None:
    from annotations.management.commands._progress import CountingSink, counted

    path = tmp_path / "big.qrels"
    path.write_bytes(b"".join(b"q%d 0 d%d 1\n" % (i, i) for i in range(300_000)))
    recorder = Recorder()
    with counted(str(path), recorder, "qrels") as stream:
        read = 0
        while chunk := stream.read(65536):  # type: ignore[union-attr]
            read += chunk.count(b"\n")
            assert recorder.seen[-1][1] <= 300_000
    assert recorder.seen[-1] == ("qrels", 300_000, 300_000) and read == 300_000
    assert [done for _, done, _ in recorder.seen] == sorted(done for _, done, _ in recorder.seen)
    out = StringIO()
    sink = CountingSink(out, recorder, "written", 2500)
    for i in range(2500):
        sink.write(f"line {i}\n")
    assert recorder.seen[-1] == ("written", 2500, 2500) and out.getvalue().count("\n") == 2500


def test_a_terminal_gets_a_progress_bar_and_a_pipe_or_q_none(database: Path) -> None:
    import pty

    qrels = "".join(f"q{i} 0 d{i} 1\n" for i in range(2000))
    (database.parent / "many.qrels").write_text(qrels)
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "DATABASE_URL"}}
    env.update(DATABASE_URL=f"sqlite:///{database}", COLUMNS="100", TERM="xterm")
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_qrels", "piped",
         str(database.parent / "many.qrels")],
        stdout=subprocess.PIPE, stderr=secondary, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    os.close(secondary)
    shown = b""
    while True:
        try:
            piece = os.read(primary, 65536)
        except OSError:
            break
        if not piece:
            break
        shown += piece
    os.close(primary)
    assert done.returncode == 0 and b"judgements:" in done.stdout
    assert b"lines read" in shown and b"2000/2000" in shown
    piped = manage(database, "import_qrels", "piped", str(database.parent / "many.qrels"))
    assert piped.returncode == 0 and "lines read" not in piped.stderr
