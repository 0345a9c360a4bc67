"""Use cases for collections: create them, change their settings, mark scores stale."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F

from annotations.metrics.machine_grades import DEFAULT_RULE
from annotations.models import (
    DEFAULT_GRADES,
    Adjudication,
    Collection,
    GradeLevel,
    Judgement,
    Membership,
    Query,
    Run,
)
from annotations.models.collections import measures_checked
from annotations.scores import scores_schedule
from annotations.scores.refresh_queue import leaderboards_refresh_after_commit
from annotations.services import judgement_rows
from annotations.services.members import membership_grant

# gdeval's ERR: the highest grade it counts (measures.err's max_grade).
ERR_MAX_GRADE = 4
# The range the grade check constraints of GradeLevel and Judgement allow.
GRADE_MIN, GRADE_MAX = -9, 99

# --- collections ------------------------------------------------------------------------


def collection_create(
    *,
    slug: str,
    name: str = "",
    description: str = "",
    gain: str = "linear",
    cutoffs: Sequence[int] | None = None,
    grades: Sequence[tuple[int, str, str]] | None = None,
    missing_queries: str = "zero",
    aggregation: str = "median",
    assessors_see_leaderboard: bool = False,
    stale_judgements: str = "count",
    machine_grades: str = DEFAULT_RULE,
    measures: Sequence[str] = (),
    public_leaderboard: bool = False,
    organiser: AbstractBaseUser | None = None,
) -> Collection:
    """Create a collection with its grade scale (default 0-3 with labels and definitions)
    and the measures it keeps beside nDCG@k (ir_measures' names; none by default); its
    creator, when given, becomes its organiser in the same transaction."""
    collection = Collection(
        slug=slug,
        name=name or slug,
        description=description,
        gain=gain,
        cutoffs=list(cutoffs) if cutoffs is not None else [5, 10, 20],
        missing_queries=missing_queries,
        aggregation=aggregation,
        assessors_see_leaderboard=assessors_see_leaderboard,
        stale_judgements=stale_judgements,
        machine_grades=machine_grades,
        measures=list(measures),
        public_leaderboard=public_leaderboard,
    )
    collection.full_clean()
    levels = _levels_checked(collection, list(grades) if grades is not None else DEFAULT_GRADES)
    _check_measures_fit_scale(collection.measures, [level.value for level in levels])
    with transaction.atomic():
        collection.save(default_scale=False)
        GradeLevel.objects.bulk_create(levels)
        if organiser is not None:
            membership_grant(collection=collection, user=organiser, role=Membership.ORGANISER)
        leaderboards_refresh_after_commit(collection_id=collection.id)
    return collection


# More levels than this is no scale an assessor can hold in mind (or see on one screen).
MAX_GRADE_LEVELS = 20


def _levels_checked(
    collection: Collection, grades: Sequence[tuple[int, str, str]]
) -> list[GradeLevel]:
    """The scale as unsaved levels, each checked (range, label), with distinct values."""
    values = [value for value, _, _ in grades]
    if not grades:
        raise ValidationError({"grades": "The grade scale needs at least one level."})
    if len(grades) > MAX_GRADE_LEVELS:
        raise ValidationError(
            {
                "grades": f"A scale of {len(grades)} levels is more than assessors can use; "
                f"keep it to {MAX_GRADE_LEVELS} or fewer."
            }
        )
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        listed = ", ".join(map(str, repeated))
        raise ValidationError({"grades": f"Each grade appears once; {listed} appears twice."})
    levels = []
    for value, label, definition in grades:
        level = GradeLevel(collection=collection, value=value, label=label, definition=definition)
        try:
            level.full_clean(exclude=["collection"])
        except ValidationError as error:
            problems = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items()
            )
            raise ValidationError({"grades": f"grade {value}: {problems}"}) from None
        levels.append(level)
    return levels


def grades_in_use(*, collection: Collection) -> dict[int, int]:
    """Grade -> how many judgements and adjudications of the collection hold it."""
    used: dict[int, int] = {}
    for model in (Judgement, Adjudication):
        rows = (
            model.objects.filter(query__collection=collection)
            .values("grade")
            .annotate(n=Count("id"))
            .values_list("grade", "n")
        )
        for grade, count in rows:
            used[grade] = used.get(grade, 0) + count
    return used


def grade_scale_problems(*, collection: Collection, values: Sequence[int]) -> list[str]:
    """Why a collection's scale cannot become `values`: grades still held by judgements."""
    kept = set(values)
    return [
        f"Grade {grade} is held by {count} judgement{'s' if count != 1 else ''}; "
        "change them before removing it from the scale."
        for grade, count in sorted(grades_in_use(collection=collection).items())
        if grade not in kept
    ]


def collection_grades_set(
    *, collection: Collection, grades: Sequence[tuple[int, str, str]]
) -> Collection:
    """Replace a collection's grade scale (levels, labels, definitions).

    A grade some judgement holds cannot be removed. The collection's `updated` moves, so
    stored leaderboards and top-grade bounds (which read the highest grade) are computed again.
    """
    levels = _levels_checked(collection, grades)
    _check_measures_fit_scale(collection.measures, [level.value for level in levels])
    problems = grade_scale_problems(collection=collection, values=[lv.value for lv in levels])
    if problems:
        raise ValidationError({"grades": problems})
    with transaction.atomic():
        Collection.objects.select_for_update().filter(id=collection.id).first()
        GradeLevel.objects.filter(collection=collection).delete()
        GradeLevel.objects.bulk_create(levels)
        collection.save(update_fields=["updated"])
    return collection


def grade_levels_from_spec(spec: str) -> list[tuple[int, str, str]]:
    """Parse a scale into levels with default labels: a range ``0-3``, ``0..3``, ``-2..3`` or
    ``-2-3`` (both ends included), or a list ``0,1,2`` / ``-2,-1,0,1,2,3``."""
    text = spec.strip()
    values: Sequence[int]
    try:
        if "," in text:
            values = sorted({int(part) for part in text.split(",")})
        else:
            # the separator: "..", else the first "-" after the low end's own sign
            cut, width = (text.index(".."), 2) if ".." in text else (text.index("-", 1), 1)
            low, high = int(text[:cut]), int(text[cut + width :])
            if high < low:
                raise ValueError
            values = range(low, high + 1)  # not a list yet: '0-99999999999' must not fill memory
    except ValueError:
        raise ValidationError(
            {
                "grades": f"{spec!r} is not a grade scale; write it like '0-3', '-2..3' or "
                "'-2,-1,0,1,2,3'"
            }
        ) from None
    if values[0] < GRADE_MIN or values[-1] > GRADE_MAX:
        raise ValidationError(
            {"grades": f"grades must lie between {GRADE_MIN} and {GRADE_MAX}; {spec!r} does not"}
        )
    values = list(values)
    if values == [level[0] for level in DEFAULT_GRADES]:
        return list(DEFAULT_GRADES)
    return [(value, f"Grade {value}", "") for value in values]


# The settings whose change rescores the collection.
SCORING_FIELDS = (
    "gain",
    "cutoffs",
    "measures",
    "missing_queries",
    "aggregation",
    "stale_judgements",
    "machine_grades",
)
# Every setting `collection_update` changes: the settings page's and the API's PATCH fields
# (publication and the grade scale have their own services).
SETTINGS = ("name", "description", *SCORING_FIELDS, "assessors_see_leaderboard")


def collection_update(*, collection: Collection, **changes: object) -> Collection:
    """Change a collection's settings; scoring settings mark every score pending and rescore."""
    unknown = set(changes) - set(SETTINGS)
    if unknown:
        raise ValidationError({field: "This setting cannot be changed." for field in unknown})
    if "measures" in changes:  # as stored, so that another spelling is no change
        changes["measures"] = measures_checked(changes["measures"])
    rescore = any(
        field in changes and changes[field] != getattr(collection, field)
        for field in SCORING_FIELDS
    )
    for field, value in changes.items():
        setattr(collection, field, value)
    collection.full_clean()
    if "measures" in changes:
        _check_measures_fit_scale(collection.measures, grade_values(collection))
    with transaction.atomic():
        collection.save()
        if rescore:
            collection_mark_stale(collection=collection)
        else:
            leaderboards_refresh_after_commit(collection_id=collection.id)
    return collection


def _check_measures_fit_scale(measures: Sequence[str], grades: Sequence[int]) -> None:
    """ERR (gdeval's) stops at grade ERR_MAX_GRADE: refused on a scale that goes higher."""
    top = max(grades, default=0)
    for name in measures:
        if name.startswith("ERR") and top > ERR_MAX_GRADE:
            raise ValidationError(
                {
                    "measures": f"measure {name!r}: ERR counts grades up to {ERR_MAX_GRADE} "
                    f"(gdeval's), and this collection's scale goes up to {top}."
                }
            )


def collection_mark_stale(*, collection: Collection) -> None:
    """Mark every score of the collection pending and schedule a full recomputation."""
    Query.objects.filter(collection=collection).update(
        judgements_version=F("judgements_version") + 1
    )
    Run.objects.filter(collection=collection).update(scored_at=None)
    scores_schedule(collection_ids=[collection.id])


def grade_values(collection: Collection) -> list[int]:
    """The collection's grades, lowest first."""
    return judgement_rows.grade_values(collection.id)


def collection_publish(*, collection: Collection, public: bool) -> Collection:
    """Open (or close) the collection's leaderboard and scores to anonymous readers.

    Separate from ``collection_update``: it changes who may read, never a score.
    """
    if collection.public_leaderboard != public:
        collection.public_leaderboard = public
        collection.save(update_fields=["public_leaderboard", "updated"])
        leaderboards_refresh_after_commit(collection_id=collection.id)
    return collection


def collection_settings_save(
    *,
    collection: Collection,
    grades: Sequence[tuple[int, str, str]] | None = None,
    public_leaderboard: bool | None = None,
    **changes: object,
) -> Collection:
    """Change settings, grade scale and publication together: all of it or none of it."""
    with transaction.atomic():
        if changes:
            collection_update(collection=collection, **changes)
        if grades is not None:
            current = [(g.value, g.label, g.definition) for g in collection.grades.all()]
            if sorted(grades) != current:
                collection_grades_set(collection=collection, grades=grades)
        if public_leaderboard is not None:
            collection_publish(collection=collection, public=public_leaderboard)
    return collection
