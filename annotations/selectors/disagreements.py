"""Pairs whose assessors disagree, with what an organiser needs to adjudicate them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotations.metrics import ndcg
from annotations.metrics.machine_grades import assessed_pair_grade
from annotations.models import Adjudication, Collection, Judgement
from annotations.selectors.grades import machine_accounts


@dataclass
class Disagreement:
    """A pair whose assessors' grades spread by at least the asked difference."""

    query_id: int
    qid: str
    query_title: str
    document_id: int
    docno: str
    document_title: str
    grades: list[tuple[str, int]]
    effective: int | None  # None: only machine grades, which the collection does not score
    adjudicated: int | None
    document_text: str = ""
    notes: list[tuple[str, str]] = field(default_factory=list)  # (assessor, note), non-empty

    @property
    def initial_grade(self) -> int:
        """Where the adjudication form starts: the adjudicated grade, else the effective one
        (else the grades' lower median)."""
        if self.adjudicated is not None:
            return self.adjudicated
        if self.effective is not None:
            return self.effective
        return ndcg.effective_grade([grade for _, grade in self.grades])

    @property
    def spread(self) -> int:
        values = [grade for _, grade in self.grades]
        return max(values) - min(values)


def disagreements(*, collection: Collection, min_difference: int = 2) -> list[Disagreement]:
    """Pairs judged by several assessors whose highest and lowest grades differ enough."""
    if min_difference < 1:
        raise ValueError("min_difference must be at least 1")
    rows = (
        Judgement.objects.filter(query__collection=collection)
        .order_by("query__qid", "document__docno", "assessor__username")
        .values_list(
            "query_id",
            "query__qid",
            "query__title",
            "document_id",
            "document__docno",
            "document__title",
            "assessor__username",
            "grade",
            "note",
            "document__text",
            "assessor_id",
        )
    )
    machines = machine_accounts(collection)
    grouped: dict[tuple[int, int], list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        grouped[(row[0], row[3])].append(row)
    adjudicated = {
        (query_id, document_id): grade
        for query_id, document_id, grade in Adjudication.objects.filter(
            query__collection=collection
        ).values_list("query_id", "document_id", "grade")
    }
    found: list[Disagreement] = []
    for key, pair_rows in grouped.items():
        if len(pair_rows) < 2:
            continue
        grades = [(row[6], row[7]) for row in pair_rows]
        values = [grade for _, grade in grades]
        if max(values) - min(values) < min_difference:
            continue
        effective = assessed_pair_grade(
            ((row[10], row[7]) for row in pair_rows),
            machines,
            None,
            aggregation=collection.aggregation,
            rule=collection.machine_grades,
        )
        first = pair_rows[0]
        found.append(
            Disagreement(
                query_id=first[0],
                qid=first[1],
                query_title=first[2],
                document_id=first[3],
                docno=first[4],
                document_title=first[5],
                grades=grades,
                effective=effective,
                adjudicated=adjudicated.get(key),
                document_text=first[9],
                notes=[(row[6], row[8]) for row in pair_rows if row[8]],
            )
        )
    return found
