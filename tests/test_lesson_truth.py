"""The built slides say only what is true (issue 10).

Greps the built site for editing notes and stale torch versions, checks
that slide 51's program needs nothing but torch and prints exactly its
Output block when run alone, and that the prose keeps one notation
(d_model, h, d_k, T, B). The built site comes from LESSON_SITE_DIR
(default site/); the site checks skip when it has not been built.
"""

from __future__ import annotations

import ast
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lessonbuild.deck import read_deck
from lessonbuild.settings import read_settings

ROOT = Path(__file__).resolve().parents[1]
PIN = "2.13.0"
FULL_PROGRAM = ROOT / "snippets" / "51_full_program.py"

# Editing notes a student must never see: there is no "original" to them.
FORBIDDEN = [
    "original slide",
    "errata",
    "erratum",
    "the lesson's version",
    "the lesson's module",
    "the lesson's forward",
    "source slide",
]
TORCH_VERSION = re.compile(r"\btorch\s*(?:==\s*)?v?(\d+\.\d+(?:\.\d+)?)")

# Prose (outside code, math and exercise fences) keeps the lesson's
# symbols. Each pattern names what to write instead.
NOTATION = [
    (re.compile(r"\bnum_heads\b"), "h (num_heads only inside code)"),
    (re.compile(r"\bseq_len\b"), "T"),
    (re.compile(r"\bseq\s*="), "T="),
    (re.compile(r"\(B, T, D\)"), "(B, T, d_model)"),
    (re.compile(r"\bQ_h\b|\bK_h\b|\bV_h\b"), "Q_heads / K_heads / V_heads"),
    (re.compile(r"\bd_v\b"), "d_k (this lesson has d_v = d_k)"),
]
# Titles quoted by exercises on other slides keep their wording until the
# exercises change with them (ARCHITECTURE.md, "Notation").
TITLE_EXEMPT = {15: "seq=4, batch=1"}
# The numbered parts ("Part N — ..."), as mkdocs.yml lists them.
NUMBERED_PARTS = [
    p for p in read_settings(ROOT).parts if re.match(r"Part \d", p)
]


def site_dir() -> Path:
    site = ROOT / os.environ.get("LESSON_SITE_DIR", "site")
    if not (site / "index.html").is_file():
        pytest.skip(f"no built site in {site} (build it, or LESSON_SITE_DIR)")
    return site


def slide_pages(site: Path) -> list[Path]:
    pages = sorted((site / "slides").glob("*.html"))
    assert len(pages) >= 55, f"{site}/slides holds {len(pages)} pages"
    return pages


def visible_text(page: Path) -> str:
    raw = page.read_text(encoding="utf-8")
    raw = raw.split('<article class="md-content__inner', 1)[-1]
    raw = raw.split("</article>", 1)[0]
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", raw))
    return re.sub(r"\s+", " ", text)


def test_built_slides_carry_no_editing_notes():
    found = []
    for page in slide_pages(site_dir()):
        text = visible_text(page).lower()
        found += [f"{page.name}: {p!r}" for p in FORBIDDEN if p in text]
    assert found == [], (
        "student-facing slides mention an original they never saw; "
        "reword in docs/slides/<page>.md: " + "; ".join(found)
    )


def test_built_slides_name_only_the_pinned_torch():
    found = []
    for page in slide_pages(site_dir()):
        for m in TORCH_VERSION.finditer(visible_text(page)):
            if m.group(1) != PIN:
                found.append(f"{page.name}: torch {m.group(1)}")
    assert found == [], (
        f"slides cite torch versions other than the pinned {PIN}: "
        + "; ".join(found)
    )


def show_section(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    m = re.search(
        r"^[ \t]*# --8<-- \[start:show\]\n(.*?)^[ \t]*# --8<-- \[end:show\]",
        text,
        re.M | re.S,
    )
    assert m, f"{path}: no show section"
    return m.group(1)


def test_full_program_imports_only_torch():
    """Slide 51's shown program must run after a plain copy and paste."""
    tree = ast.parse(show_section(FULL_PROGRAM))
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules.append(node.module or "")
    others = [m for m in modules if m.split(".")[0] != "torch"]
    assert modules, f"{FULL_PROGRAM}: the program imports nothing"
    assert others == [], (
        f"{FULL_PROGRAM}: the shown program imports {others}; a student "
        "copying slide 51 has only torch"
    )


def test_full_program_alone_prints_its_output_block(tmp_path):
    """Run exactly what slide 51 shows, in an empty folder, no mha_ref."""
    program = tmp_path / "my_mha.py"
    program.write_text(show_section(FULL_PROGRAM), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": ""}
    run = subprocess.run(
        [sys.executable, "-I", str(program)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    deck = read_deck(ROOT)
    (slide,) = [s for s in deck.slides if s.number == 51]
    outputs = [f for f in slide.fences if f.is_output]
    assert outputs, "slide 51 has no Output block"
    assert run.stdout.rstrip("\n") == outputs[0].body.rstrip("\n"), (
        "slide 51's program, run alone, prints something else than its "
        "Output block; run `python -m lessonbuild update`"
    )


def prose_lines(slide) -> list[tuple[int, str]]:
    """Lines of a slide outside front matter, fences, math and the H1."""
    skip = set()
    for fence in slide.fences:
        end = fence.end if fence.end is not None else len(slide.lines)
        skip.update(range(fence.start, end + 1))
    front = 0
    bare = [line.strip() for line in slide.lines]
    if bare and bare[0] == "---" and "---" in bare[1:]:
        front = bare.index("---", 1) + 1  # past the closing ---
    lines = []
    in_math = False
    for i, line in enumerate(slide.lines):
        if i < front or i in skip:
            continue
        if line.strip() == "\\[":
            in_math = True
        if in_math:
            in_math = line.strip() != "\\]"
            continue
        if line.startswith("# ") or "--8<--" in line:
            continue
        text = re.sub(r"`[^`]*`", "", line)  # inline code keeps its names
        for exempt in TITLE_EXEMPT.values():  # links quoting such a title
            text = text.replace(exempt, "")
        text = re.sub(r"\\\(.*?\\\)", "", text)  # inline math
        lines.append((i + 1, text))
    return lines


def test_prose_keeps_one_notation():
    deck = read_deck(ROOT)
    found = []
    for slide in deck.pages:
        for line, text in prose_lines(slide):
            for pattern, instead in NOTATION:
                if pattern.search(text):
                    found.append(f"{slide.path}:{line}: write {instead}")
    assert found == [], "notation drifts:\n" + "\n".join(found)


def test_titles_read_as_titles():
    """No generated 'Kind: Other slide's title' compounds, no old parts."""
    deck = read_deck(ROOT)
    bad = []
    for slide in deck.slides:
        title = slide.title
        if title.count(":") > 1 or " for The " in title:
            bad.append(f"{slide.path}: {title!r}")
        if "Lesson 81:" in title and slide.number != 1:
            bad.append(f"{slide.path}: {title!r}")
        exempt = TITLE_EXEMPT.get(slide.number)
        if re.search(r"\bseq\s*=|\bbatch\s*=", title) and not (
            exempt and exempt in title
        ):
            bad.append(f"{slide.path}: {title!r} (write T=, B=)")
        if f"# {title}" not in slide.text:
            bad.append(f"{slide.path}: H1 differs from title {title!r}")
        for m in re.finditer(r"Part (\d) of (\d)", slide.text):
            if int(m.group(2)) != len(NUMBERED_PARTS):
                bad.append(
                    f"{slide.path}: {m.group(0)!r} (the lesson has "
                    f"{len(NUMBERED_PARTS)} numbered parts, mkdocs.yml)"
                )
            elif not slide.part.startswith(f"Part {m.group(1)} "):
                bad.append(f"{slide.path}: {m.group(0)!r} in {slide.part!r}")
    assert bad == [], "titles to fix:\n" + "\n".join(bad)


def test_full_program_builds_its_mask_on_the_inputs_device():
    """Slide 51: a mask made on the CPU fails on a GPU ("expected self and
    mask to be on the same device"). Checked without a GPU: on the meta
    device, another device than the CPU, is_causal must still run."""
    import torch

    namespace: dict = {"__name__": "my_mha"}
    exec(show_section(FULL_PROGRAM).split("def torch_twin")[0], namespace)
    module = namespace["MultiHeadAttention"](8, 2).to("meta")
    x = torch.empty(1, 4, 8, device="meta")  # (B, T, d_model)
    out, weights = module(x, x, x, is_causal=True)
    assert weights.device.type == "meta" and weights.shape == (1, 2, 4, 4)


def test_is_causal_behaves_as_the_slides_say():
    """Slide 53 and mha_ref's docstring: top-left alignment at T_q != T_k;
    mha_ref's mask with is_causal equal to F.scaled_dot_product_attention
    given the two combined (its documentation forbids attn_mask with
    is_causal, which the slide says); nn.MultiheadAttention refusing
    is_causal without attn_mask."""
    import torch
    import torch.nn.functional as F

    from mha_ref import scaled_dot_product_attention

    torch.manual_seed(0)
    q = torch.randn(1, 2, 3, 4)  # (B, h, T_q, d_k)
    k, v = torch.randn(2, 1, 2, 5, 4)  # (B, h, T_k, d_k) each
    top_left = torch.ones(3, 5, dtype=torch.bool).tril()
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=top_left)
    torch.testing.assert_close(fused, masked)
    real = torch.tensor([[True, True, True, True, False]])  # (1, T_k)
    both = F.scaled_dot_product_attention(q, k, v, attn_mask=top_left & real)
    ours, _ = scaled_dot_product_attention(q, k, v, mask=real, is_causal=True)
    torch.testing.assert_close(both, ours)
    documented = F.scaled_dot_product_attention.__doc__
    assert "error is thrown if both attn_mask and is_causal" in documented
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, 4, 8)  # (B, T, d_model)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        mha(x, x, x, is_causal=True)


def test_slide_53_says_which_backend_refuses_attn_mask_with_is_causal():
    """Slide 53 said F.scaled_dot_product_attention refuses attn_mask with
    is_causal=True "with dropout_p > 0 or on a GPU". The refusal lives in
    the math backend (dropout_p > 0 takes it on the CPU); the default CPU
    path accepts the pair, and on CUDA the fused backends are reported to
    accept it too (pytorch/pytorch#187801): no build here checks a GPU,
    so the slide names the backend, not a device."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 1, 3, 4)  # (B, h, T_q, d_k)
    k, v = torch.randn(2, 1, 1, 5, 4)  # (B, h, T_k, d_k) each
    both = {"attn_mask": torch.ones(3, 5, dtype=torch.bool), "is_causal": True}
    F.scaled_dot_product_attention(q, k, v, **both)  # the default path
    with pytest.raises(RuntimeError, match="attn_mask should not be set"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, **both)
    with (
        pytest.raises(RuntimeError, match="attn_mask should not be set"),
        sdpa_kernel(SDPBackend.MATH),
    ):
        F.scaled_dot_product_attention(q, k, v, **both)
    (slide,) = (ROOT / "docs" / "slides").glob("53-*.md")
    text = re.sub(r"\s+", " ", slide.read_text())
    assert "on a GPU" not in text, "slide 53 claims a GPU's behaviour"
    assert "math backend" in text and "default path accepts" in text


def test_slide_53_gives_nn_multiheadattention_masks_in_its_shapes():
    """Slide 53 told the reader to pass nn.MultiheadAttention `~mask`,
    next to a (B, 1, 1, T_k) padding mask, which it refuses (4-D): the
    slide names its shapes, (B, T_k) for key_padding_mask and (T_q, T_k)
    or (B*h, T_q, T_k), batch-major, for attn_mask, as checked here."""
    import torch

    from mha_ref import MultiHeadAttention, padding_mask, to_torch_mha

    torch.manual_seed(0)
    B, h, T = 2, 2, 4
    ours = MultiHeadAttention(8, h)
    theirs = to_torch_mha(ours)
    x = torch.randn(B, T, 8)  # (B, T, d_model)
    for name in ("key_padding_mask", "attn_mask"):
        with pytest.raises(AssertionError, match="4-D"):
            theirs(x, x, x, **{name: ~padding_mask([4, 2], T)})
    allowed = torch.rand(B, h, T, T) > 0.3  # (B, h, T_q, T_k)
    allowed[..., 0] = True  # no row without a key
    out, _ = ours(x, x, x, mask=allowed)
    blocked = ~allowed.reshape(B * h, T, T)  # sequence b, head i: b*h + i
    torch.testing.assert_close(theirs(x, x, x, attn_mask=blocked)[0], out)
    (slide,) = (ROOT / "docs" / "slides").glob("53-*.md")
    text = re.sub(r"\s+", " ", slide.read_text())
    assert "refuses 4-D masks" in text
    assert "~mask.reshape(B * h, T_q, T_k)" in text


TRACE = ROOT / "snippets" / "15_trace.py"
#: The slides that walk the trace's toy layer by its numbers (titles,
#: prompts, answers, notes).
TRACE_SLIDES = ("14-", "15-", "16-")
#: How those slides name each number: a title's "T=4", TeX's "d_k = 4",
#: "d_k = T = 4", "one 4×4 matrix per head". (Slide 15's batch_first
#: section reads the same tensor as T = 1, B = 4 on purpose: spaced T
#: and B are left out there.)
TRACE_NAMES = [
    (r"\bd_model=(\d+)|d_\{\\text\{model\}\} = (\d+)", "d_model"),
    (r"\bh ?= ?(\d+)", "h"),
    (r"\bd_k ?= ?(\d+)|d_k = T = (\d+)|T = d_k = (\d+)", "d_k"),
    (
        r"\b(?:seq|T)=(\d+)|d_k = T = (\d+)|T = d_k = (\d+)|(\d+)×\d+ matrix",
        "T",
    ),
    (r"\b(?:batch|B)=(\d+)", "B"),
]
SPACED = [(r"\\\(T = (\d+)\\\)", "T"), (r"\\\(B = (\d+)\\\)", "B")]


#: The toy layer's settings the trace's snippet assigns.
TRACED = ("d_model", "h", "T")


def stale_trace_numbers(snippet: str, slides: dict[str, str]) -> list[str]:
    """Each number slides 14-16 type for the trace's toy layer that is
    not what the snippet sets (``d_model, h, T = 8, 2, 4``, a batch of
    ``torch.randn(B, T, d_model)``)."""
    sets = {k: v for k, v in settings_of(snippet).items() if k in TRACED}
    for node in ast.walk(ast.parse(snippet)):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "torch.randn"
        ):
            sets["B"] = ast.literal_eval(node.args[0])
    sets["d_k"] = sets["d_model"] // sets["h"]
    found = []
    for name, text in slides.items():
        names = TRACE_NAMES + (SPACED if not name.startswith("15-") else [])
        for n, line in enumerate(text.splitlines(), 1):
            for pattern, what in names:
                for match in re.finditer(pattern, line):
                    typed = int(next(g for g in match.groups() if g))
                    if typed != sets[what]:
                        found.append(
                            f"{name}:{n}: {what} typed as {typed}, the "
                            f"snippet sets {sets[what]}"
                        )
    return found


def _trace_slides() -> dict[str, str]:
    folder = ROOT / "docs" / "slides"
    return {
        p.name: p.read_text()
        for p in sorted(folder.glob("*.md"))
        if p.name.startswith(TRACE_SLIDES)
    }


def test_the_trace_slides_name_the_numbers_the_snippet_sets():
    """A contributor set T = 5 in snippets/15_trace.py, accepted its
    Output and built green, and a dozen 4s stayed on slides 14-16
    (titles, the prompt, the answer's "4×4 matrix per head", the notes'
    "d_k = T = 4"): the numbers of the toy layer are typed there by the
    course author, and no build check ties an input to prose. This one
    does, for these slides."""
    slides = _trace_slides()
    assert len(slides) == 3, sorted(slides)
    assert stale_trace_numbers(TRACE.read_text(), slides) == []
    # And it sees the contributor's change.
    changed = TRACE.read_text().replace(
        "d_model, h, T = 8, 2, 4", "d_model, h, T = 8, 2, 5"
    )
    stale = stale_trace_numbers(changed, slides)
    assert len(stale) >= 8, stale
    # Prose, prompts and notes, not only the titles (lines 2 and 8).
    lines = {int(s.split(":")[1]) for s in stale}
    assert lines - {2, 8}, stale


def settings_of(source: str) -> dict[str, object]:
    """A snippet's top-level settings: each name assigned a literal
    (``d_model, T = 512, 128``), with its value."""
    found = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = (
            zip(target.elts, value.elts, strict=False)
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
            else [(target, value)]
        )
        for name, literal in pairs:
            if isinstance(name, ast.Name):
                try:
                    found[name.id] = ast.literal_eval(literal)
                except ValueError:
                    pass
    return found


#: Slides whose snippets work on different inputs on purpose.
OWN_INPUTS = {
    # The printed flat split is small enough to read row by row; the
    # figure draws a bigger input, two heads of four positions each.
    "31",
}


def disagreeing_settings(snippets: list[Path]) -> list[str]:
    """Names that two snippets of one slide (one number before their
    '_') set to different literals, each with where."""
    by_slide: dict[str, dict[str, dict[str, object]]] = {}
    for path in snippets:
        number = path.name.split("_", 1)[0]
        if number in OWN_INPUTS:
            continue
        by_slide.setdefault(number, {})[path.name] = settings_of(
            path.read_text(encoding="utf-8")
        )
    wrong = []
    for files in by_slide.values():
        names = {n for s in files.values() for n in s}
        for name in sorted(names):
            values = {f: s[name] for f, s in files.items() if name in s}
            if len({repr(v) for v in values.values()}) > 1:
                wrong.append(f"{name}: {values}")
    return wrong


def test_the_snippets_of_one_slide_agree_on_their_settings(tmp_path):
    """Slide 17's three snippets each set d_model, T = 512, 128: a
    contributor changed T in one, followed the docs (git grep 128), and
    the page showed two totals for the same counted FLOPs, every check
    green. Snippets that share a slide set a shared name alike."""
    snippets = sorted((ROOT / "snippets").glob("[0-9]*.py"))
    assert disagreeing_settings(snippets) == []
    # And it sees the contributor's change.
    flops = ROOT / "snippets" / "17_flops.py"
    changed = tmp_path / flops.name
    changed.write_text(
        flops.read_text().replace(
            "d_model, T = 512, 128", "d_model, T = 512, 64"
        )
    )
    others = [p for p in snippets if p.name != flops.name]
    wrong = disagreeing_settings([*others, changed])
    assert [w.split(":")[0] for w in wrong] == ["T"], wrong


def test_slide_45_names_the_sizes_the_grader_builds():
    """Slide 45 tells students which module the skeleton line builds and
    which it must refuse: those are the grader's (mha_ref.grade). The
    first are the slide's snippet's settings, which its prose
    references; the refused pair is typed. A change to either shows."""
    from mha_ref import grade

    (slide,) = (ROOT / "docs" / "slides").glob("45-*.md")
    text = slide.read_text()
    snippet = settings_of((ROOT / "snippets" / "45_skeleton.py").read_text())
    assert (snippet["d_model"], snippet["h"]) == grade.SKELETON, snippet
    size = r"d_\{\\text\{model\}\} = (.+?), h = (.+?)\\\)"
    named = set(re.findall(size, text))
    value = '{{{{ value("45_skeleton.{}") }}}}'.format
    assert named == {
        (value("d_model"), value("h")),
        tuple(map(str, grade.REFUSED)),
    }, named
