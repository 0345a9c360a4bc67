"""Login throttling, security headers, the production checklist and the browsable API."""

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotations import lockouts
from tests.factories import UserFactory

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _login(client: Client, username: str, password: str) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_repeated_wrong_passwords_lock_the_account_even_against_the_right_one(
    db: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    monkeypatch.setattr(lockouts, "ACCOUNT_ADDRESSES", 2)  # 6 failures from anywhere
    UserFactory(username="victim", password="right-password-1")
    client = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(2):
        assert _login(client, "victim", "wrong").status_code == 200  # the form again
    locked = _login(client, "victim", "wrong")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    # from this address even the right password is refused (and is no failure: 3 stay 3)
    assert _login(client, "victim", "right-password-1").status_code == 429
    # from another address the account still logs in, until it has failed 6 times in all
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert _login(other, "victim", "right-password-1").status_code == 302
    third = Client(REMOTE_ADDR="10.0.0.3")
    assert [_login(third, "victim", "wrong").status_code for _ in range(3)] == [200, 200, 429]
    fourth = Client(REMOTE_ADDR="10.0.0.4")
    assert _login(fourth, "victim", "right-password-1").status_code == 429  # from anywhere
    from axes.models import AccessAttempt

    assert AccessAttempt.objects.filter(username="victim").exists()  # seen in the admin


def test_logging_into_ones_own_account_does_not_reset_anothers_failures(
    db: None, settings: Any
) -> None:
    """4 guesses, then one's own login, again and again: the guessed account is locked at
    the limit all the same (a success clears only its own account's failures there)."""
    settings.AXES_FAILURE_LIMIT = 5
    UserFactory(username="victim", password="right-password-1")
    UserFactory(username="attacker", password="attacker-pass-1")
    client = Client(REMOTE_ADDR="10.0.2.1")
    statuses = []
    for _ in range(3):
        statuses += [_login(client, "victim", "guess").status_code for _ in range(4)]
        assert (
            _login(Client(REMOTE_ADDR="10.0.2.1"), "attacker", "attacker-pass-1").status_code == 302
        )
    assert statuses[:4] == [200] * 4 and statuses[4] == 429 and set(statuses[5:]) == {429}


def test_made_up_usernames_lock_out_nobody_else_at_that_address(db: None, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="colleague", password="right-password-1")
    client = Client(REMOTE_ADDR="10.0.3.1")
    for name in ("nobody-1", "nobody-2", "nobody-3", "nobody-4"):
        for _ in range(4):
            _login(client, name, "wrong")
    assert _login(client, "nobody-1", "wrong").status_code == 429  # that name is locked
    same_address = Client(REMOTE_ADDR="10.0.3.1")
    assert _login(same_address, "colleague", "right-password-1").status_code == 302
    assert (
        _token(Client(REMOTE_ADDR="10.0.3.1"), "colleague", "right-password-1").status_code == 200
    )


def test_a_forwarded_request_with_no_proxy_count_is_warned_about_once(
    db: None, settings: Any, caplog: Any
) -> None:
    from annotations.lockouts import ProxyCountWarningMiddleware

    settings.AXES_IPWARE_PROXY_COUNT = 0
    ProxyCountWarningMiddleware.warned = False
    with caplog.at_level("WARNING", logger="annotations.security"):
        Client().get("/accounts/login/")
        assert not caplog.records
        for _ in range(2):
            Client().get("/accounts/login/", HTTP_X_FORWARDED_FOR="203.0.113.9")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "NDCG_PROXY_COUNT is 0" in warnings[0]


def test_a_right_password_before_the_limit_logs_in_and_resets_the_count(
    db: None, settings: Any
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="typo", password="right-password-1")
    client = Client(REMOTE_ADDR="10.0.0.3")
    _login(client, "typo", "wrong")
    assert _login(client, "typo", "right-password-1").status_code == 302


def test_pages_carry_a_content_security_policy_without_inline_allowances(db: None) -> None:
    policy = Client().get("/accounts/login/")["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy


def _production_env(**extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_ENV": "production",
        "DJANGO_SECRET_KEY": "x" * 20 + "-production-check-key-0123456789-abcdefghij",
        "DJANGO_ALLOWED_HOSTS": "judge.example.org",
        **extra,
    }
    env.pop("DJANGO_DEBUG", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser tests for themselves
    return env


def test_the_readme_production_settings_pass_check_deploy_with_no_warning() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_serves_the_api_as_json_only_unless_asked() -> None:
    code = (
        "from django.conf import settings;"
        "print(settings.REST_FRAMEWORK['DEFAULT_RENDERER_CLASSES'], settings.CONN_HEALTH);"
    ).replace("settings.CONN_HEALTH", "settings.DATABASES['default']['CONN_HEALTH_CHECKS']")
    for extra, browsable in (({}, False), ({"NDCG_BROWSABLE_API": "true"}, True)):
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=_production_env(**extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert ("BrowsableAPIRenderer" in result.stdout) is browsable
        assert result.stdout.strip().endswith("True")  # CONN_HEALTH_CHECKS


def _token(client: Client, username: str, password: str) -> Any:
    return client.post(
        "/api/v1/token/",
        {"username": username, "password": password},
        content_type="application/json",
    )


def test_the_token_endpoint_gives_the_callers_token_and_it_authenticates(db: None) -> None:
    UserFactory(username="scripter", password="right-password-1")
    first = _token(Client(), "scripter", "right-password-1")
    assert first.status_code == 200, first.content
    key = first.json()["token"]
    assert _token(Client(), "scripter", "right-password-1").json()["token"] == key  # the same
    listed = Client().get("/api/v1/collections/", HTTP_AUTHORIZATION=f"Token {key}")
    assert listed.status_code == 200
    revoked = Client().delete("/api/v1/token/", HTTP_AUTHORIZATION=f"Token {key}")
    assert revoked.status_code == 204
    again = Client().get("/api/v1/collections/", HTTP_AUTHORIZATION=f"Token {key}")
    assert again.status_code == 401


def test_wrong_passwords_at_the_token_endpoint_lock_out_like_the_login_page(
    db: None, settings: Any
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="target", password="right-password-1")
    client = Client(REMOTE_ADDR="10.0.1.1")
    for _ in range(2):
        wrong = _token(client, "target", "wrong")
        assert wrong.status_code == 401
        assert wrong.json()["error"]["code"] == "authentication_failed"
    locked = _token(client, "target", "wrong")
    assert locked.status_code == 429
    body = locked.json()["error"]
    assert body["status"] == 429 and body["code"] == "locked_out"
    assert "Too many failed logins" in body["detail"] and int(locked["Retry-After"]) > 0
    # the right password from this address: refused while the pair is locked
    refused = _token(Client(REMOTE_ADDR="10.0.1.1"), "target", "right-password-1")
    assert refused.status_code == 429
    # and the login page counts the same attempts
    assert _login(Client(REMOTE_ADDR="10.0.1.1"), "target", "right-password-1").status_code == 429


def test_a_token_request_without_credentials_is_a_400_naming_the_fields(db: None) -> None:
    response = Client().post("/api/v1/token/", {}, content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"username", "password"}


def test_the_api_schema_and_docs_are_for_logged_in_users_in_production_unless_opened() -> None:
    code = (
        "from django.conf import settings;print(settings.SPECTACULAR_SETTINGS['SERVE_PERMISSIONS'])"
    )
    seen = {}
    for extra in ({}, {"NDCG_PUBLIC_API_SCHEMA": "true"}):
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=_production_env(**extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        seen[bool(extra)] = result.stdout.strip().splitlines()[-1]
    assert seen == {
        False: "['rest_framework.permissions.IsAuthenticated']",
        True: "['rest_framework.permissions.AllowAny']",
    }


def test_an_anonymous_caller_reads_no_schema_when_it_is_closed(db: None, monkeypatch: Any) -> None:
    from drf_spectacular.settings import spectacular_settings
    from rest_framework.permissions import IsAuthenticated

    monkeypatch.setattr(spectacular_settings, "SERVE_PERMISSIONS", [IsAuthenticated])
    for path in ("/api/schema/?format=json", "/api/docs/"):
        closed = Client().get(path)
        assert closed.status_code in (401, 403), path
        assert closed.json()["error"]["status"] == closed.status_code
    client = Client()
    client.force_login(UserFactory(username="reader"))
    assert client.get("/api/schema/?format=json").status_code == 200
    assert client.get("/api/docs/").status_code == 200


# --- lockouts an attacker cannot turn against the victim -------------------------------------


def _admin_login(client: Client, username: str, password: str) -> Any:
    return client.post(
        "/admin/login/", {"username": username, "password": password, "next": "/admin/"}
    )


def _failures_recorded(username: str) -> tuple[int, list[Any]]:
    """The failures stored for `username` in all, and each stored row's last failure time."""
    from axes.models import AccessAttempt
    from django.db.models import Sum

    attempts = AccessAttempt.objects.filter(username=username)
    total = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
    return total, sorted(attempts.values_list("attempt_time", flat=True))


def _every_door(username: str, password: str, address: str) -> list[int]:
    """The login page, the admin's login and the token endpoint, each from `address`."""
    return [
        door(Client(REMOTE_ADDR=address), username, password).status_code
        for door in (_login, _admin_login, _token)
    ]


def test_one_address_cannot_lock_an_account_out_of_other_addresses(db: None, settings: Any) -> None:
    """The audit's attack: from one address 5 failures, then 50 more attempts on every
    login door (wrong and right passwords, several user agents). That pair is locked; the
    refusals are no failures, so the victim still logs in from another address."""
    settings.AXES_FAILURE_LIMIT = 5  # 20 for the account from anywhere (4 addresses)
    UserFactory(username="organiser", password="right-password-1", is_staff=True)
    attacker = "198.51.100.7"
    for _ in range(4):
        assert _login(Client(REMOTE_ADDR=attacker), "organiser", "guess").status_code == 200
    assert _token(Client(REMOTE_ADDR=attacker), "organiser", "guess").status_code == 429
    locked_at = _failures_recorded("organiser")
    assert locked_at[0] == 5
    doors = (_login, _admin_login, _token)
    for attempt in range(50):
        client = Client(REMOTE_ADDR=attacker, HTTP_USER_AGENT=f"agent-{attempt % 7}")
        password = "right-password-1" if attempt % 5 == 0 else "guess"
        assert doors[attempt % 3](client, "organiser", password).status_code == 429
    # no refusal was stored: neither a failure more nor a later cool-off start
    assert _failures_recorded("organiser") == locked_at
    assert _every_door("organiser", "right-password-1", "203.0.113.20")[:2] == [302, 302]
    token = _token(Client(REMOTE_ADDR="203.0.113.21"), "organiser", "right-password-1")
    assert token.status_code == 200 and token.json()["token"]
    # and the attacker's pair stays locked for its cool-off
    assert _every_door("organiser", "right-password-1", attacker) == [429, 429, 429]


def test_failures_from_four_addresses_lock_the_account_from_everywhere(
    db: None, settings: Any
) -> None:
    """20 failures for the account, at most 5 from each address: four addresses."""
    settings.AXES_FAILURE_LIMIT = 5  # 20 for the account from anywhere (4 addresses)
    UserFactory(username="organiser", password="right-password-1", is_staff=True)
    for address in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
        statuses = [_login(Client(REMOTE_ADDR=address), "organiser", "guess").status_code]
        statuses += [_token(Client(REMOTE_ADDR=address), "organiser", "guess").status_code]
        statuses += [
            _login(Client(REMOTE_ADDR=address), "organiser", "guess").status_code for _ in range(8)
        ]
        assert statuses[:4] == [200, 401, 200, 200] and set(statuses[4:]) == {429}
    assert _failures_recorded("organiser")[0] == 15
    # three addresses: the account still logs in from a fourth (which keeps no failure)
    assert _every_door("organiser", "right-password-1", "192.0.2.9") == [302, 302, 200]
    fourth = Client(REMOTE_ADDR="192.0.2.4")
    assert [_login(fourth, "organiser", "guess").status_code for _ in range(5)] == [200] * 4 + [429]
    assert _every_door("organiser", "right-password-1", "192.0.2.10") == [429, 429, 429]
    assert _every_door("organiser", "right-password-1", "192.0.2.9") == [429, 429, 429]
    assert _failures_recorded("organiser")[0] == 20


def test_failures_recorded_past_the_lock_by_racing_requests_count_once_per_address(
    db: None, settings: Any
) -> None:
    """Requests sent together may all pass the check before the first failure is stored:
    however many one address has stored, it counts the pair's limit towards the account."""
    from axes.models import AccessAttempt
    from django.utils import timezone

    settings.AXES_FAILURE_LIMIT = 5  # 20 for the account from anywhere (4 addresses)
    UserFactory(username="organiser", password="right-password-1", is_staff=True)
    for agent in ("one", "two"):
        AccessAttempt.objects.create(
            username="organiser",
            ip_address="198.51.100.8",
            user_agent=agent,
            failures_since_start=40,
            attempt_time=timezone.now(),
        )
    assert _every_door("organiser", "right-password-1", "203.0.113.30") == [302, 302, 200]
    assert _every_door("organiser", "right-password-1", "198.51.100.8") == [429, 429, 429]


def _answers(key: str) -> int:
    return Client().get("/api/v1/collections/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def _token_of(username: str, password: str) -> str:
    response = _token(Client(), username, password)
    assert response.status_code == 200, response.content
    key = str(response.json()["token"])
    assert _answers(key) == 200
    return key


def test_changing_ones_password_on_the_password_page_ends_ones_api_token(db: None) -> None:
    UserFactory(username="scripter", password="old-password-1")
    key = _token_of("scripter", "old-password-1")
    browser = Client()
    assert _login(browser, "scripter", "old-password-1").status_code == 302
    changed = browser.post(
        "/accounts/password/",
        {
            "old_password": "old-password-1",
            "new_password1": "new-password-2",
            "new_password2": "new-password-2",
        },
    )
    assert changed.status_code == 302, changed.content
    assert _answers(key) == 401
    assert browser.get("/accounts/password/").status_code == 200  # this session stays
    fresh = _token_of("scripter", "new-password-2")  # a new token, for the new password
    assert fresh != key


def test_a_password_set_through_a_set_password_link_ends_the_api_token(db: None) -> None:
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    user = UserFactory(username="linked", password="old-password-1")
    key = _token_of("linked", "old-password-1")
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    browser = Client()
    form = browser.get(
        f"/accounts/reset/{uid}/{default_token_generator.make_token(user)}/", follow=True
    )
    assert form.status_code == 200
    done = browser.post(
        form.redirect_chain[-1][0],
        {"new_password1": "new-password-2", "new_password2": "new-password-2"},
    )
    assert done.status_code == 302, done.content
    assert _answers(key) == 401


def test_a_password_set_or_disabled_in_the_admin_ends_the_accounts_api_token(db: None) -> None:
    UserFactory(username="root", password="root-password-1", is_staff=True, is_superuser=True)
    user = UserFactory(username="scripter", password="old-password-1")
    staff = Client()
    assert _admin_login(staff, "root", "root-password-1").status_code == 302
    key = _token_of("scripter", "old-password-1")
    page = f"/admin/auth/user/{user.pk}/password/"
    set_ = staff.post(page, {"usable_password": "true", "password1": "new-password-2",
                             "password2": "new-password-2"})  # fmt: skip
    assert set_.status_code == 302, set_.content
    assert _answers(key) == 401
    key = _token_of("scripter", "new-password-2")
    disabled = staff.post(page, {"usable_password": "false", "unset-password": "1"})
    assert disabled.status_code == 302, disabled.content
    assert _answers(key) == 401


def test_set_password_and_the_changepassword_command_end_the_api_token(
    db: None, monkeypatch: Any
) -> None:
    import getpass

    from django.core.management import call_command

    user = UserFactory(username="scripter", password="old-password-1")
    key = _token_of("scripter", "old-password-1")
    user.set_password("new-password-2")
    user.save()
    assert _answers(key) == 401
    key = _token_of("scripter", "new-password-2")
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "third-password-3")
    call_command("changepassword", "scripter", stdout=io.StringIO())
    assert _answers(key) == 401
    _token_of("scripter", "third-password-3")


def test_saving_an_account_or_upgrading_its_password_hash_keeps_its_api_token(
    db: None, settings: Any
) -> None:
    """Only a new password ends the token: not a save of other fields, a login, nor the
    rehash Django does at login when the hasher changed (the password is the same)."""
    from django.contrib.auth import get_user_model

    user = UserFactory(username="scripter", password="old-password-1")
    key = _token_of("scripter", "old-password-1")
    user.first_name = "Ada"
    user.save()
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.ScryptPasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    assert _login(Client(), "scripter", "old-password-1").status_code == 302
    assert get_user_model().objects.get(pk=user.pk).password.startswith("scrypt$")  # rehashed
    assert _answers(key) == 200
