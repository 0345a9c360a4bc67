"""Load the demo collection (the worked example of ndcg.md and two more queries) and accounts."""

import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotations import services
from annotations.models import Collection, Membership

DATA = Path(__file__).resolve().parents[2] / "demo_data"
RUNS = ["run_example.txt", "run_bm25.txt", "run_random.txt"]


class Command(BaseCommand):
    help = "Create the demo collection and a demo organiser and assessor (passwords printed)"

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            collection = Collection.objects.filter(slug="demo").first()
            if collection is None:
                collection = services.collection_create(
                    slug="demo",
                    name="Demo collection",
                    description="The worked example of ndcg.md (query q1, run 'example') "
                    "and two more queries.",
                    cutoffs=[5, 6, 10, 20],
                )
            services.topics_import(collection=collection, source=DATA / "topics.jsonl")
            services.documents_import(collection=collection, source=DATA / "documents.jsonl")
            summary = services.judgements_import(
                collection=collection,
                source=DATA / "qrels.txt",
                assessor=services.import_assessor(),
            )
            for name in RUNS:
                services.run_import(collection=collection, source=DATA / name, replace=True)
            accounts = {
                "organiser": self._account("organiser", staff=True),
                "assessor": self._account("assessor", staff=False),
            }
            for username, role in (
                ("organiser", Membership.ORGANISER),
                ("assessor", Membership.ASSESSOR),
            ):
                Membership.objects.get_or_create(
                    collection=collection, user=accounts[username][0], role=role
                )
        self.stdout.write(f"demo collection loaded (judgements: {summary})")
        for username, (_, password) in accounts.items():
            self.stdout.write(f"  {username:<10} password: {password}")
        self.stdout.write("log in at http://127.0.0.1:8000/ (admin at /admin/ for the organiser)")

    def _account(self, username: str, *, staff: bool) -> tuple[Any, str]:
        """Create or reset a demo account with a fresh random password."""
        user, _ = get_user_model().objects.get_or_create(username=username)
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = staff
        user.is_superuser = staff
        user.save()
        return user, password
