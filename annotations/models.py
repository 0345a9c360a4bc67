"""Collections, queries, documents, runs, judgements with their history, and stored scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Substr

from annotations import packing

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
AGGREGATION_CHOICES = [
    ("median", "Median (lower median on a tie)"),
    ("majority", "Majority"),
    ("mean", "Mean, rounded"),
]
DEFAULT_CUTOFFS = [5, 10, 20]
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
    missing_queries = models.CharField(
        max_length=4,
        choices=MISSING_CHOICES,
        default="zero",
        help_text="What a judged query that a run did not answer counts as.",
    )
    aggregation = models.CharField(max_length=10, choices=AGGREGATION_CHOICES, default="median")
    public_leaderboard = models.BooleanField(
        default=False, help_text="Anyone, logged in or not, may read the leaderboard."
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
        ]

    def __str__(self) -> str:
        return self.slug

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

    @property
    def sorted_cutoffs(self) -> list[int]:
        return sorted(int(k) for k in self.cutoffs)


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


class Run(models.Model):
    """A system's submission: a ranked list of documents per query."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=ID_MAX_LENGTH)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="run_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.name}"


# Document ids of each ranking copied into its row (see Ranking.head).
HEAD_IDS = 128


class Ranking(models.Model):
    """A run's ranked documents for one query: the run's results, one row per (run, query).

    The documents are stored in effective order (trec_eval's: score descending, ties by
    docno descending), fixed at import, as packed arrays (see `annotations.packing`): 64-bit
    document ids, the submitted scores as doubles (empty when the run gave none) and the
    submitted ranks. A TREC-scale collection has 27 million results but only 27 thousand
    rankings, so imports write a few hundred rows per run and scoring reads one row per run
    of a query instead of one per result.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rankings", db_index=False)
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="rankings", db_index=False
    )
    size = models.PositiveIntegerField(help_text="Number of documents retrieved")
    documents = models.BinaryField(help_text="Document ids, int64 little-endian, in order")
    scores = models.BinaryField(help_text="Scores, float64 little-endian; empty: none given")
    ranks = models.BinaryField(help_text="Submitted ranks, int32 little-endian")
    # The top of the ranking, kept by the database itself inside the row: every judgement
    # reads the top of one query's rankings of every run, and reading it here avoids a
    # separate TOAST lookup per ranking for the out-of-line `documents`.
    head = models.GeneratedField(
        expression=Substr("documents", 1, HEAD_IDS * 8),
        output_field=models.BinaryField(),
        db_persist=True,
        help_text=f"The first {HEAD_IDS} document ids of `documents`",
    )

    class Meta:
        ordering = ["run_id", "query_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "query"], name="ranking_unique"),
            models.CheckConstraint(condition=Q(size__gte=1), name="ranking_not_empty"),
        ]
        # The scoring read: one query's rankings across every run.
        indexes = [models.Index(fields=["query", "run"], name="ranking_query_idx")]

    def __str__(self) -> str:
        return f"ranking of run {self.run_id} for query {self.query_id} ({self.size} documents)"

    def document_ids(self, depth: int | None = None) -> list[int]:
        return packing.unpack_ids(self.documents, depth)

    def score_values(self) -> list[float] | None:
        return packing.unpack_scores(self.scores) if self.scores else None

    def rank_values(self) -> list[int]:
        return packing.unpack_ranks(self.ranks)


class Judgement(models.Model):
    """One assessor's grade for a (query, document) pair."""

    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="judgements", db_index=False
    )
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judgements")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgements"
    )
    grade = models.SmallIntegerField()
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "document_id", "assessor_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["query", "document", "assessor"], name="judgement_unique_per_assessor"
            ),
            models.CheckConstraint(
                condition=Q(grade__gte=-9) & Q(grade__lte=99), name="judgement_grade_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id} by {self.assessor_id}: {self.grade}"


class JudgementHistory(models.Model):
    """Append-only record of every judgement change; rows are never updated or deleted."""

    SOURCE_CHOICES = [
        ("form", "Assessor form"),
        ("api", "REST API"),
        ("import", "Qrels import"),
        ("admin", "Admin"),
        ("adjudication", "Adjudication"),
        ("other", "Other (direct database change)"),
    ]

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgement_history")
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="judgement_history"
    )
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgement_history"
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="judgement_changes",
    )
    old_grade = models.SmallIntegerField(null=True, blank=True, help_text="Empty when created")
    new_grade = models.SmallIntegerField(null=True, blank=True, help_text="Empty when deleted")
    note = models.TextField(blank=True)
    source = models.CharField(max_length=12, choices=SOURCE_CHOICES)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query_id", "document_id", "changed_at", "id"]
        verbose_name_plural = "judgement history"
        constraints = [
            models.CheckConstraint(
                condition=Q(old_grade__isnull=False) | Q(new_grade__isnull=False),
                name="history_has_a_grade",
            ),
        ]
        indexes = [models.Index(fields=["query", "document"], name="history_pair_idx")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.old_grade} -> {self.new_grade}"


# Foreign keys whose column leads a composite index or constraint below carry no index of
# their own (db_index=False): every extra index is maintained on each score write.


class IdealScore(models.Model):
    """A query's ideal DCG at k, from every judged document of the query."""

    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="ideal_scores", db_index=False
    )
    k = models.PositiveIntegerField()
    idcg = models.FloatField()

    class Meta:
        ordering = ["query_id", "k"]
        constraints = [models.UniqueConstraint(fields=["query", "k"], name="ideal_unique")]

    def __str__(self) -> str:
        return f"IDCG@{self.k} of {self.query_id} = {self.idcg}"


class QueryScore(models.Model):
    """A run's scores for one evaluated query at one cutoff k."""

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="query_scores", db_index=False
    )
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="scores", db_index=False
    )
    k = models.PositiveIntegerField()
    ndcg = models.FloatField()
    dcg = models.FloatField()
    judged = models.FloatField(help_text="Share of the top k that is judged")
    ndcg_condensed = models.FloatField(help_text="nDCG' with unjudged documents removed")

    class Meta:
        ordering = ["run_id", "query_id", "k"]
        constraints = [
            models.UniqueConstraint(fields=["query", "run", "k"], name="query_score_unique"),
        ]
        indexes = [models.Index(fields=["run", "k"], name="query_score_run_idx")]

    def __str__(self) -> str:
        return f"nDCG@{self.k} of run {self.run_id} on query {self.query_id} = {self.ndcg}"


class RunScore(models.Model):
    """A run's mean scores at k over the collection's evaluated queries.

    The `*_sum` fields hold the exact sum of the per-query values (every finite double is an
    integer multiple of 2**-1074, so the sum is an exact binary fraction, kept as
    'MANTISSA_HEX:SHIFT', see `annotations.exact`); the means are that sum divided by
    `queries`, correctly rounded. An incremental update after
    one query changes therefore gives the same bits as a recomputation from scratch.
    """

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="run_scores", db_index=False
    )
    k = models.PositiveIntegerField()
    queries = models.PositiveIntegerField(default=0)
    ndcg = models.FloatField(default=0.0)
    ndcg_condensed = models.FloatField(default=0.0)
    judged = models.FloatField(default=0.0)
    ndcg_sum = models.TextField(default="0:0")
    ndcg_condensed_sum = models.TextField(default="0:0")
    judged_sum = models.TextField(default="0:0")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run_id", "k"]
        constraints = [models.UniqueConstraint(fields=["run", "k"], name="run_score_unique")]

    def __str__(self) -> str:
        return f"mean nDCG@{self.k} of run {self.run_id} = {self.ndcg}"


class Adjudication(models.Model):
    """An organiser's final grade for a (query, document); it overrides the assessors' grades."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="adjudications")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="adjudications")
    grade = models.SmallIntegerField()
    organiser = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query_id", "document_id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="adjudication_unique"),
            models.CheckConstraint(
                condition=Q(grade__gte=-9) & Q(grade__lte=99), name="adjudication_grade_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.grade} (adjudicated)"


# --- assessor workflow: pools, assignments ------------------------------------------------


class Pool(models.Model):
    """A judging pool: the union of the pooled runs' top `depth` documents per query.

    `runs` are the runs pooled so far and `queries` the queries it is limited to (empty: all
    of them). `overlap` is how many assessors each pair should be assigned to.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=100)
    depth = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    overlap = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    runs = models.ManyToManyField(Run, related_name="pools", blank=True)
    queries = models.ManyToManyField(Query, related_name="pools", blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="pools_created",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="pool_name_unique"),
            models.CheckConstraint(condition=Q(depth__gte=1), name="pool_depth_positive"),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="pool_overlap_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.slug}/{self.name}"


class PoolEntry(models.Model):
    """One (query, document) pair of a pool; `best_position` is its best rank in any run."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="entries")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="pool_entries")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pool_entries")
    best_position = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    added = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool_id", "query_id", "document_id"]
        verbose_name_plural = "pool entries"
        constraints = [
            models.UniqueConstraint(fields=["pool", "query", "document"], name="pool_entry_unique"),
            models.CheckConstraint(
                condition=Q(best_position__gte=1), name="pool_entry_position_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.query_id}/{self.document_id}"


class Assignment(models.Model):
    """One assessor's share of a pool: an ordered list of pairs to judge."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assignments_created",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool_id", "assessor_id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "assessor"], name="assignment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.pool} for {self.assessor}"


class AssignmentItem(models.Model):
    """A pair in an assignment, at a 1-based `position`.

    Whether it is judged is read from the assessor's Judgement (the single source of truth);
    `skipped` marks "unsure / skip", with the assessor's optional `note`.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="items")
    entry = models.ForeignKey(PoolEntry, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    skipped = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "entry"], name="assignment_item_entry_unique"
            ),
            models.UniqueConstraint(
                fields=["assignment", "position"], name="assignment_item_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(position__gte=1), name="assignment_item_position_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id}#{self.position}"
