"""factory_boy factories for the app's models."""

import factory
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import Collection, Document, Judgement, Membership, Query, Run


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pass-word-123")


class CollectionFactory(factory.django.DjangoModelFactory):
    """A collection with the default 0-3 scale (created through the service)."""

    class Meta:
        model = Collection

    slug = factory.Sequence(lambda n: f"collection-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    gain = "linear"
    cutoffs = factory.LazyFunction(lambda: [5, 10, 20])

    @classmethod
    def _create(cls, model_class: type, *args: object, **kwargs: object) -> Collection:
        return services.collection_create(**kwargs)  # type: ignore[arg-type]


class QueryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Query

    collection = factory.SubFactory(CollectionFactory)
    qid = factory.Sequence(lambda n: f"q{n}")
    title = factory.Sequence(lambda n: f"query number {n}")


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    collection = factory.SubFactory(CollectionFactory)
    docno = factory.Sequence(lambda n: f"d{n}")
    title = factory.Sequence(lambda n: f"document {n}")
    text = "Some text about the topic."


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"run{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    collection = factory.SubFactory(CollectionFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.ASSESSOR


def grade_pair(
    collection: Collection, qid: str, docno: str, username: str, grade: int, *, source: str = "api"
) -> Judgement:
    """``username``'s grade for (qid, docno) through the judgement service (the account is
    made if it is new), as the API or a form records it."""
    return services.judgement_record(
        query=collection.queries.get(qid=qid),
        document=collection.documents.get(docno=docno),
        assessor=UserFactory(username=username),
        grade=grade,
        source=source,
    )
