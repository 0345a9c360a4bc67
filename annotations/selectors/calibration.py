"""Reads for calibrating a collection's machine judges against its people (agreement page)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotations.metrics.calibration import Calibration, Pair, judge_calibration
from annotations.models import Adjudication, Collection, Judgement, MachineJudge

# The queries a judge disputes most, and the least common pairs a query needs to be one.
TOP_QUERIES = 10
MIN_QUERY_PAIRS = 2


@dataclass(frozen=True)
class JudgeCalibration:
    """One machine judge: its name and model, the pairs it graded, and its calibration."""

    name: str
    model: str
    graded: int
    calibration: Calibration


def judges_calibration(*, collection: Collection) -> list[JudgeCalibration]:
    """Every machine judge of the collection, by name, against the people who judged the
    same pairs and the adjudicated grades (`metrics.calibration.judge_calibration`).

    Four statements whatever the size: the scale, the judges, every judgement of the
    collection (one pass) and the adjudications. A person is any assessor whose account is
    no machine judge's; grades off the collection's scale are left out, as the people's
    agreement leaves them out."""
    levels = sorted(collection.grades.values_list("value", flat=True))
    judges = list(
        MachineJudge.objects.filter(collection=collection)
        .order_by("name")
        .values_list("account_id", "name", "model")
    )
    if not judges or not levels:
        return []
    on_scale = set(levels)
    machine: dict[int, dict[Pair, int]] = {account: {} for account, _, _ in judges}
    people: dict[str, dict[Pair, int]] = defaultdict(dict)
    rows = Judgement.objects.filter(query__collection=collection).values_list(
        "query__qid", "document__docno", "assessor_id", "assessor__username", "grade",
        "assessor__machine_judge__id",
    )  # fmt: skip
    for qid, docno, account, username, grade, judge_id in rows:
        if grade not in on_scale:
            continue
        if account in machine:
            machine[account][(qid, docno)] = grade
        elif judge_id is None:  # another collection's judge is no person either
            people[username][(qid, docno)] = grade
    adjudicated = {
        (qid, docno): grade
        for qid, docno, grade in Adjudication.objects.filter(
            query__collection=collection
        ).values_list("query__qid", "document__docno", "grade")
        if grade in on_scale
    }
    return [
        JudgeCalibration(
            name=name,
            model=model,
            graded=len(machine[account]),
            calibration=judge_calibration(
                judge=machine[account],
                people=people,
                adjudicated=adjudicated,
                levels=levels,
                top=TOP_QUERIES,
                min_pairs=MIN_QUERY_PAIRS,
            ),
        )
        for account, name, model in judges
    ]
