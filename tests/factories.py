"""factory_boy factories for the app's models."""

import factory
from django.contrib.auth import get_user_model

from annotations import services
from annotations.models import (
    Collection,
    Document,
    Judgement,
    MachineJudge,
    Membership,
    Query,
    Run,
)


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


def record_grades(collection: Collection, who: object, grades: dict[tuple[str, str], int]) -> None:
    """`who`'s grades of (qid, docno) pairs through the judgement service, with the source a
    machine judge's account (source ``machine``) or a person's form gives."""
    for (qid, docno), grade in grades.items():
        services.judgement_record(
            query=collection.queries.get(qid=qid),
            document=collection.documents.get(docno=docno),
            assessor=who,  # type: ignore[arg-type]
            grade=grade,
            source="machine" if hasattr(who, "machine_judge") else "form",
        )


def machine_judge(
    collection: Collection, name: str = "umbrela", **settings: object
) -> MachineJudge:
    """A machine judge of the collection at an address nothing listens on (tests that call
    it start their own model server)."""
    from annotations.services.judges import judge_create

    values: dict[str, object] = {
        "base_url": "http://127.0.0.1:9/v1", "model": "test-model",
        "api_key_env": "NDCG_JUDGE_KEY_TEST", **settings,
    }  # fmt: skip
    return judge_create(collection=collection, name=name, created_by=None, **values)
