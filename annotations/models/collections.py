"""Collections with their grade scale and members, queries and documents."""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q

from annotations.formats import score_bytes
from annotations.metrics import machine_grades as machine_rules
from annotations.metrics.measure_names import MeasureNameError, format_measure, measure_set
from annotations.metrics.measures import Measure

if TYPE_CHECKING:
    from django.contrib.auth.models import User


GAIN_CHOICES = [
    ("linear", "Linear (grade; trec_eval)"),
    ("exponential", "Exponential (2^grade - 1)"),
]
MISSING_CHOICES = [
    ("zero", "Counts 0 (trec_eval -c)"),
    ("skip", "Left out of the run's mean (trec_eval default)"),
]
STALE_CHOICES = [
    ("count", "Count them (flagged stale)"),
    ("exclude", "Leave them out of scoring until re-judged"),
]
AGGREGATION_CHOICES = [
    ("median", "Median (lower median on a tie)"),
    ("majority", "Majority"),
    ("mean", "Mean, rounded"),
]
MACHINE_GRADE_CHOICES = [
    ("assessor", "One assessor among the people (in the aggregation)"),
    ("fill", "Fill the pairs no person judged"),
    ("people", "Not scored: people only (machine grades kept for comparison)"),
]
DEFAULT_CUTOFFS = [5, 10, 20]
# Measures a collection keeps beside nDCG@k: each is 8 bytes more in every stored
# (run, query) row and one more column computed on every judgement.
MAX_MEASURES = 32
DEFAULT_GRADES = [
    (0, "Not relevant", "The document has nothing useful for the query."),
    (1, "Marginally relevant", "Mentions the topic but would not satisfy the information need."),
    (2, "Highly relevant", "Substantially answers the query; a searcher would be glad to see it."),
    (3, "Perfectly relevant", "Exactly what the query asks for; the best possible answer."),
]
ID_MAX_LENGTH = 200


def default_cutoffs() -> list[int]:
    return list(DEFAULT_CUTOFFS)


class Collection(models.Model):
    """A test collection: queries, documents, runs and judgements scored together."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    gain = models.CharField(max_length=12, choices=GAIN_CHOICES, default="linear")
    cutoffs = models.JSONField(
        default=default_cutoffs, help_text="nDCG cutoffs k, e.g. [5, 10, 20]"
    )
    measures = models.JSONField(
        default=list,
        blank=True,
        help_text="Measures kept beside nDCG@k, in ir_measures' syntax, e.g. "
        '["AP", "P@10", "AP(rel=2)@100"]; empty: nDCG@k alone.',
    )
    missing_queries = models.CharField(
        max_length=4,
        choices=MISSING_CHOICES,
        default="zero",
        help_text="What a judged query that a run did not answer counts as.",
    )
    aggregation = models.CharField(max_length=10, choices=AGGREGATION_CHOICES, default="median")
    stale_judgements = models.CharField(
        max_length=8,
        choices=STALE_CHOICES,
        default="count",
        help_text="Whether judgements whose document text changed since still count for scoring.",
    )
    machine_grades = models.CharField(
        max_length=8,
        choices=MACHINE_GRADE_CHOICES,
        default=machine_rules.DEFAULT_RULE,
        help_text="How the grades of the collection's machine judges count for scoring "
        "(a new collection: not at all, until an organiser chooses otherwise).",
    )
    public_leaderboard = models.BooleanField(
        default=False, help_text="Anyone, logged in or not, may read the leaderboard."
    )
    assessors_see_leaderboard = models.BooleanField(
        default=False,
        help_text="Assessors may read the leaderboard; otherwise they are blinded to systems "
        "and scores (TREC practice).",
    )
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="collections", blank=True
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(gain__in=["linear", "exponential"]), name="collection_gain_valid"
            ),
            models.CheckConstraint(
                condition=Q(missing_queries__in=["zero", "skip"]), name="collection_missing_valid"
            ),
            models.CheckConstraint(
                condition=Q(aggregation__in=["median", "majority", "mean"]),
                name="collection_aggregation_valid",
            ),
            models.CheckConstraint(
                condition=Q(stale_judgements__in=["count", "exclude"]),
                name="collection_stale_judgements_valid",
            ),
            models.CheckConstraint(
                condition=Q(machine_grades__in=["assessor", "fill", "people"]),
                name="collection_machine_grades_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    def save(self, *args: Any, default_scale: bool = True, **kwargs: Any) -> None:
        """Save; a collection saved for the first time gets the default 0-3 grade scale in the
        same transaction, unless the caller stores its own scale there (`default_scale=False`,
        as the service and the admin do), so no path creates a collection without one."""
        if not self._state.adding or not default_scale:
            super().save(*args, **kwargs)
            return
        with transaction.atomic():
            super().save(*args, **kwargs)
            GradeLevel.objects.bulk_create(
                GradeLevel(collection=self, value=value, label=label, definition=definition)
                for value, label, definition in DEFAULT_GRADES
            )

    def clean(self) -> None:
        cutoffs = self.cutoffs
        if (
            not isinstance(cutoffs, list)
            or not cutoffs
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in cutoffs)
        ):
            raise ValidationError({"cutoffs": "Cutoffs must be a non-empty list of integers >= 1."})
        if len(set(cutoffs)) != len(cutoffs):
            raise ValidationError({"cutoffs": "Cutoffs must not repeat."})
        if max(cutoffs) > 1000:
            raise ValidationError({"cutoffs": "Cutoffs above 1000 are not supported."})
        self.measures = measures_checked(self.measures)

    @property
    def kept_measures(self) -> list[Measure]:
        """The measures kept beside nDCG@k (stored as their ir_measures names)."""
        if not self.measures:
            return []
        if all(isinstance(name, str) for name in self.measures):
            return list(_measure_set(tuple(self.measures)))
        return measure_set(self.measures)  # raises, naming the entry

    @property
    def measures_layout(self) -> str:
        """The layout key of the packed values of the kept measures, which every row holding
        them stores (`score_bytes.measures_layout`); their names are ``measures``."""
        return score_bytes.measures_layout(self.measures) if self.measures else ""

    @property
    def sorted_cutoffs(self) -> list[int]:
        return sorted(int(k) for k in self.cutoffs)


@functools.lru_cache(maxsize=64)
def _measure_set(names: tuple[str, ...]) -> tuple[Measure, ...]:
    # Every recomputation of a query reads its collection's measures: each set of names is
    # parsed once per process.
    return tuple(measure_set(names))


def measures_checked(entries: object) -> list[str]:
    """A measure set as stored: each entry read (ir_measures' or trec_eval's name) and
    written in ir_measures' syntax, each measure once; ValidationError names a bad entry."""
    if not isinstance(entries, list):
        raise ValidationError({"measures": "Measures must be a list of measure names."})
    try:
        names = [format_measure(measure) for measure in measure_set(entries)]
    except MeasureNameError as error:
        raise ValidationError({"measures": str(error)}) from None
    if len(names) > MAX_MEASURES:
        raise ValidationError(
            {"measures": f"{len(names)} measures; keep at most {MAX_MEASURES} beside nDCG@k."}
        )
    return names


class GradeLevel(models.Model):
    """One level of a collection's grade scale, with the definition shown to assessors."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="grades")
    value = models.SmallIntegerField()
    label = models.CharField(max_length=100)
    definition = models.TextField(blank=True)

    class Meta:
        # Orderings name the *_id columns: ordering by a foreign key itself would join the
        # related table and sort by its ordering on every default query.
        ordering = ["collection_id", "value"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "value"], name="grade_level_unique"),
            models.CheckConstraint(
                condition=Q(value__gte=-9) & Q(value__lte=99), name="grade_level_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.value}: {self.label}"


class Membership(models.Model):
    """A user's role in a collection."""

    ORGANISER = "organiser"
    ASSESSOR = "assessor"
    OWNER = "owner"
    ROLE_CHOICES = [(ORGANISER, "Organiser"), (ASSESSOR, "Assessor"), (OWNER, "System owner")]

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=ROLE_CHOICES)

    class Meta:
        ordering = ["collection_id", "user_id", "role"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "user", "role"], name="membership_unique"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["organiser", "assessor", "owner"]), name="membership_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} of {self.collection}"


class Query(models.Model):
    """A topic of a collection, addressed by its external id `qid`.

    `judgements_version` grows in every transaction that changes one of the query's
    judgements; `scored_version` is the version its stored scores were computed from. The
    scores are stale (pending) while the two differ.
    """

    # No index of its own: the unique (collection, qid) index serves lookups by collection, and
    # a second index would tempt the planner into scanning a whole collection per id.
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="queries", db_index=False
    )
    qid = models.CharField(max_length=ID_MAX_LENGTH)
    title = models.TextField(blank=True)
    description = models.TextField(blank=True)
    narrative = models.TextField(blank=True)
    judgements_version = models.BigIntegerField(default=0)
    scored_version = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["collection_id", "qid"]
        verbose_name_plural = "queries"
        constraints = [
            models.UniqueConstraint(fields=["collection", "qid"], name="query_qid_unique"),
        ]
        indexes = [
            models.Index(
                fields=["collection"],
                condition=Q(judgements_version__gt=models.F("scored_version")),
                name="query_stale_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.qid}"

    @property
    def scores_pending(self) -> bool:
        return self.judgements_version != self.scored_version


class Document(models.Model):
    """A document of a collection, addressed by its external id `docno`."""

    # No index of its own: the unique (collection, docno) index serves lookups by collection, and
    # a second index would tempt the planner into scanning a whole collection per id.
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="documents", db_index=False
    )
    docno = models.CharField(max_length=ID_MAX_LENGTH)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, help_text="SHA-256 of title+text")

    class Meta:
        ordering = ["collection_id", "docno"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "docno"], name="document_docno_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.docno}"

    @staticmethod
    def hash_of(title: str, text: str) -> str:
        """`content_hash` of a title and text: the SHA-256 of both, a line feed between
        (`ids.CONTENT_HASH_SQL` computes the same in PostgreSQL)."""
        return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()
