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
    "FillIn",
    "Option",
    "Order",
    "Predict",
    "Problem",
    "Table",
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


@dataclass
class Check(Exercise):
    question: str
    options: list[Option]
    explanation: str

    kind = "check"


@dataclass
class Eliminate(Exercise):
    question: str
    options: list[Option]
    explanation: str

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
class FillIn(Exercise):
    prompt: str
    table: str  # the table id, e.g. "23_params.by_heads"
    column: str  # the hidden column's header
    data: Table
    # Columns left out of the exercise (e.g. an "actual" column that
    # would give the answers away), and per row the other forms accepted.
    hide: list[str] = field(default_factory=list)
    accept: dict[int, list[str]] = field(default_factory=dict)

    kind = "fill-in"

    @property
    def hidden(self) -> int:
        """Index of the hidden column."""
        return self.data.columns.index(self.column)

    @property
    def shown(self) -> list[int]:
        """Indexes of the columns the exercise shows."""
        return [
            i for i, c in enumerate(self.data.columns) if c not in self.hide
        ]

    @property
    def label_column(self) -> int:
        """The first shown column other than the blanks: names each row."""
        return next(i for i in self.shown if i != self.hidden)

    def accepted(self, row: int) -> list[str]:
        return self.accept.get(row, [])


@dataclass
class Discussion(Exercise):
    prompt: str
    hint: str
    answer: str

    kind = "discussion"
