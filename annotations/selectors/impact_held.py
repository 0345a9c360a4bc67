"""The impact model's inputs kept in the process between refreshes, re-read only where they moved.

A refresh of impact at cutoff k reads each query's judgements version (and, where machine
judges graded, its latest answer's id) before anything else, then re-reads the grades of
only the queries whose version moved since the inputs held were read; every judgement,
adjudication or stale mark raises its query's version in the same transaction (the scores
rely on it too). Anything else the inputs depend on (the runs and their rankings, the
gain, aggregation, stale and machine-grade rules, the grade scale, the machine judges) is
in a signature read first: when it differs, everything is read again. So a missing or
evicted entry only costs a full read, and what is returned always equals a from-scratch
`impact_inputs` (tests hold the two equal field by field).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Max

from annotations.models import Collection, JudgeAnswer, Query, Run
from annotations.selectors.grades import machine_accounts
from annotations.selectors.impact import ImpactInputs, grade_scale, impact_inputs_assemble
from annotations.selectors.impact_parts import (
    QueryGrades,
    QueryRankings,
    query_grades_read,
    query_rankings_read,
)
from annotations.selectors.process_held import ProcessHeld

HELD_ENTRIES = 8  # (collection, k) pairs held per process
HELD_BYTES = 256_000_000  # of arrays held per process, all entries together


@dataclass
class _Held:
    signature: tuple[object, ...]
    versions: dict[int, tuple[int, int]]
    rankings: dict[int, QueryRankings]
    grades: dict[int, QueryGrades]
    nbytes: int


_held: ProcessHeld[_Held] = ProcessHeld(
    entries=lambda: HELD_ENTRIES, nbytes=lambda: HELD_BYTES, size=lambda held: held.nbytes
)


def impact_inputs_forget(*, collection_id: int | None = None) -> None:
    """Drop the inputs held (of one collection, or all): the next refresh reads everything."""
    _held.forget(collection_id=collection_id)


def impact_inputs_held(
    *, collection: Collection, k: int, query_ids: Iterable[int] | None = None
) -> ImpactInputs:
    """`impact_inputs` of the collection at k (of `query_ids` only), re-reading only the
    grades of the queries whose judgements version (or latest machine answer) moved since
    the inputs held were read; everything when the signature moved or nothing is held."""
    machines = machine_accounts(collection)
    runs = tuple(
        Run.objects.filter(collection=collection).order_by("id").values_list("id", "updated")
    )
    scale = grade_scale(collection)
    signature = (
        runs,
        collection.gain,
        collection.aggregation,
        collection.stale_judgements,
        collection.machine_grades,
        scale,
        tuple(sorted(machines)),
    )
    versions = _versions(collection, bool(machines))
    run_ids = [run_id for run_id, _ in runs]
    held = _held.take((collection.id, k))  # a concurrent refresh reads on its own
    if held is None or held.signature != signature or not set(held.rankings) <= set(versions):
        rankings = query_rankings_read(run_ids=run_ids, k=k)
        needed = set(rankings) | (set(versions) if machines else set())
        grades = query_grades_read(
            collection=collection, query_ids=needed, machines=machines, scale=scale
        )
        held = _Held(signature, {}, rankings, grades, 0)
    else:
        needed = set(held.rankings) | (set(versions) if machines else set())
        changed = {q for q in needed if held.versions.get(q) != versions.get(q)}
        changed |= needed - set(held.grades)
        for gone in set(held.grades) - needed:
            del held.grades[gone]
        if changed:
            held.grades.update(
                query_grades_read(
                    collection=collection, query_ids=changed, machines=machines, scale=scale
                )
            )
    held.versions = {q: versions[q] for q in needed if q in versions}
    rankings = held.rankings
    if query_ids is not None:
        rankings = {q: rankings[q] for q in set(query_ids) if q in rankings}
    inputs = impact_inputs_assemble(
        collection=collection,
        k=k,
        run_ids=run_ids,
        rankings=rankings,
        grades=held.grades,
        scale=scale,
        machines=bool(machines),
    )
    held.nbytes = _nbytes(held)
    _held.keep((collection.id, k), held)
    return inputs


def _versions(collection: Collection, machines: bool) -> dict[int, tuple[int, int]]:
    """Query id -> (judgements version, id of its latest machine answer or 0), read before
    the grades they stand for."""
    queries = Query.objects.filter(collection=collection)
    versions = dict(queries.values_list("id", "judgements_version"))
    answers: dict[int, int] = {}
    if machines:
        answers = dict(
            JudgeAnswer.objects.filter(judge__collection=collection)
            .values("query_id")
            .annotate(latest=Max("id"))
            .values_list("query_id", "latest")
        )
    return {q: (version, answers.get(q, 0)) for q, version in versions.items()}


def _nbytes(held: _Held) -> int:
    """The arrays an entry holds, in bytes (the rest is small beside them)."""
    total = 0
    for part in held.rankings.values():
        total += part.matrix.nbytes + 8 * len(part.pool)
    for grades in held.grades.values():
        total += 16 * (len(grades.people) + len(grades.given))
        total += sum(mean.nbytes for mean in grades.said.values())
    return total


def impact_inputs_held_keys() -> list[tuple[int, int]]:
    """The (collection id, k) entries held, least recent first."""
    return _held.keys()
