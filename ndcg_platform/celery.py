"""Celery application: runs score recomputation on workers when CELERY_BROKER_URL is set."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ndcg_platform.settings")

app = Celery("ndcg_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
