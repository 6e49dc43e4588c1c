"""The exercise kinds: the validated data the renderer draws, and what
each kind's YAML takes and its widget shows. A kind is one class here,
one builder in validate.py, one template (templates/<kind>.html) and its
behaviour in docs/assets/exercises.js.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: {name}: where a variant's value goes (not TeX's \text{model}).
PLACEHOLDER = re.compile(r"(?<![\w\\}])\{([A-Za-z_][A-Za-z0-9_]*)\}")


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

    # The kind's registry entry (class attributes, not fields).
    kind = ""
    label = ""  # shown when the author sets no title
    keys = ()  # required besides kind, in the order the docs list them
    optional = ()  # besides title and id
    actions = ()  # (data-ex-action, label) of its buttons


@dataclass
class Predict(Exercise):
    prompt: str
    answer: str
    why: str

    kind = "predict"
    label = "Predict first"
    keys = ("prompt", "answer", "why")
    actions = (("commit", "Commit prediction"),)


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
class Choices(Exercise):
    """A check or an eliminate: with ``variants`` (a published table, a
    variant a row) the texts hold {column} placeholders, as a fill-in's."""

    question: str
    options: list[Option]
    explanation: str
    variants: str | None = None  # table id: "36_variants.check_counts"
    rows: list[dict[str, str]] = field(default_factory=list)

    keys = ("question", "options", "explanation")
    optional = ("variants",)
    #: A wrong option's note key, what the note says, the right option.
    note = ("", "", "")


@dataclass
class Check(Choices):
    """Pick the one right option."""

    kind = "check"
    label = "Check"
    note = ("tempts", "saying why it tempts people", "correct option")
    actions = (("check", "Check"), ("another", "Try another"))


@dataclass
class Eliminate(Choices):
    """Strike the wrong options one at a time, each with a reason."""

    kind = "eliminate"
    label = "Eliminate the wrong options"
    note = ("rules_out", "saying what rules it out", "survivor")
    actions = (("check", "Check my eliminations"), ("another", "Try another"))


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
    label = "Sort into buckets"
    keys = ("prompt", "buckets")
    optional = ("table", "group_by", "item_column")
    actions = (("check", "Check"),)


@dataclass
class Order(Exercise):
    prompt: str
    steps: list[str]  # in the correct order
    why: str

    kind = "order"
    label = "Put in order"
    keys = ("prompt", "steps", "why")
    actions = (("check", "Check order"),)


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
    variant (a row of the published ``variants`` table)."""

    prompt: str  # Markdown, with {symbol} where a variant's value goes
    variants: str  # the table id, e.g. "46_variants.params"
    symbols: list[str]  # the table's columns that give the variant
    rows: list[dict[str, str]]  # each variant: column -> display text
    scopes: list[dict[str, float]]  # each variant: symbol -> value
    cells: list[Cell]
    points: list[dict[str, float]]  # random symbol values (symbolic check)

    kind = "fill-in"
    label = "Fill in"
    keys = ("prompt", "variants", "cells")
    actions = (("check", "Check"), ("another", "Try another"))


@dataclass
class Discussion(Exercise):
    prompt: str
    hint: str
    answer: str

    kind = "discussion"
    label = "Discussion"
    keys = ("prompt", "hint", "answer")
    actions = (("commit", "Compare with the model answer"),)


#: name -> kind, in the order the docs list them.
KINDS: dict[str, type[Exercise]] = {
    cls.kind: cls
    for cls in (Predict, Check, Eliminate, Buckets, Order, FillIn, Discussion)
}
