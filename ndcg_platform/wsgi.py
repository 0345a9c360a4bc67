"""WSGI entry point: Django's application, chunked API request bodies given their length."""

import os

from django.core.wsgi import get_wsgi_application

from ndcg_platform.chunked_bodies import ChunkedApiBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ndcg_platform.settings")
application = ChunkedApiBodies(get_wsgi_application())
