"""Measure names, in ir_measures' syntax (``AP(rel=2)@100``) and trec_eval's (``map_cut.100``)."""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from annotations.metrics.measures import Measure

__all__ = [
    "FAMILIES",
    "MeasureNameError",
    "format_measure",
    "measure_set",
    "parse_measure",
    "parse_measures",
    "parse_trec_eval",
    "trec_name",
]


class MeasureNameError(ValueError):
    """A measure name that cannot be read; the message names it and lists the known ones."""


@dataclass(frozen=True)
class Family:
    """What a measure family accepts: whether a cutoff is required, allowed, or refused;
    whether a relevance level applies; its further parameters with their defaults; its
    trec_eval name without and with a cutoff (None: trec_eval has no such measure)."""

    cutoff: str  # "required", "optional" or "none"
    rel: bool
    defaults: tuple[tuple[str, float], ...] = ()
    trec: str | None = None
    trec_cut: str | None = None


FAMILIES: dict[str, Family] = {
    "AP": Family("optional", True, trec="map", trec_cut="map_cut"),
    "P": Family("required", True, trec_cut="P"),
    "R": Family("required", True, trec_cut="recall"),
    "Success": Family("required", True, trec_cut="success"),
    "RR": Family("optional", True, trec="recip_rank"),
    "Rprec": Family("none", True, trec="Rprec"),
    "Bpref": Family("none", True, trec="bpref"),
    "infAP": Family("none", True, trec="infAP"),
    "nDCG": Family("optional", False, trec="ndcg", trec_cut="ndcg_cut"),
    "NumRel": Family("none", True, trec="num_rel"),
    "NumRet": Family("none", False, trec="num_ret"),
    "NumRelRet": Family("none", True, trec="num_rel_ret"),
    "SetP": Family("none", True, trec="set_P"),
    "SetR": Family("none", True, trec="set_recall"),
    "SetF": Family("none", True, (("beta", 1.0),), trec="set_F"),
    "ERR": Family("required", False),
    "RBP": Family("optional", True, (("p", 0.8),)),
    "RBPResid": Family("optional", False, (("p", 0.8),)),
    "Judged": Family("optional", False),
}

# ir_measures' other spellings of the same measures.
ALIASES: dict[str, str] = {
    "MAP": "AP",
    "MRR": "RR",
    "BPref": "Bpref",
    "NDCG": "nDCG",
    "RPrec": "Rprec",
    "Precision": "P",
    "Recall": "R",
}

# trec_eval's names (the part before a '.' or '_' with the parameters) -> family.
TREC_FAMILIES: dict[str, str] = {
    "map": "AP",
    "map_cut": "AP",
    "P": "P",
    "recall": "R",
    "success": "Success",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "infAP": "infAP",
    "ndcg": "nDCG",
    "ndcg_cut": "nDCG",
    "num_rel": "NumRel",
    "num_ret": "NumRet",
    "num_rel_ret": "NumRelRet",
    "set_P": "SetP",
    "set_recall": "SetR",
    "set_F": "SetF",
}

_IR_NAME = re.compile(r"(?P<name>[A-Za-z_]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>\S+))?")
_TREC_NAME = re.compile(r"(?P<name>[A-Za-z_]+?)(?:[._](?P<params>[0-9][0-9.,]*))?")


def _known() -> str:
    return (
        "known measures: "
        + ", ".join(FAMILIES)
        + " (ir_measures syntax, e.g. AP(rel=2)@100, P@10, RBP(p=0.8)); trec_eval names: "
        + ", ".join(sorted(TREC_FAMILIES))
    )


def _error(text: str, problem: str) -> MeasureNameError:
    return MeasureNameError(f"measure {text!r}: {problem}; {_known()}")


def _cutoff(text: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise _error(text, f"cutoff {value!r} is not an integer >= 1")
    return int(value)


def build(
    text: str, name: str, cutoff: int | None, params: dict[str, float], default_rel: int = 1
) -> Measure:
    """A Measure from its parts, checked against its family; parameters equal to their
    defaults are dropped, so equal measures compare equal however they were written."""
    family = FAMILIES[name]
    if family.cutoff == "required" and cutoff is None:
        raise _error(text, f"{name} needs a cutoff, e.g. {name}@10")
    if family.cutoff == "none" and cutoff is not None:
        raise _error(text, f"{name} takes no cutoff")
    rel = params.pop("rel", None)
    if rel is not None and not family.rel:
        raise _error(text, f"{name} takes no relevance level (rel)")
    # A family without levels keeps 1, so that -l leaves its measures equal to themselves.
    level = (default_rel if rel is None else rel) if family.rel else 1
    if level != int(level) or level < 1:
        raise _error(text, f"relevance level {level!r} is not an integer >= 1")
    defaults = dict(family.defaults)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        allowed = ", ".join(["rel"] * family.rel + list(defaults)) or "none"
        raise _error(text, f"{name} has no parameter {unknown[0]!r} (parameters: {allowed})")
    if "p" in params and not 0.0 < params["p"] < 1.0:
        raise _error(text, f"persistence p={params['p']!r} is not in (0, 1)")
    if "beta" in params and not params["beta"] >= 0.0:
        raise _error(text, f"beta={params['beta']!r} is not >= 0")
    kept = tuple(sorted((key, value) for key, value in params.items() if value != defaults[key]))
    return Measure(name, cutoff, int(level), kept)


def parse_measure(text: str, default_rel: int = 1) -> Measure:
    """One measure in ir_measures' syntax: ``Name(param=value,...)@cutoff`` (``AP(rel=2)@100``,
    ``P@10``, ``RBP(p=0.8)``, ``NumRet(rel=1)``...). ``default_rel`` is the level for a name
    that gives none (trec_eval's ``-l``). Unknown or malformed: MeasureNameError."""
    match = _IR_NAME.fullmatch(text.strip())
    if match is None:
        raise _error(text, "not of the form Name(param=value,...)@cutoff")
    name = ALIASES.get(match["name"], match["name"])
    if name not in FAMILIES:
        raise _error(text, f"unknown measure {match['name']!r}")
    params: dict[str, float] = {}
    for part in filter(None, (match["params"] or "").split(",")):
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals or not key:
            raise _error(text, f"parameter {part!r} is not key=value")
        try:
            number = float(value)
        except ValueError:
            raise _error(text, f"parameter {key}={value.strip()!r} is not a number") from None
        if key in params:
            raise _error(text, f"parameter {key!r} given twice")
        params[key] = number
    if name == "NumRet" and "rel" in params:  # ir_measures: NumRet(rel=r) counts relevant
        name = "NumRelRet"
    cutoff = None if match["cutoff"] is None else _cutoff(text, match["cutoff"])
    return build(text, name, cutoff, params, default_rel)


def parse_trec_eval(text: str, level: int = 1) -> list[Measure]:
    """A trec_eval ``-m`` argument: ``map``, ``P.10`` or ``P_10``, ``P.5,10``,
    ``ndcg_cut.10``, ``set_F.0.5``...; ``level`` is ``-l``. A family with cutoffs named
    without any (``P``) takes trec_eval's default cutoffs."""
    match = _TREC_NAME.fullmatch(text.strip())
    if match is None or match["name"] not in TREC_FAMILIES:
        raise _error(text, "unknown trec_eval measure")
    base, raw = match["name"], match["params"]
    name = TREC_FAMILIES[base]
    if name == "SetF":
        try:
            beta = {} if raw is None else {"beta": float(raw)}
        except ValueError:
            raise _error(text, f"set_F's parameter {raw!r} is not a number") from None
        return [build(text, name, None, beta, level)]
    family = FAMILIES[name]
    cutting = family.cutoff == "required" or base in {"map_cut", "ndcg_cut"}
    cutoffs: list[int | None]
    if raw is None:
        cutoffs = _TREC_DEFAULT_CUTOFFS.get(base, [None]) if cutting else [None]
    elif cutting:
        cutoffs = [_cutoff(text, part) for part in raw.split(",")]
    else:
        raise _error(text, f"{base} takes no parameter")
    return [build(text, name, cutoff, {}, level) for cutoff in cutoffs]


# trec_eval's default cutoffs (m_P.c, m_recall.c, m_map_cut.c, m_ndcg_cut.c, m_success.c).
_TREC_DEFAULT_CUTOFFS: dict[str, list[int | None]] = {
    "P": [5, 10, 15, 20, 30, 100, 200, 500, 1000],
    "recall": [5, 10, 15, 20, 30, 100, 200, 500, 1000],
    "map_cut": [5, 10, 15, 20, 30, 100, 200, 500, 1000],
    "ndcg_cut": [5, 10, 15, 20, 30, 100, 200, 500, 1000],
    "success": [1, 5, 10],
}


def parse_measures(text: str, level: int = 1) -> list[Measure]:
    """A measure as a user types it anywhere: a trec_eval name if it reads as one (``map``,
    ``P_10``, ``ndcg_cut.10``), else ir_measures' syntax with ``level`` as its default
    relevance level."""
    try:
        return parse_trec_eval(text, level)
    except MeasureNameError:
        return [parse_measure(text, level)]


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def format_measure(measure: Measure) -> str:
    """The measure in ir_measures' syntax, its parameters sorted, rel left out when 1;
    ``parse_measure(format_measure(m)) == m``."""
    name, params = measure.name, list(measure.params)
    if measure.rel != 1:
        params.append(("rel", measure.rel))
    if name == "NumRelRet":  # ir_measures writes it NumRet(rel=r)
        name = "NumRet"
        params = [("rel", measure.rel)]
    inner = ",".join(f"{key}={_number(value)}" for key, value in sorted(params))
    text = f"{name}({inner})" if inner else name
    return text if measure.cutoff is None else f"{text}@{measure.cutoff}"


def trec_name(measure: Measure) -> str:
    """The name trec_eval prints for the measure (``map_cut_100``, ``P_10``, ``set_F_0.5``);
    the relevance level is trec_eval's ``-l``, not part of the name. A measure trec_eval
    lacks (ERR, RBP, Judged, RR@k) keeps its ir_measures name."""
    family = FAMILIES[measure.name]
    if measure.cutoff is None and family.trec is not None:
        beta = measure.param("beta", 1.0)
        if measure.name == "SetF" and beta != 1.0:
            return f"set_F_{_number(beta)}"
        return family.trec
    if measure.cutoff is not None and family.trec_cut is not None:
        return f"{family.trec_cut}_{measure.cutoff}"
    return format_measure(measure)


def measure_set(entries: Iterable[str]) -> list[Measure]:
    """The measures a collection keeps, from the names a user typed (each in ir_measures'
    syntax or trec_eval's, as ``parse_measures`` reads it), in the order given, each once.
    The first entry that cannot be read raises MeasureNameError naming it."""
    kept: list[Measure] = []
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, str) or not entry.strip():
            raise MeasureNameError(f"entry {position}: {entry!r} is not a measure name; {_known()}")
        try:
            measures = parse_measures(entry)
        except MeasureNameError as error:
            raise MeasureNameError(f"entry {position}: {error}") from None
        kept.extend(measure for measure in measures if measure not in kept)
    return kept
