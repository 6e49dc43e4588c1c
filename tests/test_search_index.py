"""Search finds lessons, not answers.

The built ``search/search_index.json`` must hold no exercise answer
(answers, explanations, "why it tempts" notes, model answers, bucket
explanations, the "Verify it" runs that show them) and no instructor
note, while every slide stays findable.
The texts to look for come from the slide sources (read by
``lessonbuild.deck``), not from the renderer: a phrase of six or more
words from each is searched for in the index's text.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from lessonbuild.deck import read_deck
from lessonbuild.yamltext import load_yaml

ROOT = Path(__file__).resolve().parents[1]
DECK = read_deck(ROOT)
# Keys of an exercise fence whose text gives the answer away.
ANSWER_KEYS = ("answer", "explanation", "why", "tempts")
WORDS = 6  # a phrase this long is not found by chance


def _squash(text: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return " ".join(text.split()).lower()


def _plain(markdown: str) -> list[str]:
    """The prose pieces between math, code and markup, lowercased."""
    pieces = re.split(
        r"\\\(.*?\\\)|\\\[.*?\\\]|`[^`]*`|\*\*?|[_\[\]()|#>]",
        markdown,
        flags=re.S,
    )
    return [" ".join(p.split()).lower() for p in pieces if p.strip()]


def _phrases(markdown: str) -> list[str]:
    """Runs of WORDS plain words."""
    found = []
    for piece in _plain(markdown):
        words = piece.split()
        for start in range(0, len(words) - WORDS + 1, WORDS):
            found.append(" ".join(words[start : start + WORDS]))
    return found


def _texts(data, answers: bool) -> list[str]:
    """The answer-giving values of an exercise's YAML (``answers``), or
    every other text in it (what the student is shown)."""
    out = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, str):
                if (key in ANSWER_KEYS) == answers:
                    out.append(value)
            else:
                out += _texts(value, answers)
    elif isinstance(data, list):
        for value in data:
            if isinstance(value, str):
                if not answers:
                    out.append(value)
            else:
                out += _texts(value, answers)
    return out


def _verify_folds(slide) -> list[tuple[int, int, str]]:
    """(first line, end, text) of each ``??? verify`` fold: the run that
    shows an exercise's answer, hidden until it is attempted."""
    lines = slide.text.splitlines()
    folds = []
    for n, line in enumerate(lines):
        if re.match(r"\?\?\?\+? verify\b", line):
            end = n + 1
            while end < len(lines) and (
                not lines[end].strip() or lines[end].startswith("    ")
            ):
                end += 1
            folds.append((n, end, "\n".join(lines[n + 1 : end])))
    return folds


def _shown_openly(slide) -> str:
    """What the slide shows anyway: prose and code outside exercises and
    instructor notes, the code it includes, and each exercise's question,
    options and items.
    An answer phrase the slide also teaches there is not a leak."""
    hidden = set()
    shown = []
    for fence in slide.exercises:
        hidden.update(range(fence.start, fence.end + 1))
        data, _ = load_yaml(fence.body)
        shown += _texts(data, answers=False)
    for note in slide.notes:
        hidden.update(range(note.line - 1, note.end))
    for start, end, _ in _verify_folds(slide):
        hidden.update(range(start, end))
    lines = slide.text.splitlines()
    shown += [line for n, line in enumerate(lines) if n not in hidden]
    # Included code is shown too (whole files: a superset is enough).
    for include in slide.includes:
        path = ROOT / include.path
        if path.is_file():
            shown.append(path.read_text(encoding="utf-8"))
    return " | ".join(_plain("\n".join(shown)))


def _secrets() -> list[tuple[str, str, str]]:
    """(where, what, phrase) for every answer and instructor note phrase
    the slide does not also show openly."""
    secrets = []
    for slide in DECK.slides:
        openly = _shown_openly(slide)
        for fence in slide.exercises:
            data, _ = load_yaml(fence.body)
            where = f"{slide.path}:{fence.line}"
            for text in _texts(data, answers=True):
                secrets += [
                    (where, "answer", p)
                    for p in _phrases(text)
                    if p not in openly
                ]
        for note in slide.notes:
            where = f"{slide.path}:{note.line}"
            secrets += [
                (where, "instructor note", p)
                for p in _phrases(note.text)
                if p not in openly
            ]
        for start, _, text in _verify_folds(slide):
            where = f"{slide.path}:{start + 1}"
            secrets += [
                (where, "verify fold", p)
                for p in _phrases(text)
                if p not in openly
            ]
    return secrets


@pytest.fixture(scope="module")
def index(built_site) -> list[dict]:
    path = built_site / "search" / "search_index.json"
    return json.loads(path.read_text(encoding="utf-8"))["docs"]


def test_secrets_are_found_in_the_sources():
    """The probe itself works: the deck has answers, notes and Verify
    folds to look for."""
    kinds = {what for _, what, _ in _secrets()}
    assert kinds == {"answer", "instructor note", "verify fold"}


def _page_texts(index: list[dict]) -> dict[str, str]:
    """Page (location without #anchor) -> all its index text, squashed."""
    pages: dict[str, list[str]] = {}
    for d in index:
        page = d["location"].split("#")[0]
        pages.setdefault(page, []).append(
            _squash(d["title"] + " " + d["text"])
        )
    return {page: " ".join(texts) for page, texts in pages.items()}


def _leaks(index, pick) -> dict[str, str]:
    """Secrets found in the index text of the pages ``pick`` chooses."""
    pages = _page_texts(index)
    leaked = {}
    for where, what, phrase in _secrets():
        own = where.split(":")[0]
        own = DECK.docs_rel(DECK.page(own))[: -len(".md")] + ".html"
        for page, text in pages.items():
            if pick(page, own) and phrase in text:
                leaked.setdefault(f"{where} ({what}) in {page}", phrase)
    return leaked


def test_slides_index_no_answer_or_note(index):
    """A slide's own entry holds none of its answers or notes. (Another
    slide may teach what an earlier exercise asked: that is the lesson,
    and searching for it should find it.)"""
    leaked = _leaks(index, lambda page, own: page == own)
    assert not leaked, (
        "search_index.json holds answer or instructor-note text; mark its "
        "HTML data-search-exclude (exercises/templates, the instructor "
        f"admonition): {leaked}"
    )


def test_notebooks_index_no_answer_or_note(index):
    """The deck notebook's pages hold no answer or note either."""
    leaked = _leaks(index, lambda page, own: page.startswith("notebooks/"))
    assert not leaked, (
        "a notebook page's search entry holds exercise answers or notes: "
        "leave exercise fences and instructor notes out of the deck "
        "notebook (lessonbuild/notebooks.py) or exclude those cells from "
        f"search: {leaked}"
    )


def test_every_slide_is_still_indexed(index):
    """Excluding answers must not drop a slide from search."""
    located = {d["location"].split("#")[0] for d in index}
    missing = [
        slide.path
        for slide in DECK.slides
        if DECK.docs_rel(slide)[: -len(".md")] + ".html" not in located
    ]
    assert not missing, f"slides with no search entry: {missing}"


# --- what search finds, and how its previews read (issue 30) -------------


@pytest.fixture(scope="module")
def search_data(built_site) -> dict:
    path = built_site / "search" / "search_index.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _slide_page(number: int) -> str:
    (slide,) = [s for s in DECK.slides if s.number == number]
    return DECK.docs_rel(slide)[: -len(".md")] + ".html"


def _words(search_data: dict, page: str) -> set[str]:
    """The words lunr indexes for ``page``: its entries' title and text
    split with the index's own separator, lowercased (lunr's pipeline
    also lowercases)."""
    separator = re.compile(search_data["config"]["separator"])
    words = set()
    for entry in search_data["docs"]:
        if entry["location"].split("#")[0] != page:
            continue
        text = html.unescape(
            re.sub(r"<[^>]+>", " ", entry["title"] + " " + entry["text"])
        )
        words |= {w.lower() for w in separator.split(text) if w}
    return words


@pytest.mark.parametrize(
    "number,word",
    [(20, "gqa"), (51, "causal"), (53, "token")],
)
def test_words_in_parentheses_are_found(search_data, number, word):
    """ "(GQA)", "(causal)", "(torchtext or …)": the bracket ends the word,
    so the word itself is in the index."""
    words = _words(search_data, _slide_page(number))
    assert words, f"slide {number} has no search entry"
    assert word in words, (
        f"search does not find {word!r} on slide {number}; the search "
        "plugin's separator (mkdocs.yml) must split at brackets"
    )


def test_previews_show_formulas_as_text(index):
    """No entry holds raw TeX: formulas read as text (d_k = d_model/h)."""
    raw = [
        d["location"]
        for d in index
        if re.search(r"\\[()\[\]]|\\text\{|\\frac", d["title"] + d["text"])
    ]
    assert raw == [], (
        "search previews show raw TeX; lessonbuild.searchtext."
        f"readable_index should have rewritten them: {raw}"
    )
    everything = " ".join(d["text"] for d in index)
    assert "d_k = d_model/h" in everything  # slide 7's formula, as text


def test_index_holds_no_widget_chrome_or_notebook_prompts(index):
    """Buttons, drop-downs, notebook prompts and copy notices are not
    lesson text."""
    chrome = ["Move up", "Move down", "Choose a bucket", "In [", "Copied!",
              # The answer boxes' labels: 0.6 KB of every first visit.
              "Your notes", "Your prediction"]  # fmt: skip
    found = {
        (c, d["location"])
        for d in index
        for c in chrome
        if c in html.unescape(d["text"])
    }
    assert found == set(), (
        "search indexes page chrome; mark it data-search-exclude "
        f"(lessonbuild.searchtext.exclude_from_search): {sorted(found)}"
    )


def test_no_title_in_the_index_ends_in_a_heading_link(index):
    """A heading's permalink sign is chrome: nbconvert's "¶" link ended
    every notebook heading's result title ("After the milestones:
    masks¶", a student's search on a phone)."""
    signs = sorted(
        f"{d['location']}: {d['title']!r}"
        for d in index
        if "¶" in d["title"] or "¶" in d["text"]
    )
    assert signs == [], signs


def test_every_excluded_element_holds_none_of_its_own_tag(built_site):
    """Material's search parser remembers skipped elements by tag name,
    so a ``<div data-search-exclude>`` stops being skipped at the first
    ``</div>`` inside it, and the rest of it is indexed (the notebooks'
    code cells were, twice each)."""
    from bs4 import BeautifulSoup

    nested = set()
    for page in built_site.rglob("*.html"):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for el in soup.select("[data-search-exclude]"):
            if el.find(el.name):
                where = page.relative_to(built_site).as_posix()
                nested.add((where, el.name, " ".join(el.get("class", []))))
    assert nested == set(), sorted(nested)[:5]


def test_notebook_code_cells_are_not_indexed(index, built_site):
    """A notebook page is indexed by its Markdown cells: its code (the
    copy button's text holds each cell's source) is not lesson text."""
    from bs4 import BeautifulSoup

    leaked, checked = [], 0
    for page in sorted(built_site.glob("notebooks/*.html")):
        rel = page.relative_to(built_site).as_posix()
        text = _squash(
            " ".join(d["text"] for d in index if d["location"].startswith(rel))
        )
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for cell in soup.select(".clipboard-copy-txt"):
            source = _squash(cell.get_text())
            if len(source) < 30:
                continue
            checked += 1
            if source[:60] in text:
                leaked.append((rel, source[:60]))
    assert checked > 20
    assert leaked == [], leaked[:5]


@pytest.mark.parametrize(
    "tex,text",
    [
        (r"d_k = \frac{d_{\text{model}}}{h}", "d_k = d_model/h"),
        (r"\text{softmax}(QK^\top/\sqrt{d_k})\,V", "softmax(QKᵀ/√d_k) V"),
        (
            r"\begin{aligned} \#\text{params} &= \underbrace{h \cdot d_k}"
            r"_{W^Q} \\ &= 4\,d_{\text{model}}^2 \end{aligned}",
            "#params = h · d_k = 4 d_model²",
        ),
    ],
)
def test_tex_reads_as_text(tex, text):
    from lessonbuild.searchtext import tex_to_text

    assert tex_to_text(tex) == text


def test_formulas_in_the_index_read_without_entities(index):
    """The index holds HTML, so a formula's TeX arrives escaped: read as
    TeX, "&lt;" and an aligned "&amp;=" left "g lt; h" and "amp;=" in
    the results a student saw (a fresh student's search for GQA)."""
    from lessonbuild.searchtext import readable

    assert readable(r"only \(g &lt; h\) heads") == "only g &lt; h heads"
    assert readable(r"\[a &amp;= b\]") == "a = b"
    text = " ".join(d["title"] + " " + d["text"] for d in index)
    assert re.findall(r"(?<!&)\b(?:amp|lt|gt);", text) == []


def test_the_index_is_written_as_utf8_not_escapes(built_site):
    """Every first visit downloads the index: written with each character
    outside ASCII as six bytes of escape (\\u2014), it is 1.1 KB bigger
    than the same JSON in UTF-8; what a search finds is the same."""
    raw = (built_site / "search" / "search_index.json").read_bytes()
    text = raw.decode("utf-8")
    assert "—" in text and "\\u2014" not in text
    data = json.loads(text)
    assert data["docs"] and all("location" in d for d in data["docs"])


def test_tables_of_numbers_are_not_indexed_tables_of_words_are(
    index, built_site
):
    """A table of numbers read in search as a run of digits ("1 512
    268,435,456 33,554,432 ...": 1 KB of the index every first visit
    downloads); a table of words stays findable."""
    from bs4 import BeautifulSoup

    text = _squash(" ".join(d["text"] for d in index))
    numbers, words = [], []
    for page in sorted((built_site / "slides").glob("*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for table in soup.select(".md-content table"):
            if table.find_parent(["details", "form"]) or table.find_parent(
                class_="exercise"
            ):
                continue  # an exercise's or a fold's: not the page's text
            cells = [
                (" ".join(td.get_text().split()), td.find(class_="katex"))
                for td in table.find_all("td")
            ]
            if cells and all(re.fullmatch(r"[\d,.]+", c) for c, _ in cells):
                row = " ".join(c for c, _ in cells[:3])
                numbers.append((page.name, row))
            words += [
                (page.name, c)
                for c, math in cells
                if not math and len(re.findall(r"[a-z]{4,}", c)) > 1
            ]
    assert numbers and words, (numbers, words)
    indexed = [(p, r) for p, r in numbers if r in text]
    assert indexed == [], indexed

    def said(page: str) -> set[str]:  # the words the page's entries hold
        entries = [d["text"] for d in index if d["location"].startswith(page)]
        return set(re.findall(r"[a-z]{4,}", _squash(" ".join(entries))))

    lost = [
        (p, c)
        for p, c in words
        if not set(re.findall(r"[a-z]{4,}", c.lower())) <= said(f"slides/{p}")
    ]
    assert lost == [], lost
