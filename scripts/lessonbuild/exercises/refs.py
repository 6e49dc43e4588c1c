"""References by id: "slide 40", "option C" computed, never typed.

A typed number or letter goes stale when a slide moves or options are
reordered (CONTRIBUTING.md, "References by id"). Prose, notes and
exercise text call ``{{ ref(...) }}``; Python, which cannot run a macro,
writes the page's address ``slides/<stem>.html#<anchor>``. ``check``
reports what names nothing, and any number or letter typed by hand.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.prose import prose_lines
from ..problems import Problem, did_you_mean
from ..yamltext import Mapping, YamlProblem, load_yaml

#: A reference that names no slide after a slide's file was renamed: the
#: closest name left may be another slide's (a contributor who took the
#: suggestion pointed slide 2's link at slide 6).
RENAMED = (
    "if a slide's file was renamed, rename it back (its file name is its "
    "address and the name references use; a title changes without it)"
)

_CALL = re.compile(r"\{\{-?\s*ref\((?P<args>[^{}]*?)\)\s*-?\}\}")
#: A place named in Python: the page's address and an optional anchor.
_ADDRESS = re.compile(
    r"slides/(?P<stem>[0-9]{2}-[a-z0-9-]+)\.html(?:#(?P<anchor>[a-z0-9-]+))?"
)
#: "slide 40", "Slides 42", "option C", "Options B": typed, they go stale.
_TYPED = re.compile(
    r"\b(?:(?P<slide>[Ss]lides?)\s+(?P<number>\d+)\b"
    r"|(?P<option>[Oo]ptions?)\s+(?P<letter>[A-Z])\b)"
)
#: An exercise's own ``id:`` line (a top-level key of its YAML).
_ID_LINE = re.compile(
    r"""^id:[ \t]*["']?([a-z0-9][a-z0-9-]*)["']?[ \t]*$""", re.MULTILINE
)
_CODE = re.compile(r"`[^`]*`")  # inline code: not a reference
_NUMBER = re.compile(r"^[0-9]+-")  # a slide file's number
#: Folders of Python that may name a place of the lesson by its address.
CODE_DIRS = ("snippets", "mha_ref")


class RefError(ValueError):
    """A reference that names nothing: the message says what exists."""


def _arguments(text: str) -> tuple[tuple, dict]:
    """A call's (args, kwargs); SyntaxError or ValueError when they are
    not plain literals."""
    node = ast.parse(f"f({text})", mode="eval").body
    if not isinstance(node, ast.Call):  # ref("a") + ref("b"): not one call
        raise ValueError(text)
    args = tuple(ast.literal_eval(a) for a in node.args)
    return args, {k.arg: ast.literal_eval(k.value) for k in node.keywords}


@dataclass
class _Exercise:
    stem: str
    src_uri: str
    anchor: str
    line: int  # 1-based line of its fence
    path: str = ""  # its page's file, as problems name it (docs/...)
    options: dict[str, str] = field(default_factory=dict)  # id -> letter


@dataclass
class RefIndex:
    """Every slide, exercise and option id of the deck, and where."""

    slides: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: A slide's stem without its number ("trap-wrong-reshape-order"):
    #: the name that survives a slide inserted before it.
    names: dict[str, str] = field(default_factory=dict)
    exercises: dict[str, _Exercise] = field(default_factory=dict)
    #: Ids of exercises whose YAML does not parse: references to them are
    #: not reported (one unquoted ': ' gave five "names no exercise" lines
    #: besides the exercise's own problem).
    unparsed: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def from_deck(cls, deck) -> RefIndex:
        index = cls()
        for page in deck.pages:
            src_uri = deck.docs_rel(page)
            stem = Path(src_uri).stem
            number = page.number
            if number is None and isinstance(page.meta.get("slide"), int):
                number = page.meta["slide"]
            if number is not None:
                index.slides[stem] = (number, src_uri)
                index.names[_NUMBER.sub("", stem)] = stem
            for fence in page.exercises:
                if fence.end is not None:
                    index._add_exercise(page, src_uri, stem, fence)
        return index

    def _add_exercise(self, page, src_uri, stem, fence) -> None:
        try:
            data, _ = load_yaml(fence.body)
        except YamlProblem:  # the exercise's own validation reports it
            self.unparsed.update(_ID_LINE.findall(fence.body))
            return
        ex_id = data.get("id") if isinstance(data, Mapping) else None
        if not isinstance(ex_id, str):
            return
        if ex_id in self.exercises:
            first = self.exercises[ex_id]
            message = (
                f"exercise id '{ex_id}' is also the id of the exercise at "
                f"{first.path}:{first.line}; expected ids unique in the "
                "deck, so a reference names one exercise"
            )
            self.problems.append(Problem(page.path, fence.line, message))
            return
        options = data.get("options")
        letters = {
            o["id"]: chr(ord("A") + i)
            for i, o in enumerate(options if isinstance(options, list) else [])
            if isinstance(o, Mapping) and isinstance(o.get("id"), str)
        }
        self.exercises[ex_id] = _Exercise(
            stem, src_uri, f"ex-{ex_id}", fence.line, page.path, letters
        )

    def _slide(self, target: str) -> tuple[int, str, str]:
        """(number, src_uri, anchor) of a slide stem or an exercise id."""
        if target in self.slides:
            return *self.slides[target], ""
        if target in self.names and target not in self.exercises:
            return *self.slides[self.names[target]], ""
        if target in self.exercises:
            ex = self.exercises[target]
            if ex.stem not in self.slides:
                raise RefError(
                    f"ref({target!r}): exercise '{target}' is on "
                    f"{ex.src_uri}, which is not a numbered slide; expected "
                    "an exercise on a slide (or name its option)"
                )
            return *self.slides[ex.stem], ex.anchor
        hint = did_you_mean(target, [*self.names, *self.exercises])
        raise RefError(
            f"ref({target!r}) names no slide and no exercise{hint}; "
            f"{RENAMED}; expected a slide's file stem without its number "
            "(e.g. "
            f"'{next(iter(self.names), 'title')}') or an exercise's id "
            f"({', '.join(sorted(self.exercises)) or 'none has one'})"
        )

    def letter(self, exercise: str, option: str) -> str:
        if exercise not in self.exercises:
            self._slide(exercise)  # raises, with the known ids
            raise RefError(
                f"ref({exercise!r}, {option!r}): '{exercise}' is a slide, "
                "not an exercise; expected an exercise id before an option "
                "id"
            )
        options = self.exercises[exercise].options
        if option not in options:
            raise RefError(
                f"ref({exercise!r}, {option!r}): exercise '{exercise}' has "
                f"no option with id '{option}'; expected one of: "
                + (
                    ", ".join(sorted(options))
                    or "none: give the option an 'id: …' to name it"
                )
            )
        return options[option]

    def render(
        self,
        target: str,
        option: str | None = None,
        *,
        page: str,
        to: str | None = None,
        cap: bool = False,
        html: bool = False,
    ) -> str:
        """A linked "slide N", a range, or an option's letter, on the page
        ``page`` (a src_uri); ``html`` links to the built page (exercise
        text, which MkDocs does not rewrite)."""
        if not isinstance(target, str) or not isinstance(option, str | None):
            raise RefError(
                "ref() takes ids as strings; expected "
                'ref("slide-stem"), ref("exercise-id", "option-id")'
            )
        if option is not None:
            # Marked, so that the letter follows its option when the page
            # reshuffles them (exercises.js).
            letter = self.letter(target, option)
            if html:  # exercise text, whose raw HTML is off: marked after
                return f"\u27e6{target}|{letter}\u27e7"
            return _letter_span(target, letter)
        number, src_uri, anchor = self._slide(target)
        word = "Slide" if cap else "slide"
        first = _link(page, src_uri, anchor, html)
        if to is None:
            return f"[{word} {number}]({first})"
        end, end_uri, end_anchor = self._slide(to)
        if end <= number:
            raise RefError(
                f"ref({target!r}, to={to!r}): slide {end} is not after "
                f"slide {number}; expected a range in the deck's order"
            )
        last = _link(page, end_uri, end_anchor, html)
        return f"{word}s [{number}]({first})–[{end}]({last})"

    def expand(self, text: str, *, page: str) -> str:
        """Exercise text with every ref call replaced; an option's letter
        as a token that ``mark_letters`` marks once the text is HTML (the
        exercise's Markdown shows raw HTML as text)."""

        def one(m: re.Match) -> str:
            try:
                args, kwargs = _arguments(m["args"])
                return self.render(*args, page=page, html=True, **kwargs)
            except (SyntaxError, RefError, TypeError, ValueError):
                return m[0]  # ``check`` reports it at its file and line

        return _CALL.sub(one, text)

    def fingerprint(self) -> str:
        """What a page's rendered references depend on (serve's cache)."""
        exercises = sorted(
            (k, v.src_uri, sorted(v.options.items()))
            for k, v in self.exercises.items()
        )
        return repr((sorted(self.slides.items()), exercises))

    def check(self, deck) -> list[Problem]:
        """Every reference of the deck's pages and of the Python under
        ``CODE_DIRS``, at its file and line."""
        problems = list(self.problems)
        for page in deck.pages:
            for m in _CALL.finditer(page.text):
                if message := self._check_call(m, deck.docs_rel(page)):
                    line = _line(page.text, m)
                    problems.append(Problem(page.path, line, message))
            stem = Path(deck.docs_rel(page)).stem
            for line, text in prose_lines(page):
                problems += (
                    Problem(page.path, line, self._typed(m, stem))
                    for m in _TYPED.finditer(_CODE.sub(" ", text))
                )
        # A deck that holds none of the slides the code names (a test
        # fixture reusing mha_ref) is not the deck the code is about.
        found = []  # (file, line, stem, anchor)
        for folder in CODE_DIRS:
            for path in sorted((Path(deck.root) / folder).rglob("*.py")):
                rel = path.relative_to(deck.root).as_posix()
                text = path.read_text(encoding="utf-8", errors="replace")
                for m in _ADDRESS.finditer(text):
                    found.append((rel, _line(text, m), m["stem"], m["anchor"]))
        if any(stem in self.slides for _, _, stem, _ in found):
            for rel, line, stem, anchor in found:
                if message := self._check_address(stem, anchor):
                    problems.append(Problem(rel, line, message))
        return problems

    def _check_call(self, m: re.Match, src_uri: str) -> str | None:
        try:
            args, kwargs = _arguments(m["args"])
        except (SyntaxError, ValueError):
            return (
                f"{m[0]}: expected ids as quoted strings, e.g. "
                '{{ ref("40-rule-out-three-check-yourself-reshape-'
                'order") }} or {{ ref("exercise-id", "option-id") }}'
            )
        if set(kwargs) - {"to", "cap"} or not 1 <= len(args) <= 2:
            return (
                f"{m[0]}: expected ref(slide or exercise id), "
                "ref(exercise id, option id), or ref(first, to=last); "
                "keyword arguments: to, cap"
            )
        named = [*args, kwargs.get("to")]
        if any(isinstance(n, str) and n in self.unparsed for n in named):
            return None  # its exercise's YAML error is reported there
        try:
            self.render(*args, page=src_uri, **kwargs)
        except (RefError, TypeError) as exc:
            return str(exc)
        return None

    def _typed(self, m: re.Match, stem: str) -> str:
        """What to write instead of a typed "slide 40" or "option C"."""
        typed = m[0]
        if m["slide"]:
            named = [
                _NUMBER.sub("", s)
                for s, (n, _) in self.slides.items()
                if n == int(m["number"])
            ]
            call = f'{{{{ ref("{named[0] if named else "slide-stem"}") }}}}'
            return (
                f"{typed!r} is typed by hand, and slides move; write {call} "
                "(a slide's file name without its number and .md), which "
                "renders the number and links to it"
            )
        named = [
            f'{{{{ ref("{ex_id}", "{option}") }}}}'
            for ex_id, ex in self.exercises.items()
            for option, at in ex.options.items()
            if ex.stem == stem and at == m["letter"]
        ]
        write = (
            f"write {' or '.join(named)}"
            if named
            else "give the option an id (- id: its-name) and write "
            '{{ ref("exercise-id", "its-name") }}'
        )
        return (
            f"{typed!r} is typed by hand, and options get reordered; "
            f"{write}, which renders its letter"
        )

    def _check_address(self, stem: str, anchor: str | None) -> str | None:
        if stem not in self.slides:
            return (
                f"slides/{stem}.html names no slide"
                f"{did_you_mean(stem, self.slides)}; {RENAMED}; expected "
                "the address of a page of docs/slides/"
            )
        if anchor is None or any(  # its YAML's error is the problem
            anchor == f"ex-{name}" or anchor.startswith(f"ex-{name}-")
            for name in self.unparsed
        ):
            return None
        anchors = set()
        for ex in self.exercises.values():
            if ex.stem == stem:
                anchors.add(ex.anchor)
                anchors.update(f"{ex.anchor}-{opt}" for opt in ex.options)
        if anchor not in anchors:
            return (
                f"slides/{stem}.html#{anchor} names no exercise or option "
                "on that slide; expected one of: "
                + (", ".join(sorted(anchors)) or "(none has an id)")
            )
        return None


def _letter_span(target: str, letter: str) -> str:
    return (
        f'<span data-ex-in="ex-{target}" data-ex-letter-of="{letter}">'
        f"{letter}</span>"
    )


_LETTER_TOKEN = re.compile("\u27e6([a-z0-9-]+)\\|([A-Z])\u27e7")


def mark_letters(fragment_html: str) -> str:
    """An exercise's HTML with each option letter ``expand`` left as a
    token marked as in the prose, so it follows a reshuffle."""
    return _LETTER_TOKEN.sub(lambda m: _letter_span(m[1], m[2]), fragment_html)


def _line(text: str, m: re.Match) -> int:
    return text.count("\n", 0, m.start()) + 1


def _link(page: str, src_uri: str, anchor: str, html: bool) -> str:
    target = src_uri[: -len(".md")] + ".html" if html else src_uri
    rel = posixpath.relpath(target, posixpath.dirname(page) or ".")
    if src_uri == page:
        rel = ""
    return rel + (f"#{anchor}" if anchor else "") or "#"
