"""What a question asks to compute from the documents' figures: the operation (a change, a percentage
change, a growth rate, a ratio, a share, a sum, a difference, an average) and its operands, each a measure in
the question's own words and the column it names ("the percentage change in wholesale sales from 2022 to
2023": wholesale sales in 2022, and in 2023). ``figures`` finds the cells and computes."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

_PCT = r"(?:percentage|percent|per cent|%|relative)"
_MOVE = (
    r"(?:change|changes|increase|decrease|growth|rise|fall|drop|decline|grow|grew|rose|fell|increased|"
    r"decreased)"
)
_BETWEEN = r"(?:from|between)\s+(?P<a>.+?)\s+(?:to|and|until|through)\s+(?P<b>.+?)"
_VERSUS = r"(?:in|for|at)\s+(?P<b>.+?)\s+(?:compared (?:with|to)|versus|vs\.?|over|relative to)\s+(?P<a>.+?)"
_AT = r"(?:\s+(?:in|for|at|on|during|as of)\s+(?P<c>[^,;]+?))?"

# (operation, pattern): the first that matches is the question's operation. Named groups: ``m`` a measure
# over two columns ``a`` (the earlier) and ``b``; ``x`` and ``y`` two measures in one column ``c``.
_TEMPLATES = tuple(
    (op, p)
    for op, p in (
        ("cagr", rf"(?:compound annual growth rate|cagr)\s+(?:in|of|for)\s+(?P<m>.+?)\s+{_BETWEEN}$"),
        ("cagr", rf"(?:\d+[- ]year\s+)?(?P<m>.+?)\s+(?:compound annual growth rate|cagr)\s+{_BETWEEN}$"),
        ("pct_change", rf"{_PCT}\s+{_MOVE}\s+(?:in|of)\s+(?P<m>.+?)\s+{{COLS}}$"),
        ("pct_change", r"(?:growth rate|rate of growth)\s+(?:in|of|for)\s+(?P<m>.+?)\s+{COLS}$"),
        (
            "pct_change",
            rf"by (?:what|how much|how many) {_PCT}(?: points)? did\s+(?P<m>.+?)\s+{_MOVE}\s+"
            rf"{{COLS}}$",
        ),
        ("pct_change", rf"how much did\s+(?P<m>.+?)\s+{_MOVE}\s+in {_PCT}(?: terms)?\s+{{COLS}}$"),
        ("change", rf"(?:{_MOVE}|difference)\s+(?:in|of)\s+(?P<m>.+?)\s+{{COLS}}$"),
        ("change", rf"(?:by )?how much did\s+(?P<m>.+?)\s+{_MOVE}(?:\s+by)?\s+{{COLS}}$"),
        ("share", rf"^(?P<x>.+?)\s+as\s+an?\s+(?:{_PCT}|share|proportion|fraction)\s+of\s+(?P<y>.+?){_AT}$"),
        (
            "share",
            rf"(?:what|which)\s+(?:{_PCT}|share|proportion|fraction)\s+of\s+(?P<y>.+?)\s+"
            rf"(?:was|were|is|are|came from|went (?:to|on)|did)\s+(?P<x>.+?){_AT}$",
        ),
        ("ratio", rf"ratio\s+(?:of|between)\s+(?P<x>.+?)\s+(?:to|and)\s+(?P<y>.+?){_AT}$"),
        ("ratio", rf"^(?P<x>.+?)\s+(?:divided by)\s+(?P<y>.+?){_AT}$"),
        ("ratio", rf"^(?P<x>.+?)[- ]to[- ](?P<y>.+?)\s+ratio{_AT}$"),
        (
            "average",
            r"(?:average|mean)\s+(?:of\s+)?(?P<m>.+?)\s+(?:from|between|over|across)\s+(?P<a>.+?)\s+(?:to|and|through)\s+(?P<b>.+?)$",
        ),
        ("difference", rf"difference between\s+(?P<x>.+?)\s+and\s+(?P<y>.+?){_AT}$"),
        ("sum", rf"(?:sum|total|combined total|combined)\s+of\s+(?P<x>.+?)\s+and\s+(?P<y>.+?){_AT}$"),
        ("sum", rf"^(?P<x>.+?)\s+plus\s+(?P<y>.+?){_AT}$"),
        ("sum", rf"^(?P<x>.+?)\s+and\s+(?P<y>.+?)\s+combined{_AT}$"),
    )
)
# Two columns are named "from A to B" or "in B compared with A": each template with ``{COLS}`` is both.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (op, re.compile(p.replace("{COLS}", cols), re.IGNORECASE))
    for op, p in _TEMPLATES
    for cols in ((_BETWEEN, _VERSUS) if "{COLS}" in p else ("",))
)
# What leads a question and names no operand ("What was the", "Calculate the").
_LEAD = re.compile(
    r"^(?:(?:please\s+)?(?:calculate|compute|work out|give|tell me|show)\s+)?(?:(?:what|how much)\s+"
    r"(?:was|were|is|are|will be|would be)\s+)?(?:the\s+)?",
    re.IGNORECASE,
)
YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
# Words before "'s" that name no one ("the year's", "last year's").
_NOT_OWNERS = frozenset({"year", "today", "quarter", "month", "week", "it", "that", "what", "who"})
NAMES = {
    "pct_change": "Percentage change",
    "change": "Change",
    "cagr": "Compound annual growth rate",
    "ratio": "Ratio",
    "share": "Share",
    "difference": "Difference",
    "sum": "Sum",
    "average": "Average",
}


@dataclass(frozen=True)
class Wanted:
    """One operand the question names: a ``measure`` (its words) in a ``column`` ('' when not named)."""

    role: str
    measure: str
    column: str


@dataclass(frozen=True)
class Operation:
    kind: str
    wanted: tuple[Wanted, ...]
    subject: str  # the quantity in words, for the answer ("Percentage change in turnover, 2022 to 2023")
    owners: tuple[str, ...] = ()  # whose figures the question asks for ("Acme" of "Acme's net sales")


def detect(question: str) -> Operation | None:
    """The computation ``question`` asks for, or None when it asks for none."""
    text = " ".join(question.strip().rstrip("?.!").split())
    for kind, pattern in _PATTERNS:
        m = pattern.search(text)
        if m is None:
            continue
        groups = {k: _clean(v or "") for k, v in m.groupdict().items()}
        op = _over_columns(kind, groups) if "m" in groups else _two_measures(kind, groups)
        if op is not None:
            owners = tuple(o for o in re.findall(r"([\w&.-]+)['’]s\b", text) if o.lower() not in _NOT_OWNERS)
            return dataclasses.replace(op, owners=owners)
    return None


_PERIOD = re.compile(
    r"(?:(?:fiscal(?: year)?|financial year|calendar year|year|FY|Q[1-4]|H[12])\s?)?"
    r"(?<!\d)(?:19|20)\d\d(?!\d)",
    re.IGNORECASE,
)


def _column(text: str) -> str:
    """A column the question names: the period when it names one ("2023" of "2023 for the society")."""
    found = _PERIOD.search(text)
    return found.group(0) if found else text


def _clean(text: str) -> str:
    text = _LEAD.sub("", text.strip(" ,;:"))
    text = re.sub(r"(?:\bthe\s+)?[\w&.-]+(?:\s[\w&.-]+)?['’]s\s+", "", text)  # whose: "Acme's", "the club's"
    return re.sub(r"^(?:the|a|an|its|their|our)\s+", "", text, flags=re.IGNORECASE).strip()


def _over_columns(kind: str, g: dict[str, str]) -> Operation | None:
    measure, a, b = g["m"], _column(g.get("a", "")), _column(g.get("b", ""))
    if not measure or not a or not b:
        return None
    years_a, years_b = YEAR.findall(a), YEAR.findall(b)
    if years_a and years_b and int(years_a[0]) > int(years_b[0]):
        a, b = b, a  # "between 2023 and 2022": the change is from the earlier
    if kind == "average":
        columns = _year_range(a, b) or [a, b]
        wanted = tuple(Wanted(f"value {i + 1}", measure, c) for i, c in enumerate(columns))
        return Operation(kind, wanted, f"Average {measure}, {a} to {b}")
    wanted = (Wanted("earlier", measure, a), Wanted("later", measure, b))
    return Operation(kind, wanted, f"{NAMES[kind]} in {measure}, {a} to {b}")


def _year_range(a: str, b: str) -> list[str]:
    ya, yb = YEAR.fullmatch(a.strip()), YEAR.fullmatch(b.strip())
    if ya is None or yb is None or not 0 < int(b) - int(a) <= 10:
        return []
    return [str(y) for y in range(int(a), int(b) + 1)]


def _two_measures(kind: str, g: dict[str, str]) -> Operation | None:
    x, y, column = g["x"], g["y"], _column(g.get("c", ""))
    if not x or not y:
        return None
    if kind in ("difference", "sum") and YEAR.fullmatch(x) and YEAR.fullmatch(y):
        return None  # "the difference between 2022 and 2023" names columns, not measures
    roles = {"ratio": ("numerator", "denominator"), "share": ("part", "whole")}.get(kind, ("first", "second"))
    wanted = (Wanted(roles[0], x, column), Wanted(roles[1], y, column))
    at = f", {column}" if column else ""
    subject = {
        "ratio": f"Ratio of {x} to {y}{at}",
        "share": f"{x[:1].upper()}{x[1:]} as a percentage of {y}{at}",
        "difference": f"Difference between {x} and {y}{at}",
        "sum": f"Sum of {x} and {y}{at}",
    }[kind]
    return Operation(kind, wanted, subject)
