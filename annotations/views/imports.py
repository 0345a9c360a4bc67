"""The import page of a collection (organisers): uploads (and standard collections named by
their ir_datasets id) become import jobs, with progress."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import TooManyFilesSent, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from annotations.formats import ir_records
from annotations.forms.imports import FORMS, DatasetForm, UploadForm
from annotations.models import Collection, ImportJob
from annotations.selectors.jobs import (
    JobsPage,
    batch_summary,
    import_job_state,
    import_jobs_page,
)
from annotations.services.job_queue import import_jobs_start
from annotations.services.job_recovery import (
    import_job_dismiss,
    import_job_retry,
)
from annotations.services.jobs import import_job_create
from annotations.services.standard_collections import ir_dataset_job_start
from annotations.views._collection import acting_user, organised_collection

# The session remembers the jobs of the organiser's last upload for its summary line.
_BATCH = "import-batch"


def _page_number(request: HttpRequest) -> int:
    raw = request.GET.get("page", "1")
    return int(raw) if raw.isdigit() and len(raw) < 7 else 1


def _batch(request: HttpRequest, collection: Collection) -> dict[str, object] | None:
    """The summary line of the organiser's last upload into this collection, if any."""
    remembered = request.session.get(_BATCH)
    if not isinstance(remembered, dict) or remembered.get("collection") != collection.id:
        return None
    ids = [job_id for job_id in remembered.get("jobs", []) if isinstance(job_id, int)]
    jobs = list(ImportJob.objects.filter(collection=collection, id__in=ids).only("state"))
    if len(jobs) < 2:
        return None
    return {
        "files": len(jobs),
        "summary": batch_summary(jobs),
        "active": sum(job.active for job in jobs),
    }


def _page(
    request: HttpRequest,
    collection: Collection,
    bound: UploadForm | DatasetForm | None = None,
    *,
    status: int = 200,
    refused: str = "",
) -> HttpResponse:
    forms = {kind: form_class(collection=collection) for kind, form_class in FORMS.items()}
    dataset_form = DatasetForm(collection=collection)
    if isinstance(bound, DatasetForm):
        dataset_form = bound
    elif bound is not None:
        forms[bound.kind] = bound
    listed: JobsPage = import_jobs_page(collection=collection, page=_page_number(request))
    opened = bound.kind if bound is not None else request.GET.get("kind", ImportJob.RUN)
    context = {
        "collection": collection,
        "forms": forms,
        "dataset_form": dataset_form,
        # Asked without importing it; the form is offered only where a job could read one.
        "ir_datasets_installed": ir_records.installed(),
        "ir_datasets_install": ir_records.INSTALL,
        "opened": opened if opened in FORMS or opened == ImportJob.DATASET else ImportJob.RUN,
        "listed": listed,
        "waiting": [job for job in listed.jobs if job.active or job.retryable],
        "finished": [job for job in listed.jobs if not (job.active or job.retryable)],
        "batch": _batch(request, collection),
        "refused": refused,
        "max_file_mb": settings.NDCG_MAX_UPLOAD_MB,
        "max_upload_mb": settings.NDCG_IMPORT_MAX_MB,
    }
    return render(request, "annotations/imports/page.html", context, status=status)


@login_required
@require_GET
def imports(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, organised_collection(request, slug))


@csrf_exempt  # checked below, once the upload's size is known to be acceptable
@login_required
@require_POST
def import_upload(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    """Refuse an oversized upload before its body is read, then take it (CSRF checked)."""
    collection = organised_collection(request, slug)
    if kind not in FORMS:
        raise Http404("No such kind of import")
    length = request.META.get("CONTENT_LENGTH") or "0"
    limit = settings.NDCG_IMPORT_MAX_MB
    if length.isdigit() and int(length) > limit * 1024 * 1024:
        refused = (
            f"The upload is {int(length) / (1024 * 1024):.0f} MB, more than the {limit} MB one "
            "upload may hold (NDCG_IMPORT_MAX_MB); nothing was imported. Upload the files in "
            "several parts."
        )
        return _page(request, collection, status=413, refused=refused)
    try:
        request.FILES  # noqa: B018  (parsed here, so too many files get the page's message)
    except TooManyFilesSent:
        refused = (
            f"The upload holds more than the {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files one "
            "upload may hold (NDCG_IMPORT_MAX_FILES); nothing was imported. Upload the files "
            "in several parts."
        )
        return _page(request, collection, status=400, refused=refused)
    return _import_upload(request, collection, kind)


@csrf_protect
def _import_upload(request: HttpRequest, collection: Collection, kind: str) -> HttpResponse:
    form = FORMS[kind](request.POST, request.FILES, collection=collection)
    if not form.is_valid():
        return _page(request, collection, form, status=400)
    jobs = [
        import_job_create(
            collection=collection,
            kind=kind,
            upload=upload,
            created_by=acting_user(request),
            assessor=form.cleaned_data.get("assessor"),
            replace=bool(form.cleaned_data.get("replace")),
            split_tags=bool(form.cleaned_data.get("split_tags")),
        )
        for upload in form.uploads
    ]
    import_jobs_start(jobs=jobs)
    request.session[_BATCH] = {"collection": collection.id, "jobs": [job.id for job in jobs]}
    _report_all(request, list(ImportJob.objects.filter(id__in=[j.id for j in jobs]).order_by("id")))
    return redirect(f"{reverse('collection-imports', args=[collection.slug])}?kind={kind}")


@login_required
@require_POST
def import_dataset(request: HttpRequest, slug: str) -> HttpResponse:
    """A standard collection by its ir_datasets id, as an import job (the dataset and its
    parts checked first, as import_ir_datasets checks them)."""
    collection = organised_collection(request, slug)
    form = DatasetForm(request.POST, collection=collection)
    if form.is_valid():
        data = form.cleaned_data
        try:
            job = ir_dataset_job_start(
                collection=collection,
                dataset_id=data["dataset"],
                parts=data["parts"],
                assessor=data["assessor"],
                run_name=data["run_name"],
                created_by=acting_user(request),
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            job.refresh_from_db()
            _report(request, job)
            target = reverse("collection-imports", args=[collection.slug])
            return redirect(f"{target}?kind={ImportJob.DATASET}")
    return _page(request, collection, form, status=400)


# A multi-file upload names at most this many of its failures in the notices (the job table
# lists them all).
_FAILURES_NAMED = 5


def _report_all(request: HttpRequest, jobs: list[ImportJob]) -> None:
    """One notice for a single file; for several, one summary line ("12 of 30 imported, 1
    failed, 17 queued") and the first failures' messages."""
    if len(jobs) == 1:
        _report(request, jobs[0])
        return
    done = sum(job.state == ImportJob.DONE for job in jobs)
    failed = [job for job in jobs if job.state == ImportJob.FAILED]
    waiting = len(jobs) - done - len(failed)
    parts = [f"{done} of {len(jobs)} files imported"]
    if failed:
        parts.append(f"{len(failed)} failed")
    if waiting:
        parts.append(f"{waiting} queued for import (progress below)")
    summary = ", ".join(parts) + "."
    (messages.error if failed else messages.success)(request, summary)
    for job in failed[:_FAILURES_NAMED]:
        messages.error(request, job.error)
    if len(failed) > _FAILURES_NAMED:
        messages.error(request, f"... and {len(failed) - _FAILURES_NAMED} more failed: see below.")


def _report(request: HttpRequest, job: ImportJob) -> None:
    if job.state == ImportJob.DONE:
        messages.success(request, f"{job.file_name}: imported ({job.summary}).")
    elif job.state == ImportJob.FAILED:
        messages.error(request, job.error)
    else:
        messages.info(request, f"{job.file_name}: queued for import.")


@login_required
@require_POST
def import_job_retry_view(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """Retry: queue a failed job again with its kept upload and options."""
    collection = organised_collection(request, slug)
    job = get_object_or_404(ImportJob, id=job_id, collection=collection)
    try:
        _report(request, import_job_retry(job=job, by=acting_user(request)))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    return redirect("collection-imports", slug=collection.slug)


@login_required
@require_POST
def import_job_dismiss_view(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """Dismiss: delete a failed job's kept upload; the job stays listed, dismissed."""
    collection = organised_collection(request, slug)
    job = get_object_or_404(ImportJob, id=job_id, collection=collection)
    try:
        import_job_dismiss(job=job)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        upload = "; its upload is deleted" if job.kind != ImportJob.DATASET else ""
        messages.info(request, f"{job.file_name}: dismissed{upload}.")
    return redirect("collection-imports", slug=collection.slug)


@login_required
@require_GET
def import_jobs_state(request: HttpRequest, slug: str) -> JsonResponse:
    """The jobs of one page of the table, and the last upload's summary line, for the page's
    self-refresh."""
    collection = organised_collection(request, slug)
    listed = import_jobs_page(collection=collection, page=_page_number(request))
    return JsonResponse(
        {
            "jobs": [import_job_state(job) for job in listed.jobs],
            "active": listed.active,
            "batch": _batch(request, collection),
        }
    )
