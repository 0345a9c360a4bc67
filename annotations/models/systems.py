"""Search systems: an engine's endpoint, how to ask it a query and how to read its answer;
and the queries a fetch of its run got no answer for."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from annotations.formats import search_answers

# Systems read their secrets only from the variables an operator set aside for them, as
# machine judges do, so that no organiser can make the server send another of its variables
# to an endpoint of their choice.
SECRET_PREFIX = "NDCG_SEARCH_KEY_"
SECRET_NAME = RegexValidator(
    rf"^{SECRET_PREFIX}[A-Z0-9_]{{1,80}}$",
    f"Name a variable the operator set aside for search systems' secrets: {SECRET_PREFIX}<NAME> "
    "(A-Z, 0-9, _).",
)
MAX_DEPTH = 10_000
MAX_TIMEOUT_SECONDS = 120
MAX_ATTEMPTS = 10
# A schedule of at most a year between fetches; shorter than an hour would be a load test.
MAX_FETCH_EVERY_HOURS = 24 * 365


class SearchSystem(models.Model):
    """A search engine an organiser asks for runs: method, URL template, headers (a secret
    header's value comes from an operator's `NDCG_SEARCH_KEY_*` variable, never stored), a
    JSON body template, the depth, and where its answer keeps the hits (a preset of
    `search_answers.PRESETS`, any blank expression taking the preset's)."""

    GET, POST = "GET", "POST"
    METHOD_CHOICES = [(GET, "GET"), (POST, "POST")]
    FORMAT_CHOICES = [
        (search_answers.ELASTICSEARCH, "Elasticsearch _search"),
        (search_answers.OPENSEARCH, "OpenSearch _search"),
        (search_answers.SOLR, "Solr select (JSON)"),
        (search_answers.JMESPATH, "any JSON (JMESPath)"),
    ]

    collection = models.ForeignKey(
        "annotations.Collection", on_delete=models.CASCADE, related_name="search_systems"
    )
    name = models.SlugField(max_length=60, help_text="Unique in the collection, e.g. bm25-prod")
    method = models.CharField(max_length=4, choices=METHOD_CHOICES, default=GET)
    url_template = models.CharField(
        max_length=2000,
        help_text="The URL asked, with placeholders {{qid}} {{title}} {{description}} "
        "{{depth}} in its path or query string (each percent-encoded), e.g. "
        "https://search.example.org/docs/_search?q={{title}}&size={{depth}}",
    )
    headers = models.JSONField(
        default=list,
        blank=True,
        help_text='Headers sent: [{"name": "Authorization", "value": "ApiKey ", "secret": '
        f'"{SECRET_PREFIX}PROD"}}]; a secret\'s value follows "value"',
    )
    body_template = models.TextField(
        blank=True,
        help_text='A JSON body (POST), placeholders inside its strings: {"size": "{{depth}}", '
        '"query": {"match": {"text": "{{title}}"}}}',
    )
    depth = models.PositiveIntegerField(
        default=100, validators=[MinValueValidator(1), MaxValueValidator(MAX_DEPTH)]
    )
    answer_format = models.CharField(
        max_length=16, choices=FORMAT_CHOICES, default=search_answers.ELASTICSEARCH
    )
    hits_path = models.CharField(max_length=500, blank=True, help_text="The hits (a list)")
    id_path = models.CharField(max_length=500, blank=True, help_text="In a hit: the document id")
    score_path = models.CharField(max_length=500, blank=True, help_text="In a hit: its score")
    title_path = models.CharField(max_length=500, blank=True, help_text="In a hit: a title")
    snippet_path = models.CharField(max_length=500, blank=True, help_text="In a hit: its text")
    url_path = models.CharField(max_length=500, blank=True, help_text="In a hit: a link")
    timeout_seconds = models.PositiveSmallIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(MAX_TIMEOUT_SECONDS)]
    )
    attempts = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(MAX_ATTEMPTS)]
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(16)]
    )
    requests_per_minute = models.PositiveIntegerField(
        default=600, validators=[MinValueValidator(1), MaxValueValidator(100_000)]
    )
    fetch_every_hours = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_FETCH_EVERY_HOURS)],
        help_text="Fetch a run every this many hours (empty: only when asked)",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="search_system_unique"),
            models.CheckConstraint(
                condition=models.Q(method__in=["GET", "POST"]), name="search_system_method_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(answer_format__in=list(search_answers.FORMATS)),
                name="search_system_format_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(depth__gte=1, depth__lte=MAX_DEPTH),
                name="search_system_depth_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(fetch_every_hours__isnull=True)
                | models.Q(fetch_every_hours__gte=1, fetch_every_hours__lte=MAX_FETCH_EVERY_HOURS),
                name="search_system_schedule_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def mapping(self) -> search_answers.Mapping:
        return search_answers.mapping_for(
            self.answer_format,
            {
                "hits": self.hits_path, "id": self.id_path, "score": self.score_path,
                "title": self.title_path, "snippet": self.snippet_path, "url": self.url_path,
            },
        )  # fmt: skip


class FetchFailure(models.Model):
    """A query a fetch got no hits for after its attempts: the HTTP status (if any) and a
    message naming status codes, error classes or the answer's path that failed, never what
    the engine sent."""

    job = models.ForeignKey(
        "annotations.ImportJob", on_delete=models.CASCADE, related_name="fetch_failures"
    )
    qid = models.CharField(max_length=200)
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    message = models.CharField(max_length=500)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["job", "qid"], name="fetch_failure_unique")]

    def __str__(self) -> str:
        return f"{self.qid}: {self.message}"
