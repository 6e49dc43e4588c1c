"""The validated exercise kinds, as plain data the renderer draws."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..problems import Problem

__all__ = [
    "Bucket",
    "Buckets",
    "Check",
    "Discussion",
    "Eliminate",
    "Exercise",
    "Cell",
    "FillIn",
    "Option",
    "Order",
    "Predict",
    "Problem",
    "Table",
    "WrongForm",
]


@dataclass(frozen=True)
class Table:
    """A generated table: header names and rows of display strings."""

    columns: list[str]
    rows: list[list[str]]


@dataclass
class Exercise:
    """What every kind has: its source line, label and storage id."""

    line: int  # 1-based line of the opening fence in the source file
    title: str | None = field(default=None, kw_only=True)
    id: str | None = field(default=None, kw_only=True)

    kind = ""


@dataclass
class Predict(Exercise):
    prompt: str
    answer: str
    why: str

    kind = "predict"


@dataclass
class Option:
    """A choice; `note` is `tempts` (check) or `rules_out` (eliminate)."""

    letter: str
    text: str
    correct: bool
    note: str | None
    id: str | None = None  # what {{ ref(exercise, option) }} names
    # With variants: the table column holding this option's number, and
    # the formula (in the lesson's symbols) it must equal in every variant.
    column: str | None = None
    formula: str | None = None
    line: int | None = None  # 1-based line of its formula (drift report)


@dataclass
class Check(Exercise):
    """Pick one option; with ``variants`` (a published table, one row per
    variant) the texts hold {column} placeholders, one variant is shown
    at a time and "Try another" draws a new one, as a fill-in does."""

    question: str
    options: list[Option]
    explanation: str
    variants: str | None = None  # table id: "36_variants.check_counts"
    rows: list[dict[str, str]] = field(default_factory=list)

    kind = "check"


@dataclass
class Eliminate(Exercise):
    """Strike the wrong options one at a time, each with a reason; with
    ``variants`` the numbers come from a published table as a check's do,
    and "Try another" draws a new variant and clears every strike."""

    question: str
    options: list[Option]
    explanation: str
    variants: str | None = None  # the table id, e.g. "36_variants.counts"
    rows: list[dict[str, str]] = field(default_factory=list)

    kind = "eliminate"


@dataclass
class Bucket:
    name: str
    items: list[str]
    explanation: str


@dataclass
class Buckets(Exercise):
    prompt: str
    buckets: list[Bucket]

    kind = "buckets"


@dataclass
class Order(Exercise):
    prompt: str
    steps: list[str]  # in the correct order
    why: str

    kind = "order"


@dataclass
class WrongForm:
    """A common wrong answer and what to say to the student who gives it."""

    form: str  # in the lesson's symbols, e.g. "4*d_model^2/h"
    why: str  # Markdown


@dataclass
class Cell:
    """One blank: its label, the engine's answer column, the formula."""

    label: str  # Markdown
    column: str  # the variants table's column holding the engine's value
    formula: str  # in the lesson's symbols: the answer for every variant
    shape: bool  # a tuple of axes rather than one number
    wrong: list[WrongForm]
    otherwise: str  # Markdown: what to look at for any other wrong answer
    line: int  # 1-based line of its formula: where a drift is reported


@dataclass
class FillIn(Exercise):
    """Blanks whose answers the snippet engine computed, one set per
    variant (a row of the published ``variants`` table); the page shows
    one variant at a time and "Try another" draws a new one."""

    prompt: str  # Markdown, with {symbol} where a variant's value goes
    variants: str  # the table id, e.g. "46_variants.params"
    symbols: list[str]  # the table's columns that give the variant
    rows: list[dict[str, str]]  # each variant: column -> display text
    cells: list[Cell]
    points: list[dict[str, float]]  # random symbol values (symbolic check)

    kind = "fill-in"


@dataclass
class Discussion(Exercise):
    prompt: str
    hint: str
    answer: str

    kind = "discussion"
