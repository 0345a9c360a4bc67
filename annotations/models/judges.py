"""Machine judges: a language model behind an OpenAI-compatible endpoint that grades pairs,
its runs over pools, and the answers it gave (the cache and their provenance)."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

# Judges read their keys only from the variables an operator set aside for them, so that no
# organiser can make the server send another of its variables (its secret key, its database
# password) to an endpoint of their choice.
KEY_PREFIX = "NDCG_JUDGE_KEY_"
KEY_NAME = RegexValidator(
    rf"^{KEY_PREFIX}[A-Z0-9_]{{1,80}}$",
    f"Name a variable the operator set aside for judges' keys: {KEY_PREFIX}<NAME> "
    "(A-Z, 0-9, _), or leave it empty for an endpoint without keys.",
)


MAX_TIMEOUT_SECONDS = 600
MAX_ATTEMPTS = 10
CURRENCY = RegexValidator(r"^[A-Z]{3}$", "Give an ISO 4217 code of three capitals, e.g. USD.")


class MachineJudge(models.Model):
    """A model that grades (query, document) pairs of a collection as an assessor does.

    Its grades are the judgements of its own account (`account`, a system account without a
    password), in the history like anyone's, with source `machine`. The endpoint's key is
    never stored: `api_key_env` names the environment variable that holds it, one of the
    operator's `NDCG_JUDGE_KEY_*` (empty: the endpoint takes no key). Editing the
    prompt template or its variant raises `prompt_version`, so cached answers of the old
    prompts are not reused.
    """

    collection = models.ForeignKey(
        "annotations.Collection", on_delete=models.CASCADE, related_name="machine_judges"
    )
    name = models.SlugField(max_length=60, help_text="Unique in the collection, e.g. umbrela-4o")
    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="machine_judge"
    )
    base_url = models.URLField(
        max_length=500, help_text="The OpenAI-compatible API, e.g. https://api.openai.com/v1"
    )
    model = models.CharField(max_length=200, help_text="The model name the endpoint takes")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[KEY_NAME],
        default="",
        help_text="The server's variable that holds the endpoint's key, one the operator set "
        f"aside for judges ({KEY_PREFIX}<NAME>); empty for an endpoint without keys",
    )
    prompt_template = models.TextField()
    variant_template = models.TextField(
        blank=True,
        help_text="A second wording of the prompt (optional): every pair is asked both ways, "
        "twice the tokens; where the two grades differ the pair counts as uncertain for "
        "pools by impact. The first prompt's grade is the judgement.",
    )
    prompt_version = models.PositiveIntegerField(default=1)
    temperature = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    max_tokens = models.PositiveIntegerField(
        default=200, validators=[MinValueValidator(1), MaxValueValidator(8192)]
    )
    logprobs = models.BooleanField(
        default=False,
        help_text="Ask for the answer's token log-probabilities (vLLM, llama.cpp, OpenAI chat "
        "models give them): how sure the judge was of its grade, used by impact-ordered pools",
    )
    concurrency = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(16)]
    )
    requests_per_minute = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1), MaxValueValidator(100_000)]
    )
    timeout_seconds = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TIMEOUT_SECONDS)],
        help_text="How long one request may wait for the endpoint (each connect, read and "
        f"write; a whole answer at most twice that), 1 to {MAX_TIMEOUT_SECONDS} s",
    )
    attempts = models.PositiveSmallIntegerField(
        default=6,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_ATTEMPTS)],
        help_text="How many times a pair is asked when the endpoint times out, is busy (429, "
        f"5xx) or drops the connection, 1 to {MAX_ATTEMPTS}; a pair still without an answer "
        "is recorded as failed and the run goes on",
    )
    prompt_price = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0)], help_text="Per million prompt tokens"
    )
    completion_price = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0)], help_text="Per million answer tokens"
    )
    currency = models.CharField(
        max_length=3,
        default="USD",
        validators=[CURRENCY],
        help_text="The prices' currency, an ISO 4217 code (USD, EUR, ...)",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="machine_judge_unique"),
            models.CheckConstraint(
                condition=models.Q(timeout_seconds__gte=1)
                & models.Q(timeout_seconds__lte=MAX_TIMEOUT_SECONDS),
                name="machine_judge_timeout_range",
            ),
            models.CheckConstraint(
                condition=models.Q(attempts__gte=1) & models.Q(attempts__lte=MAX_ATTEMPTS),
                name="machine_judge_attempts_range",
            ),
        ]

    def __str__(self) -> str:
        return f"judge {self.name} ({self.model})"


class JudgeRun(models.Model):
    """One pass of a judge over a pool: all its pairs, those no person has judged, or (a
    retry) the pairs that failed in the run it retries."""

    ALL, UNJUDGED, FAILED_PAIRS = "all", "unjudged", "failed"
    SCOPE_CHOICES = [(ALL, "every pair of the pool"), (UNJUDGED, "pairs no person has judged")]
    SCOPES = [*SCOPE_CHOICES, (FAILED_PAIRS, "the pairs that failed in the run retried")]
    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
    STATE_CHOICES = [(state, state) for state in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)]
    ACTIVE = (QUEUED, RUNNING)

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="runs")
    pool = models.ForeignKey("annotations.Pool", on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=10, choices=SCOPES, default=UNJUDGED)
    retry_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries"
    )
    state = models.CharField(max_length=10, choices=STATE_CHOICES, default=QUEUED)
    pairs_total = models.PositiveIntegerField(default=0)
    pairs_done = models.PositiveIntegerField(default=0, help_text="Graded, from cache or asked")
    pairs_cached = models.PositiveIntegerField(default=0)
    pairs_failed = models.PositiveIntegerField(
        default=0, help_text="No grade: no answer in the judge's attempts, or none on the scale"
    )
    requests = models.PositiveIntegerField(default=0, help_text="Sent, attempts included")
    starts = models.PositiveSmallIntegerField(
        default=0, help_text="Times a worker started it (more than one: queued again by the sweep)"
    )
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"run {self.id} of {self.judge_id} over pool {self.pool_id}: {self.state}"

    @property
    def cost(self) -> float:
        """In the judge's `currency`."""
        judge = self.judge
        return (
            self.prompt_tokens * judge.prompt_price
            + self.completion_tokens * judge.completion_price
        ) / 1_000_000


class JudgeRunFailure(models.Model):
    """A pair of a run that got no grade: what kind of failure and a message naming status
    codes and error classes (never what the endpoint sent)."""

    TIMEOUT, UNAVAILABLE, REFUSED, MALFORMED, NO_GRADE = (
        "timeout", "unavailable", "refused", "malformed", "no_grade",
    )  # fmt: skip
    KIND_CHOICES = [
        (TIMEOUT, "no answer in time"),
        (UNAVAILABLE, "endpoint busy or unreachable"),
        (REFUSED, "request refused"),
        (MALFORMED, "not a chat completion"),
        (NO_GRADE, "no grade on the scale"),
    ]

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="failures")
    query = models.ForeignKey("annotations.Query", on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey("annotations.Document", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=KIND_CHOICES)
    message = models.CharField(max_length=500)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "query", "document"], name="judge_run_failure_unique"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.query_id}/{self.document_id} {self.kind}"


class JudgeAnswer(models.Model):
    """What a judge answered for a pair under one prompt version: its grade (None: the
    answer named no grade on the scale), a bounded excerpt and the cost. Keyed by what the
    answer depends on (`cache_key`: model, prompt version, query text, document content), so
    asking again costs nothing and a changed document is asked again."""

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="answers")
    query = models.ForeignKey("annotations.Query", on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey("annotations.Document", on_delete=models.CASCADE, related_name="+")
    cache_key = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    prompt_version = models.PositiveIntegerField()
    grade = models.SmallIntegerField(null=True, blank=True)
    excerpt = models.CharField(max_length=500, blank=True)
    variant_grade = models.SmallIntegerField(
        null=True, blank=True, help_text="The variant prompt's grade (None: not asked, or none)"
    )
    grade_probabilities = models.JSONField(
        null=True,
        blank=True,
        help_text="grade -> probability from the grade token's log-probabilities, when asked",
    )
    failure = models.CharField(max_length=500, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "cache_key"], name="judge_answer_unique")
        ]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.query_id}/{self.document_id} -> {self.grade}"
