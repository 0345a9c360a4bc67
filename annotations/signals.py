"""Safety net: a judgement saved outside the services still gets a history row and rescoring.

Deletions go through `judgement_delete` (the admin and API use it); a post_delete receiver is
deliberately absent: it would turn every cascade (a collection or query deleted) into one
query per judgement and write history for rows that are about to disappear.
"""

from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from rest_framework.authtoken.models import Token

from annotations.models import ImportJob, Judgement, JudgementHistory, Query
from annotations.scores import scores_schedule
from annotations.services.upload_store import upload_delete


def _by_service(instance: Judgement) -> bool:
    return bool(getattr(instance, "_recorded_by_service", False))


@receiver(pre_save, sender=Judgement)
def judgement_remember_old_grade(sender: type, instance: Judgement, **kwargs: Any) -> None:
    if _by_service(instance) or instance.pk is None:
        return
    instance._old_grade = (  # type: ignore[attr-defined]
        Judgement.objects.filter(pk=instance.pk).values_list("grade", flat=True).first()
    )


@receiver(post_save, sender=Judgement)
def judgement_saved(sender: type, instance: Judgement, created: bool, **kwargs: Any) -> None:
    if _by_service(instance):
        instance._recorded_by_service = False  # type: ignore[attr-defined]
        return
    old = None if created else getattr(instance, "_old_grade", None)
    if old == instance.grade:
        return
    _record(instance, old, instance.grade)


def _record(instance: Judgement, old: int | None, new: int | None) -> None:
    JudgementHistory.objects.create(
        query_id=instance.query_id,
        document_id=instance.document_id,
        assessor_id=instance.assessor_id,
        old_grade=old,
        new_grade=new,
        note=instance.note,
        source="other",
    )
    Query.objects.filter(id=instance.query_id).update(
        judgements_version=F("judgements_version") + 1
    )
    scores_schedule(query_ids=[instance.query_id])


@receiver(post_delete, sender=ImportJob, dispatch_uid="import-job-upload-delete")
def import_job_upload_delete(sender: type, instance: ImportJob, **kwargs: Any) -> None:
    """A job deleted (in the admin, or with its collection) takes its kept upload along."""
    if instance.upload_path:
        name = instance.upload_path
        transaction.on_commit(lambda: upload_delete(name))


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="user-password-replaced")
def user_password_replaced(sender: type, instance: AbstractBaseUser, **kwargs: Any) -> None:
    """Notes whether this save replaces the password: set (the password page, the
    set-password link, the admin, `changepassword`: all call set_password) or disabled."""
    if instance.pk is None:
        return
    # Django's own mark of a password set since the last save; it clears it for the hash
    # upgrade at login, which is no change of password.
    replaced = getattr(instance, "_password", None) is not None
    if not replaced and not instance.has_usable_password():
        stored = (
            type(instance)
            ._default_manager.filter(pk=instance.pk)
            .values_list("password", flat=True)
            .first()
        )
        replaced = stored is not None and stored != instance.password
    instance._password_replaced = replaced  # type: ignore[attr-defined]


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="user-tokens-revoke")
def user_tokens_revoke(sender: type, instance: AbstractBaseUser, **kwargs: Any) -> None:
    """A replaced password ends the account's API tokens, as it ends its other sessions: a
    token taken with a leaked password stops answering once the password is changed."""
    if getattr(instance, "_password_replaced", False):
        instance._password_replaced = False  # type: ignore[attr-defined]
        Token.objects.filter(user_id=instance.pk).delete()
