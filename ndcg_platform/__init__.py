"""Project package: settings, URL routing, WSGI/ASGI entry points and the Celery app."""

from ndcg_platform.celery import app as celery_app

__all__ = ["celery_app"]
