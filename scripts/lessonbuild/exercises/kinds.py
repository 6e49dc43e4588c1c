"""The exercise kinds: one registry entry each.

Everything that makes a kind lives in its ``Kind``: the keys its YAML
takes, the label a widget shows when the author sets no ``title``, the
model class it validates into, the function that validates it
(validate.py), the template that draws it (templates/<name>.html), the
extra view data that template needs (render.py) and its action buttons.
Adding a kind means one entry here, one builder, one template, and its
behaviour in docs/assets/exercises.js.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import model, render, validate

__all__ = ["KINDS", "OPTIONAL", "Kind"]

#: Optional on every kind: the widget's label, and a stable storage id.
OPTIONAL = ("title", "id")


@dataclass(frozen=True)
class Kind:
    name: str
    required: tuple[str, ...]  # in the order the docs list them
    optional: tuple[str, ...]  # besides OPTIONAL
    label: str
    model: type[model.Exercise]
    build: Callable  # (checker, data, common, tables) -> Exercise | None
    template: str
    actions: tuple[tuple[str, str], ...] = ()  # (data-ex-action, label)
    view: Callable | None = None  # (exercise, ctx) -> extra template data

    @property
    def keys(self) -> tuple[str, ...]:
        return OPTIONAL + self.optional


_ALL = (
    Kind(
        "predict",
        ("prompt", "answer", "why"),
        (),
        "Predict first",
        model.Predict,
        validate.build_predict,
        "predict.html",
        (("commit", "Commit prediction"),),
    ),
    Kind(
        "check",
        ("question", "options", "explanation"),
        ("variants",),
        "Check",
        model.Check,
        validate.build_check,
        "check.html",
        (("check", "Check"), ("another", "Try another")),
        render.choices_view,
    ),
    Kind(
        "eliminate",
        ("question", "options", "explanation"),
        ("variants",),
        "Eliminate the wrong options",
        model.Eliminate,
        validate.build_eliminate,
        "eliminate.html",
        (("check", "Check my eliminations"), ("another", "Try another")),
        render.choices_view,
    ),
    Kind(
        "buckets",
        ("prompt", "buckets"),
        ("table", "group_by", "item_column"),
        "Sort into buckets",
        model.Buckets,
        validate.build_buckets,
        "buckets.html",
        (("check", "Check"),),
        render.buckets_view,
    ),
    Kind(
        "order",
        ("prompt", "steps", "why"),
        (),
        "Put in order",
        model.Order,
        validate.build_order,
        "order.html",
        (("check", "Check order"),),
        render.order_view,
    ),
    Kind(
        "fill-in",
        ("prompt", "variants", "cells"),
        (),
        "Fill in",
        model.FillIn,
        validate.build_fill_in,
        "fill-in.html",
        (("check", "Check"), ("another", "Try another")),
        render.fill_in_view,
    ),
    Kind(
        "discussion",
        ("prompt", "hint", "answer"),
        (),
        "Discussion",
        model.Discussion,
        validate.build_discussion,
        "discussion.html",
        (("commit", "Compare with the model answer"),),
    ),
)

#: name -> Kind, in the order the docs list them.
KINDS: dict[str, Kind] = {k.name: k for k in _ALL}
