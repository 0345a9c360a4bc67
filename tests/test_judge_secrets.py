"""A hostile organiser and machine judges: no server variable but those set aside for judges
is ever read, sent or shown; prompt templates cannot allocate without bound; long names
never collide into a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import services
from annotations.formats import judge_prompts
from annotations.models import Collection, JudgeRun, MachineJudge
from annotations.services.judges import account_name
from tests.factories import CollectionFactory, MembershipFactory
from tests.fake_llm import FakeLlm, fake_llm, says

BASE = "/api/v1/collections/trial/judges/"
MARKER = "sekret-value-never-to-leave-the-server"
# Variables of the server an attacker would want sent to an endpoint of their choice.
SERVER_SECRETS = [
    "DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "EMAIL_HOST_PASSWORD",
    "AWS_SECRET_ACCESS_KEY", "HOME", "NDCG_JUDGE_KEY_", "ndcg_judge_key_openai",
    "NDCG_JUDGE_KEY_X\nDJANGO_SECRET_KEY", "NDCG_JUDGE_KEYX",
]  # fmt: skip


def _api(username: str) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=User.objects.get(username=username))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _body(url: str, **extra: object) -> dict[str, object]:
    return {"name": "j", "base_url": url, "model": "m", "requests_per_minute": 6000, **extra}


@pytest.mark.parametrize("variable", SERVER_SECRETS)
def test_a_judge_may_not_name_any_variable_but_those_set_aside_for_judges(
    trial: Collection, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", MARKER)
    olga = _api("olga")
    made = olga.post(BASE, _body("http://127.0.0.1:9/v1", api_key_env=variable), format="json")
    assert made.status_code == 400
    assert "api_key_env" in made.json()["error"]["fields"]
    assert "NDCG_JUDGE_KEY_" in str(made.json()) and MARKER not in made.content.decode()
    assert not MachineJudge.objects.exists()
    # nor by changing a judge that reads an allowed variable
    assert olga.post(BASE, _body("http://127.0.0.1:9/v1"), format="json").status_code == 201
    changed = olga.patch(f"{BASE}j/", {"api_key_env": variable}, format="json")
    assert changed.status_code == 400
    assert MachineJudge.objects.get().api_key_env == ""


def test_the_judge_form_refuses_a_server_secret(trial: Collection) -> None:
    client = Client()
    client.force_login(User.objects.get(username="olga"))
    listing = reverse("collection-judges", args=["trial"])
    fields = {
        "name": "j", "base_url": "http://127.0.0.1:9/v1", "model": "m",
        "api_key_env": "DJANGO_SECRET_KEY", "prompt_template": "", "temperature": 0,
        "max_tokens": 50, "concurrency": 1, "requests_per_minute": 60,
        "prompt_price": 0, "completion_price": 0,
    }  # fmt: skip
    page = client.post(listing, fields)
    assert page.status_code == 200 and b"NDCG_JUDGE_KEY_" in page.content
    assert not MachineJudge.objects.exists()


def test_a_judge_saved_before_the_rule_is_refused_at_its_next_use_and_nothing_is_sent(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", MARKER)
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    with fake_llm(FakeLlm(lambda prompt, number: says("##final score: 1"))) as llm:
        olga = _api("olga")
        assert olga.post(BASE, _body(llm.url), format="json").status_code == 201
        MachineJudge.objects.update(api_key_env="DJANGO_SECRET_KEY")  # as an old row holds
        tried = olga.post(f"{BASE}j/try/")
        assert tried.status_code == 400, tried.content
        assert "DJANGO_SECRET_KEY is not read for judges" in tried.content.decode()
        started = olga.post(f"{BASE}j/runs/", {"pool": pool.id, "scope": "all"}, format="json")
        assert started.status_code == 400 and not JudgeRun.objects.exists()
        page = Client()
        page.force_login(User.objects.get(username="olga"))
        detail = reverse("judge-detail", args=["trial", "j"])
        assert b"is not read for judges" in page.post(detail, {"try": "1"}).content
        assert llm.prompts == [] and MARKER not in "".join(llm.authorizations)


def test_the_key_set_aside_is_sent_and_an_empty_name_sends_none(
    transactional_db: None, trial: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NDCG_JUDGE_KEY_OPENAI", "sk-for-judges")
    services.pool_build(collection=trial, name="main", depth=2)
    with fake_llm(FakeLlm(lambda prompt, number: says("##final score: 1"))) as llm:
        olga = _api("olga")
        made = olga.post(BASE, _body(llm.url, api_key_env="NDCG_JUDGE_KEY_OPENAI"), format="json")
        assert made.status_code == 201
        assert olga.post(f"{BASE}j/try/").status_code == 200
        assert set(llm.authorizations) == {"Bearer sk-for-judges"}
        assert "sk-for-judges" not in olga.get(f"{BASE}j/").content.decode()
        llm.authorizations.clear()
        assert olga.patch(f"{BASE}j/", {"api_key_env": ""}, format="json").status_code == 200
        assert olga.post(f"{BASE}j/try/").status_code == 200
        assert set(llm.authorizations) == {"Bearer no-key"}
        monkeypatch.delenv("NDCG_JUDGE_KEY_OPENAI")
        assert olga.patch(
            f"{BASE}j/", {"api_key_env": "NDCG_JUDGE_KEY_OPENAI"}, format="json"
        ).status_code == 200  # fmt: skip
        unset = olga.post(f"{BASE}j/try/")
        assert unset.status_code == 400 and "is not set on the server" in unset.content.decode()


@pytest.mark.parametrize(
    "template",
    [
        "{document:>999999999}",
        "{document:_^10000000000}",
        "{document!r}",
        "{title!s:>9} {document}",
    ],
)
def test_a_prompt_template_with_a_format_spec_is_refused(trial: Collection, template: str) -> None:
    assert judge_prompts.template_problem(template) is not None
    made = _api("olga").post(
        BASE, _body("http://127.0.0.1:9/v1", prompt_template=template), format="json"
    )
    assert made.status_code == 400 and "prompt_template" in made.json()["error"]["fields"]


def test_a_template_saved_with_a_width_renders_no_wider_than_its_fields() -> None:
    prompt = judge_prompts.render(
        "Q {title:>999999999} D {document:_^10000000000} {{x}}",
        levels=[judge_prompts.Level(0, "no"), judge_prompts.Level(1, "yes")],
        title="cats",
        description="",
        narrative="",
        document="a text",
    )
    assert prompt == "Q cats D a text {x}"


def test_judges_whose_names_share_the_first_150_characters_of_the_account_both_exist(
    db: None,
) -> None:
    collection = CollectionFactory(slug="s" * 100)
    organiser = MembershipFactory(collection=collection, role="organiser").user
    client = APIClient()
    client.force_authenticate(organiser)
    base = f"/api/v1/collections/{collection.slug}/judges/"
    names = ["n" * 59 + "a", "n" * 59 + "b"]
    for name in names:
        made = client.post(base, _body("http://127.0.0.1:9/v1", name=name), format="json")
        assert made.status_code == 201, made.content
    accounts = {judge.account.username for judge in MachineJudge.objects.all()}
    assert len(accounts) == 2 and all(len(account) <= 150 for account in accounts)
    assert account_name("trial", "umbrela") == "judge:trial:umbrela"
