"""The assessor's grading page: one pair, its plain form POST, and the same in the background.

Without JavaScript the page is a form that saves and redirects to the next pair. The page's
script asks the same URLs for JSON (``Accept: application/json``): a POST answers whether
the grade was committed, a GET the pair as an HTML fragment, and ``.../next/`` the pairs
that follow, which it holds ready to show. Every answer is built from the same template
and services as the page, so the blinding is the page's (no systems, no scores).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ValidationError as DRFValidationError

from annotations import idempotency, services
from annotations.formats.highlighting import highlight, query_terms
from annotations.forms import GradeForm
from annotations.models import Assignment, AssignmentItem, IdempotentResponse
from annotations.selectors import judging as selectors
from annotations.services.grading import assignment_grade_undo
from annotations.views._collection import acting_user

# At most this many pairs are answered by one ``next/`` request: the page holds as many as
# cover a fetch's round trip at the assessor's pace, up to this (grading_prefetch.js).
MAX_PREFETCH = 8
# A long document is shown in blocks of this many lines, each laid out only when scrolled
# near (CSS content-visibility): a pair of 100,000 characters appears as fast as a short one.
BLOCK_LINES = 40


def text_blocks(html: str) -> str:
    """The highlighted text cut into blocks of BLOCK_LINES lines (a block boundary stands
    for the newline it replaces; highlight() never marks across a newline)."""
    lines = html.split("\n")
    if len(lines) <= BLOCK_LINES:
        return html
    return "".join(
        '<span class="text-block">' + "\n".join(lines[start : start + BLOCK_LINES]) + "</span>"
        for start in range(0, len(lines), BLOCK_LINES)
    )


def own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    """The user's own assignment; another assessor's is 404, as if it did not exist."""
    assignment = selectors.assignment_of(user=request.user, assignment_id=assignment_id)
    if assignment is None:
        raise Http404("No such assignment")
    return assignment


def wants_json(request: HttpRequest) -> bool:
    """The page's script asks for JSON; a browser's plain navigation never does."""
    return "application/json" in request.headers.get("Accept", "")


def _link_target(url: str) -> str:
    """The document's url if it is safe to link (http or https), else "" (shown as text)."""
    return url if url.lower().startswith(("http://", "https://")) else ""


def _pair_url(assignment: Assignment, position: int) -> str:
    return reverse("judging-grade", kwargs={"assignment_id": assignment.id, "position": position})


def _pair_context(
    assignment: Assignment, item: AssignmentItem, form: GradeForm | None = None
) -> dict[str, Any]:
    collection = assignment.pool.collection
    levels = list(collection.grades.all())
    query, document = item.entry.query, item.entry.document
    terms = query_terms(query.title or query.description)
    previous, following = selectors.neighbour_positions(
        assignment=assignment, position=item.position
    )
    judgement = selectors.judgement_of(item=item)
    return {
        "assignment": assignment,
        "collection": collection,
        "item": item,
        "query": query,
        "document": document,
        # highlight() escapes every character of the untrusted text before adding <mark>.
        "document_title": mark_safe(highlight(document.title, terms)),
        "document_text": mark_safe(text_blocks(highlight(document.text, terms))),
        "document_url": _link_target(document.url),
        "levels": levels,
        "judgement": judgement,
        "note": judgement.note if judgement else item.note,
        "progress": selectors.assignment_progress(assignment=assignment),
        "previous": previous,
        "following": following,
        "form": form or GradeForm(levels=[level.value for level in levels]),
        # One key per pair shown: a retried save of this pair is applied once.
        "idempotency_key": uuid.uuid4().hex,
        "assignment_url": reverse("judging-assignment", kwargs={"assignment_id": assignment.id}),
    }


def _pair_payload(request: HttpRequest, assignment: Assignment, item: AssignmentItem) -> dict:
    """One pair as the page's script swaps it in: its URL, title and HTML fragment."""
    context = _pair_context(assignment, item)
    html = render_to_string("annotations/judging/_pair.html", context, request=request)
    return {
        "item": item.id,
        "position": item.position,
        "url": _pair_url(assignment, item.position),
        "next": reverse(
            "judging-pairs-next",
            kwargs={"assignment_id": assignment.id, "position": item.position},
        ),
        "title": f"{item.entry.query.qid} / {item.entry.document.docno} · Judging",
        "html": html,
    }


def _error_text(error: ValidationError) -> str:
    return " ".join(error.messages)


# --- the views --------------------------------------------------------------------------


@login_required
def assignment_continue(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    position = selectors.next_pending_position(assignment=assignment)
    if position is None:
        messages.success(request, "Every pair of this assignment is done.")
        return redirect("judging-assignment", assignment_id=assignment.id)
    return redirect("judging-grade", assignment_id=assignment.id, position=position)


@login_required
@require_POST
def assignment_undo(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Take back the assessor's last grade in this assignment (key u) and open that pair."""
    assignment = own_assignment(request, assignment_id)
    item = assignment_grade_undo(assignment=assignment, assessor=acting_user(request))
    if item is None:
        messages.info(request, "Nothing to undo: no grade of yours on this assignment stands.")
        back = request.POST.get("position", "")
        if back.isdigit() and selectors.item_at(assignment=assignment, position=int(back)):
            return redirect("judging-grade", assignment_id=assignment.id, position=int(back))
        return redirect("judging-assignment", assignment_id=assignment.id)
    entry = item.entry
    messages.success(
        request, f"Took back your last grade ({entry.query.qid}, {entry.document.docno})."
    )
    return redirect("judging-grade", assignment_id=assignment.id, position=item.position)


@login_required
@require_GET
def pairs_next(request: HttpRequest, assignment_id: int, position: int) -> JsonResponse:
    """The pending pairs after `position` (wrapping round), for the page to hold ready:
    ``?count=`` of them (at most MAX_PREFETCH), leaving out the items in ``?exclude=``
    (comma-separated ids: the pairs whose grades are still on their way)."""
    assignment = own_assignment(request, assignment_id)
    if position > 2**31 - 1:
        raise Http404("No such pair in this assignment")
    raw_count = request.GET.get("count", "1")
    count = min(int(raw_count), MAX_PREFETCH) if raw_count.isdigit() and len(raw_count) < 4 else 1
    exclude = {
        int(part)
        for part in request.GET.get("exclude", "").split(",")[:1000]
        if part.isdigit() and len(part) < 19
    }
    items = selectors.pending_items_after(
        assignment=assignment, after=position, exclude=exclude, limit=max(count, 1)
    )
    return JsonResponse(
        {
            "pairs": [_pair_payload(request, assignment, item) for item in items],
            "done_url": reverse("judging-assignment", kwargs={"assignment_id": assignment.id}),
        }
    )


@login_required
def grade(request: HttpRequest, assignment_id: int, position: int) -> HttpResponse:
    """The grading page (GET) and its form POST: plain, it saves and then redirects; asked
    for JSON, it answers whether the grade was committed (200) or why not (400).

    Each pair shown carries its own idempotency key: a POST sent twice (a retry after a cut
    connection, a double submit) saves once and answers the first answer again. Another
    grade sent for the same pair is a new choice and is saved."""
    try:
        key = idempotency.requested_key(request)
    except DRFValidationError:
        if wants_json(request):
            return JsonResponse({"error": "The form's idempotency key is malformed."}, status=400)
        return HttpResponseBadRequest("The form's idempotency key is malformed.")
    if key is None:
        return _grade(request, assignment_id, position)
    with transaction.atomic():
        try:
            record: IdempotentResponse | None = idempotency.claim(request, key)
        except idempotency.Replay as replay:
            return replay.response
        except idempotency.KeyReused:
            record = None
        response = _grade(request, assignment_id, position)
        if record is not None and 200 <= response.status_code < 400:
            idempotency.store(record, response)
        elif record is not None:
            transaction.set_rollback(True)
    return response


def _shown_item(request: HttpRequest) -> int | None:
    """The item id the form carries (the pair the page showed), if it can name one."""
    raw = request.POST.get("item", "")
    return int(raw) if raw.isdigit() and len(raw) < 19 else None


def _grade(request: HttpRequest, assignment_id: int, position: int) -> HttpResponse:
    as_json = wants_json(request)
    if request.method != "POST":
        assignment = own_assignment(request, assignment_id)
        shown = selectors.item_at(assignment=assignment, position=position)
        if shown is None:
            if as_json:
                return JsonResponse({"error": "No such pair in this assignment."}, status=404)
            raise Http404("No such pair in this assignment")
        if as_json:
            return JsonResponse({"pair": _pair_payload(request, assignment, shown)})
        return render(request, "annotations/judging/grade.html", _pair_context(assignment, shown))
    # The pair the page showed (positions may be re-prioritised since), else the one at this
    # position; with its assignment, read in one statement and only if it is the user's.
    item = selectors.item_to_grade(
        user=request.user,
        assignment_id=assignment_id,
        position=position,
        item_id=_shown_item(request),
    )
    if item is None:
        if as_json:
            return JsonResponse({"error": "No such pair in this assignment."}, status=404)
        raise Http404("No such pair in this assignment")
    assignment, position = item.assignment, item.position
    collection = assignment.pool.collection
    levels = services.grade_values(collection)
    # The write below checks the grade against these and reads the pair's collection from
    # this instance (no second read of either).
    setattr(collection, services.GRADES_READ, levels)
    item.entry.query.collection = item.entry.document.collection = collection
    form = GradeForm(request.POST, levels=levels)
    error: str | None = None
    if form.is_valid():
        try:
            withdrawn = _grade_or_skip(request, item, form.cleaned_data)
        except ValidationError as invalid:
            error = _error_text(invalid)
            form.add_error(None, error)
        else:
            if as_json:
                return _saved(assignment, item, form.cleaned_data, withdrawn)
            if withdrawn:
                messages.info(request, "Marked unsure: your earlier grade was withdrawn.")
            following = selectors.next_pending_position(assignment=assignment, after=position)
            if following is None:
                messages.success(request, "Assignment complete: every pair is done.")
                return redirect("judging-assignment", assignment_id=assignment.id)
            return redirect("judging-grade", assignment_id=assignment.id, position=following)
    if as_json:
        errors = {field: [str(text) for text in found] for field, found in form.errors.items()}
        text = error or " ".join(message for found in errors.values() for message in found)
        return JsonResponse({"error": text, "errors": errors}, status=400)
    return render(
        request, "annotations/judging/grade.html", _pair_context(assignment, item, form=form)
    )


def _saved(
    assignment: Assignment, item: AssignmentItem, data: dict[str, Any], withdrawn: bool
) -> JsonResponse:
    """The committed answer of a background save (stored with its idempotency key)."""
    skipped = data["action"] == "skip"
    entry = item.entry
    progress = selectors.assignment_progress(assignment=assignment)
    return JsonResponse(
        {
            "saved": True,
            "item": item.id,
            "position": item.position,
            "pair": f"{entry.query.qid} / {entry.document.docno}",
            "action": "skip" if skipped else "grade",
            "grade": None if skipped else data["grade"],
            "withdrawn": withdrawn,
            "progress": render_to_string(
                "annotations/judging/_progress.html", {"progress": progress}
            ),
            "left": progress.left,
        }
    )


def _grade_or_skip(request: HttpRequest, item: AssignmentItem, data: dict[str, Any]) -> bool:
    """Save the grade or the skip; True when a skip withdrew an earlier grade."""
    user = acting_user(request)
    if data["action"] == "skip":
        return services.assignment_item_skip(item=item, assessor=user, note=data["note"])
    services.assignment_item_grade(
        item=item,
        assessor=user,
        grade=data["grade"],
        note=data["note"],
        dwell_ms=data.get("dwell_ms"),
    )
    return False
