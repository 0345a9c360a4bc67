"""HTML pages for scores: the live leaderboard, a run's per-query scores, a query's rankings."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast
from urllib.parse import quote

from django.contrib import messages
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from annotations import selectors, services
from annotations.metrics.measure_names import format_measure
from annotations.models import Collection, Query, Run
from annotations.scores import leaderboard_reads, measure_significance, snapshots
from annotations.selectors import (
    impact,
    judging,
    leaderboards,
    measure_values,
    query_scores,
    scores_state,
    stored_scores,
)
from annotations.views import leaderboard_pages, significance
from annotations.views._collection import login_first, readable_collection

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotations.access import Access
    from annotations.selectors.leaderboards import Leaderboard

# How often an open leaderboard asks whether scores changed (a few aggregate queries).
POLL_MS = 3000


@login_first
def leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard at k; it refreshes its table by itself when scores change.

    Its body is rendered once per stored board and kind of viewer: while the board is served
    as stored (``stored_read``), a view answers from that rendering without reading the rows."""
    collection, access = readable_collection(request, slug, sees="leaderboard")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    page, search = _page_asked(request)
    measure, measure_error = _measure_asked(request, collection)
    side = request.GET.get("side") == "all" and bool(collection.measures)
    shown_with = {"measure": measure or "", "side": "all" if side else ""}
    if measure:
        return _measure_leaderboard(
            request, collection=collection, k=k, access=access, name=measure, side=side
        )
    extras = measure_values.kept_means(collection) if side else []
    stored = leaderboard_reads.stored_read(collection=collection, k=k) if not side else None
    # What differs between viewers of one board: which runs they may open and pick, and the
    # page of the ranking (a search's answer is not kept).
    viewer = request.user.get_username() if access.run_links == "own" else ""
    served = (
        f"leaderboard-page:{stored.key}:{access.run_links}:{viewer}:{page}"
        if stored and not search
        else None
    )
    live = cache.get(served) if served else None
    if live is None:
        live, board = _leaderboard_live(
            request,
            collection=collection,
            k=k,
            access=access,
            page=page,
            search=search,
            extras=extras,
        )
        as_stored = (
            stored is not None
            and board is not None
            and stored.stamp == board.computed_stamp == board.state.stamp
        )
        if served and as_stored:
            cache.set(served, live, 600)
    context = {
        "collection": collection,
        "k": k,
        "live": mark_safe(live),  # rendered from the project's own template
        "is_member": access.member,
        "is_organiser": access.organiser,
        "machine_rules_link": access.organiser and collection.machine_judges.exists(),
        "measure_error": measure_error,
        **_measure_choice(shown_with),
    }
    return render(request, "annotations/scores/leaderboard.html", context)


def _measure_asked(request: HttpRequest, collection: Collection) -> tuple[str, str]:
    """The kept measure the leaderboard is asked to rank by, in ir_measures' spelling (empty:
    nDCG@k), and why an asked one is not shown (an error read out at the top)."""
    asked = request.GET.get("measure", "").strip()[:200]
    if not asked:
        return "", ""
    try:
        return format_measure(measure_values.kept_measure(collection, asked)), ""
    except measure_values.UnknownMeasure as error:
        return "", f"{error} Showing nDCG@k."


def _measure_choice(shown_with: dict[str, str]) -> dict[str, object]:
    """What the page's links keep of the measure choice (the cutoff links keep it)."""
    kept = "".join(f"&{key}={quote(value)}" for key, value in shown_with.items() if value)
    return {"measure": shown_with["measure"], "side": bool(shown_with["side"]), "keep": kept}


def _measure_leaderboard(
    request: HttpRequest,
    *,
    collection: Collection,
    k: int,
    access: Access,
    name: str,
    side: bool,
) -> HttpResponse:
    """The leaderboard ranked by a kept measure: each run's mean, its bootstrap CI and, with
    ``side``, every other kept measure's mean beside it (computed from the stored values,
    once per process and scores stamp: ``measure_values.measure_board``)."""
    measure = measure_values.kept_measure(collection, name)
    board = measure_values.measure_board(collection, measure)
    # The letters are the worker's (`scores.measure_significance`): read, never computed here.
    tested = measure_significance.tested(measure)
    letters = (
        measure_significance.measure_significance_read(collection=collection, measure=measure)
        if tested
        else None
    )
    letters_current = letters is not None and letters.stamp == board.stamp
    extras = (
        [other for other in measure_values.kept_means(collection) if other.name != name]
        if side
        else []
    )
    if side:  # nDCG@k's stored means beside the measure's
        ndcg = snapshots.leaderboard_read(collection=collection, k=k)
        ndcg_means = {row.run.id: row.ndcg for row in ndcg.rows} if ndcg else {}
    else:
        ndcg_means = {}
    username = request.user.get_username()
    rows = [
        {
            "row": row,
            "link": access.run_links == "all"
            or (access.run_links == "own" and row.run.owner == username),
            "ndcg": ndcg_means.get(row.run.id),
            "extras": [other.mean_of(row.run.id) for other in extras],
            "letters": letters.letters.get(row.run.id, "") if letters else "",
            "below_best": letters.below_best.get(row.run.id, False) if letters else False,
            "p_best": letters.p_best.get(row.run.id) if letters else None,
        }
        for row in board.rows
    ]
    live = render_to_string(
        "annotations/scores/_measure_live.html",
        {
            "collection": collection,
            "k": k,
            "board": board,
            "rows": rows,
            "extras": extras,
            "side": side,
            "access": access,
            "tested": tested,
            "significance": letters,
            "significance_current": letters_current,
            "columns": (access.run_links != "none")
            + 4
            - board.summed
            + tested
            + (1 + len(extras) if side else 0)
            + 1,
            "resamples": leaderboards.BOOTSTRAP_RESAMPLES,
            "seed": leaderboards.BOOTSTRAP_SEED,
            "confidence": round(100 * leaderboards.CONFIDENCE),
            "poll_ms": POLL_MS,
        },
        request,
    )
    context = {
        "collection": collection,
        "k": k,
        "live": mark_safe(live),  # rendered from the project's own template
        "is_member": access.member,
        "is_organiser": access.organiser,
        "machine_rules_link": False,
        "measure_error": "",
        **_measure_choice({"measure": name, "side": "all" if side else ""}),
    }
    return render(request, "annotations/scores/leaderboard.html", context)


def _page_asked(request: HttpRequest) -> tuple[str, str]:
    """The page of the ranking asked for, in one spelling (a number from 1, or ``all``;
    anything else reads as the first, past the end as the last) so that each page has one
    cached body, and the run-name search, bounded."""
    page = request.GET.get("page", "1").strip()[:12]
    if page != "all":
        page = str(max(1, int(page))) if page.isdecimal() else "1"
    search = request.GET.get("q", "").strip()[: leaderboard_pages.SEARCH_MAX_LENGTH]
    return page, search


def _leaderboard_live(
    request: HttpRequest,
    *,
    collection: Collection,
    k: int,
    access: Access,
    page: str = "1",
    search: str = "",
    extras: list[measure_values.MeasureBoard] | None = None,
) -> tuple[str, Leaderboard | None]:
    """The rendered body and the board it shows (None: being computed)."""
    board = snapshots.leaderboard_read(collection=collection, k=k)
    shown = (
        leaderboard_pages.leaderboard_slice(board.rows, page=page, search=search) if board else None
    )
    flips = impact.flip_state_stored(collection=collection, k=k) if board else None
    context = {
        "collection": collection,
        "k": k,
        "board": board,  # None: being computed by a worker (the page polls until it is there)
        "shown": shown,
        "forest": significance.forest_of(board, shown.rows) if board and shown else None,
        "flips": flips,
        "flip_pairs": leaderboard_pages.flips_shown(flips, shown) if flips and shown else [],
        "state": board.state if board else None,
        "retry_after": leaderboard_reads.RETRY_AFTER_SECONDS,
        "access": access,
        "poll_ms": POLL_MS,
        "machine_judged": collection.machine_judges.exists(),
        "extras": extras or [],
        "extras_stamp": extras[0].stamp if extras else "",
    }
    return render_to_string("annotations/scores/_leaderboard_live.html", context, request), board


@login_first
def leaderboard_state(request: HttpRequest, slug: str) -> JsonResponse:
    """A small JSON document the open leaderboard polls: it reloads its table when `table`
    (the scores stamp, marked while the significance pass is pending) differs from its own."""
    collection, _ = readable_collection(request, slug, sees="leaderboard")
    state = scores_state.scores_state(collection=collection)
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    # A table ranked by a kept measure, or with their means beside nDCG@k's, is computed
    # from the stored values: it is new with every scores stamp, and (ranked by a measure)
    # once its significance pass is stored for that stamp.
    live_values = bool(request.GET.get("measure") or request.GET.get("side"))
    table = state.stamp
    if live_values:
        table += _measure_letters_mark(collection, request.GET.get("measure", ""), state.stamp)
    return JsonResponse(
        {
            "stamp": state.stamp,
            "table": table
            if live_values
            else leaderboard_reads.table_stamp(collection=collection, k=k, state=state),
            "pending": state.pending,
            "pending_queries": state.pending_queries,
            "pending_runs": state.pending_runs,
            "last_recomputed": state.last_recomputed.isoformat() if state.last_recomputed else None,
        }
    )


def _measure_letters_mark(collection: Collection, asked: str, stamp: str) -> str:
    """``+significance`` while the letters of the measure a table is ranked by are not
    stored for the scores at `stamp` (what ``_measure_live.html`` adds to its stamp)."""
    try:
        measure = measure_values.kept_measure(collection, asked) if asked else None
    except measure_values.UnknownMeasure:
        return ""
    if measure is None or not measure_significance.tested(measure):
        return ""
    letters = measure_significance.measure_significance_read(collection=collection, measure=measure)
    return "" if letters is not None and letters.stamp == stamp else "+significance"


@login_first
def run_detail(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """A run's per-query nDCG@k and judged@k as a chart and a sortable table."""
    collection, access = readable_collection(request, slug, sees="any_run_scores")
    run = Run.objects.filter(collection=collection, name=name).select_related("owner").first()
    if run is None or not access.run_scores(run):
        raise Http404("No such run")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    # Read only when the page's cached body (keyed by the scores stamp) is missing.
    computed: list[stored_scores.RunScores] = []

    def run_values() -> stored_scores.RunScores:
        if not computed:
            computed.append(stored_scores.run_scores(run=run, k=k))
        return computed[0]

    def chart() -> dict[str, object]:
        per_query = run_values().per_query
        return {
            "labels": [row.qid for row in per_query],
            "ndcg": [row.ndcg for row in per_query],
            "judged": [row.judged for row in per_query],
            "k": k,
        }

    measure_names = list(collection.measures)
    tables: list[measure_values.RunMeasureTable] = []

    def measure_table() -> measure_values.RunMeasureTable:
        if not tables:
            tables.append(measure_values.run_measure_table(collection, run))
        return tables[0]

    def per_query_rows() -> list[dict[str, object]]:
        """Each query's row with its values of the kept measures."""
        by_qid = measure_table().per_query if measure_names else {}
        blank: list[float | None] = [None] * len(measure_names)
        return [
            {"row": row, "measures": by_qid.get(row.qid, blank)} for row in run_values().per_query
        ]

    context = {
        "collection": collection,
        "run": run,
        "k": k,
        "scores": run_values,  # templates call callables: read only if rendered
        "per_query_rows": per_query_rows,
        "measure_names": measure_names,
        "measure_table": measure_table,
        "chart": chart,
        "is_member": access.member,
        "access": access,
        "stamp": scores_state.scores_state(collection=collection).stamp,
    }
    return render(request, "annotations/scores/run.html", context)


@login_first
def query_detail(request: HttpRequest, slug: str, qid: str) -> HttpResponse:
    """Every run's nDCG@k for one query, its judged documents, two runs side by side."""
    collection, access = readable_collection(request, slug, sees="queries")
    # Read before the query row: what is cached under the stamp is never older than it.
    stamp = scores_state.scores_state(collection=collection).stamp
    query = Query.objects.filter(collection=collection, qid=qid).first()
    if query is None:
        raise Http404("No such query")
    k = selectors.cutoff_from(collection, request.GET.get("k"))
    # Read only if the run order or the cached table below is not in the cache.
    overview = SimpleLazyObject(lambda: query_scores.query_overview(query=query, k=k))
    # Every run's stored value for the query moves only with the scores stamp; the table of
    # them is a cached fragment, so a warm page reads none of them.
    order = cast(
        query_scores.QueryRunOrder,
        cache.get_or_set(
            f"query-run-order:{query.id}:{k}:{stamp}",
            lambda: query_scores.query_run_order(cast(query_scores.QueryOverview, overview)),
            600,
        ),
    )
    measure_names = list(collection.measures)

    def query_runs() -> list[dict[str, object]]:
        """Every run's row with its values of the kept measures (read only if rendered)."""
        _, by_run = measure_values.query_measure_values(collection, query.id)
        runs_shown = cast(query_scores.QueryOverview, overview).runs
        return [
            {"row": row, "measures": by_run.get(row.run.id) or [None] * len(measure_names)}
            for row in runs_shown
        ]

    answered = set(order.answered)
    default = [*order.answered, *(name for name in order.names if name not in answered)]
    name_a = request.GET.get("a") or (default[0] if default else "")
    name_b = request.GET.get("b") or (default[1] if len(default) > 1 else name_a)
    runs = {
        run.name: run
        for run in Run.objects.filter(collection=collection, name__in={name_a, name_b}).only(
            "id", "name"
        )
    }
    chosen = [runs[name] for name in (name_a, name_b) if name in runs]
    rankings = query_scores.query_rankings_side_by_side(query=query, runs=chosen, k=k)
    side_a = rankings.get(runs[name_a].id, []) if name_a in runs else []
    side_b = rankings.get(runs[name_b].id, []) if name_b in runs else []
    rows = [
        (
            position,
            side_a[position] if position < len(side_a) else None,
            side_b[position] if position < len(side_b) else None,
        )
        for position in range(max(len(side_a), len(side_b)))
    ]
    context = {
        "collection": collection,
        "query": query,
        "k": k,
        "overview": overview,
        "query_runs": query_runs,
        "measure_names": measure_names,
        "pending": order.pending,
        "idcg": order.idcg,
        "name_a": name_a,
        "name_b": name_b,
        "rows": rows,
        "run_names": order.names,
        # Grades reveal the qrels: organisers see them, other members see judged/unjudged.
        "show_grades": access.organiser,
        "judged": SimpleLazyObject(lambda: query_scores.query_judged(query=query)),
        "stamp": stamp,
        "unjudged_top": (
            # Moves only with judgements or runs, which move the scores stamp too.
            cache.get_or_set(
                f"query-unjudged-top:{query.id}:{k}:{stamp}",
                lambda: len(query_scores.query_unjudged_top(query=query, k=k)),
                600,
            )
            if access.organiser
            else None
        ),
        "pools": list(judging.pools_of(collection=collection)) if access.organiser else [],
    }
    return render(request, "annotations/scores/query.html", context)


@require_POST
@login_first
def query_to_pool(request: HttpRequest, slug: str, qid: str) -> HttpResponse:
    """Organisers send the query's unjudged documents of the runs' top k to a pool."""
    collection, access = readable_collection(request, slug, sees="member")
    if not access.organiser:
        raise PermissionDenied("Only the collection's organisers may do this.")
    query = Query.objects.filter(collection=collection, qid=qid).first()
    if query is None:
        raise Http404("No such query")
    k = selectors.cutoff_from(collection, request.POST.get("k"))
    raw_pool = request.POST.get("pool", "")
    pool = (
        judging.pools_of(collection=collection).filter(id=int(raw_pool)).first()
        if raw_pool.isdigit()
        else None
    )
    if pool is None:
        messages.error(request, "Choose one of the collection's pools.")
    else:
        document_ids = query_scores.query_unjudged_top(query=query, k=k)
        try:
            added = services.pool_add_pairs(
                pool=pool,
                query=query,
                document_ids=document_ids,
                added_by=cast("User", request.user),
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            already = len(document_ids) - added
            note = f" ({already} already in it)" if already else ""
            messages.success(request, f"Added {added} pairs to pool {pool.name}{note}.")
    return redirect(f"{reverse('query-detail', args=[collection.slug, query.qid])}?k={k}")
