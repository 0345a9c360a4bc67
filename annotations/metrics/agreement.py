"""Inter-assessor agreement on ordinal relevance grades: confusion matrix, kappa, alpha."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

__all__ = [
    "Agreement",
    "agreement_between",
    "cohen_kappa_quadratic",
    "confusion_matrix",
    "krippendorff_alpha_ordinal",
]


def _level_positions(levels: Sequence[int], *, minimum: int) -> dict[int, int]:
    """Map each grade in ``levels`` to its index position, validating the scale.

    ``levels`` lists every grade of the scale in ascending order, e.g. ``[0, 1, 2, 3]``;
    ordinal computations use the index position of a grade, never its numeric value.
    """
    grades = list(levels)
    if len(grades) < minimum:
        raise ValueError(f"levels must list at least {minimum} grade(s), got {grades!r}")
    if any(later <= earlier for earlier, later in pairwise(grades)):
        raise ValueError(f"levels must be strictly increasing, got {grades!r}")
    return {grade: position for position, grade in enumerate(grades)}


def _position(positions: dict[int, int], grade: int, *, where: str) -> int:
    try:
        return positions[grade]
    except (KeyError, TypeError):
        raise ValueError(
            f"{where}: grade {grade!r} is not one of the levels {list(positions)!r}"
        ) from None


def confusion_matrix(pairs: Iterable[tuple[int, int]], levels: Sequence[int]) -> list[list[int]]:
    """Count how often the two assessors' grades co-occur.

    ``pairs`` holds one ``(first assessor's grade, second assessor's grade)`` tuple per
    item both assessors judged. ``levels`` is the grade scale in strictly increasing order.
    Entry ``[i][j]`` counts the items the first assessor graded ``levels[i]`` and the
    second ``levels[j]``: rows belong to the first assessor, columns to the second.
    No pairs gives an all-zero matrix. A grade outside ``levels``, a pair that is not two
    grades, or empty or unordered ``levels`` raise ``ValueError``.
    """
    positions = _level_positions(levels, minimum=1)
    size = len(positions)
    matrix = [[0] * size for _ in range(size)]
    for number, pair in enumerate(pairs):
        try:
            first, second = pair
        except (TypeError, ValueError):
            raise ValueError(f"pair {number}: expected two grades, got {pair!r}") from None
        row = _position(positions, first, where=f"pair {number}")
        column = _position(positions, second, where=f"pair {number}")
        matrix[row][column] += 1
    return matrix


def cohen_kappa_quadratic(pairs: Iterable[tuple[int, int]], levels: Sequence[int]) -> float:
    """Quadratic-weighted Cohen's kappa between two assessors.

    ``kappa = 1 - sum(w * observed) / sum(w * expected)`` where ``observed`` is the
    confusion matrix (see ``confusion_matrix``), ``expected[i][j] = row_i * column_j / N``
    is what independent assessors with the same marginals would produce, and
    ``w[i][j] = (i - j)^2 / (L - 1)^2`` uses the *index positions* of the grades in
    ``levels`` (``L`` levels), not the grade values: with ``levels=[0, 1, 3]`` grades 1
    and 3 are one step apart. Unused levels between used ones still widen distances.

    Degenerate case: the expected disagreement is 0 only when both assessors gave every
    item one and the same grade; the observed disagreement is then 0 as well, so kappa is
    0/0. We return 1.0 (the assessors never disagreed) rather than NaN, which JSON cannot
    carry; a caller that needs to tell this case apart can check for a single used grade.
    A "perfect-agreement-else-0" rule would have no second branch: 0/0 is the only case.

    Raises ``ValueError`` for no pairs, fewer than two levels, unordered levels, or a
    grade outside ``levels``.
    """
    positions = _level_positions(levels, minimum=2)
    observed = np.array(confusion_matrix(pairs, list(positions)), dtype=float)
    total = observed.sum()
    if total == 0:
        raise ValueError("cohen_kappa_quadratic needs at least one pair of grades")
    index = np.arange(len(positions), dtype=float)
    weights = (index[:, None] - index[None, :]) ** 2 / (len(positions) - 1) ** 2
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    expected_disagreement = float((weights * expected).sum())
    if expected_disagreement == 0.0:
        return 1.0
    return 1.0 - float((weights * observed).sum()) / expected_disagreement


def krippendorff_alpha_ordinal(units: Iterable[Sequence[int]], levels: Sequence[int]) -> float:
    """Krippendorff's alpha with the ordinal difference function.

    Each unit (a judged item) is the sequence of grades its assessors gave, one per
    assessor who judged it; any number of assessors per unit, missing judgements simply
    left out. Units with fewer than two grades are not pairable and are dropped.

    Follows the coincidence-matrix formulation of Krippendorff (2011), "Computing
    Krippendorff's Alpha-Reliability": ``o[c][k] = sum_u pairs_u(c, k) / (m_u - 1)`` over
    ordered pairs of grades from different assessors within unit ``u`` (``m_u`` grades),
    ``n_c = sum_k o[c][k]``, ``n = sum_c n_c`` and the ordinal difference
    ``delta^2[c][k] = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``, which equals the squared
    gap between the mid-ranks ``cumsum(n)_c - n_c / 2`` of the two grades. Then
    ``alpha = 1 - (n - 1) * sum(o * delta^2) / sum_{c,k}(n_c * n_k * delta^2)``.
    Only the order of ``levels`` matters: grade values and unused levels do not.

    Degenerate case: when every pairable grade is the same, both disagreements are 0 and
    alpha is 0/0 (Krippendorff leaves it undefined: the data show no variation to be
    reliable about). We return 1.0, matching ``cohen_kappa_quadratic``, because NaN
    cannot travel through JSON; it means "never disagreed", not "proven reliable".

    Raises ``ValueError`` when no unit has two grades, for fewer than two levels,
    unordered levels, or a grade outside ``levels``.
    """
    positions = _level_positions(levels, minimum=2)
    rows: list[list[int]] = []
    for number, unit in enumerate(units):
        try:
            grades = list(unit)
        except TypeError:
            raise ValueError(
                f"unit {number}: expected a sequence of grades, got {unit!r}"
            ) from None
        counts = [0] * len(positions)
        for grade in grades:
            counts[_position(positions, grade, where=f"unit {number}")] += 1
        if len(grades) >= 2:
            rows.append(counts)
    if not rows:
        raise ValueError("krippendorff_alpha_ordinal needs a unit with at least two grades")

    counts_by_unit = np.array(rows, dtype=float)
    per_pair = counts_by_unit / (counts_by_unit.sum(axis=1) - 1)[:, None]
    coincidences = per_pair.T @ counts_by_unit - np.diag(per_pair.sum(axis=0))
    totals = counts_by_unit.sum(axis=0)
    midranks = np.cumsum(totals) - totals / 2
    delta = (midranks[:, None] - midranks[None, :]) ** 2
    expected_disagreement = float((np.outer(totals, totals) * delta).sum())
    if expected_disagreement == 0.0:
        return 1.0
    observed_disagreement = float((coincidences * delta).sum())
    return 1.0 - (float(totals.sum()) - 1.0) * observed_disagreement / expected_disagreement


@dataclass(frozen=True)
class Agreement:
    """Two graders on the pairs both graded: two people, or a machine judge (``first``) and
    a person or the adjudicated grades. ``matrix[i][j]`` counts the pairs ``first`` graded
    ``levels[i]`` and ``second`` ``levels[j]``. ``kappa`` and ``alpha`` are None with fewer
    than two levels (no scale to agree on) or no pair in common (``items`` 0)."""

    first: str
    second: str
    items: int
    kappa: float | None
    alpha: float | None
    matrix: list[list[int]]
    levels: list[int]

    @property
    def labelled_rows(self) -> list[tuple[int, list[int]]]:
        return list(zip(self.levels, self.matrix, strict=True))


def agreement_between(
    first: str, second: str, graded: Sequence[tuple[int, int]], levels: Sequence[int]
) -> Agreement:
    """``(first's grade, second's grade)`` tuples: their count, quadratic kappa and ordinal
    alpha (both None with fewer than two levels or no tuple; both 1.0 when every grade is one
    and the same, as the functions above rule) and the confusion matrix (all zeros for no
    tuple)."""
    scale = list(levels)
    scored = len(scale) >= 2 and len(graded) > 0
    return Agreement(
        first=first,
        second=second,
        items=len(graded),
        kappa=cohen_kappa_quadratic(graded, scale) if scored else None,
        alpha=krippendorff_alpha_ordinal(graded, scale) if scored else None,
        matrix=confusion_matrix(graded, scale),
        levels=scale,
    )
