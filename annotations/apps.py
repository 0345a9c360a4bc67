"""App configuration for the judging and scoring app."""

import gc

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Judging and scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotations import signals  # noqa: F401  (connects the scoring triggers)

        # What start-up loaded (modules, models, the app registry) lives as long as the
        # process. Moved out of the cycle collector's reach, it no longer makes each full
        # collection walk the whole framework: a 30-40 ms pause, at random, in the middle of
        # a judgement's recomputation (the score latency's outliers on the benchmark).
        gc.collect()
        gc.freeze()
