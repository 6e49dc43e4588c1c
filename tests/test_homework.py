"""The homework notebooks: checks fail on the starter, pass on solutions.

The notebooks are executed for real (nbclient, the venv's python3
kernel) from their committed jupytext scripts.
"""

from pathlib import Path

import nbformat
import pytest
import sympy
import torch

from lessonbuild.notebooks import (
    OUT_DIR,
    Homework,
    NotebookExecutionError,
    execute,
    to_ipynb,
)
from mha_ref import (
    MultiHeadAttention,
    causal_mask,
    homework_checks,
    specialise,
)
from mha_ref.homework_checks import HomeworkCheckFailed

ROOT = Path(__file__).resolve().parents[1]
STARTER = ROOT / "notebooks" / "homework.py"
SOLUTIONS = ROOT / "notebooks" / "homework_solutions.py"
TIMEOUT = 120


def _check_cells(nb):
    return [
        (i, cell)
        for i, cell in enumerate(nb.cells)
        if "check" in cell.metadata.get("tags", [])
    ]


def _errors(cell):
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def _text(cell):
    return "".join(
        o.text for o in cell.get("outputs", []) if o.output_type == "stream"
    )


@pytest.fixture(scope="module")
def starter_run():
    return execute(
        to_ipynb(STARTER), TIMEOUT, source=STARTER, allow_errors=True
    )


@pytest.fixture(scope="module")
def solutions_run():
    return execute(to_ipynb(SOLUTIONS), TIMEOUT, source=SOLUTIONS)


@pytest.mark.parametrize("path", [STARTER, SOLUTIONS], ids=lambda p: p.name)
def test_notebook_converts_to_valid_ipynb(path):
    nb = to_ipynb(path)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    again = nbformat.reads(nbformat.writes(nb), as_version=4)
    nbformat.validate(again)


def test_both_notebooks_run_the_same_three_checks():
    """The solutions may not weaken a check: same cells, same source."""
    starter = [c.source for _, c in _check_cells(to_ipynb(STARTER))]
    solutions = [c.source for _, c in _check_cells(to_ipynb(SOLUTIONS))]
    assert len(starter) == 3, f"expected 3 check cells, found {starter}"
    assert starter == solutions


def test_every_check_fails_on_the_starter(starter_run):
    for index, cell in _check_cells(starter_run):
        errors = _errors(cell)
        assert errors, f"starter cell {index} passed:\n{cell.source}"
        assert errors[0].ename == "HomeworkCheckFailed", (
            f"starter cell {index} failed with {errors[0].ename}: "
            f"{errors[0].evalue}; expected a HomeworkCheckFailed"
        )
    other = [
        (i, _errors(c)[0].evalue)
        for i, c in enumerate(starter_run.cells)
        if _errors(c) and "check" not in c.metadata.get("tags", [])
    ]
    assert not other, f"non-check cells of the starter failed: {other}"


def test_every_check_passes_on_the_solutions(solutions_run):
    checks = _check_cells(solutions_run)
    for index, cell in checks:
        assert not _errors(cell), index
        assert _text(cell).strip(), f"check cell {index} printed nothing"


def test_solutions_print_the_specialisation_figure(solutions_run):
    out = "".join(_text(c) for c in solutions_run.cells)
    lines = {
        line.split(":")[0]: float(line.rsplit(" ", 1)[1])
        for line in out.splitlines()
        if line.startswith("specialisation figure, ")
    }
    trained = lines["specialisation figure, trained"]
    untrained = lines["specialisation figure, untrained"]
    threshold = homework_checks.SPECIALISATION_THRESHOLD
    assert untrained < threshold < trained
    images = [
        o
        for c in solutions_run.cells
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    assert len(images) == 1, "expected one figure of per-head heatmaps"


def test_a_failing_cell_names_the_file_and_line(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("# %%\nx = 1\n\n# %%\ny = 2\nraise ValueError('boom')\n")
    with pytest.raises(NotebookExecutionError) as caught:
        execute(to_ipynb(script), TIMEOUT, source=script)
    message = str(caught.value)
    assert f"{script}:6: cell 1 raised ValueError: boom" in message


@pytest.fixture
def pool(tmp_path, monkeypatch):
    """The snippet engine's fork servers, as the plugin holds them; the
    kernels' temporary folders go under tmp_path/tmp (see below)."""
    from lessonbuild.engine.runner import Pool

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    pool = Pool(tmp_path / "lesson")
    yield pool
    pool.close()


def _lesson(pool, text: str) -> Path:
    """A lesson folder (the pool's root) with this solutions script."""
    root = pool.root
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "homework.py").write_text("# %%\nx = 1\n")
    (root / "notebooks" / "homework_solutions.py").write_text(text)
    return root


def test_build_homework_reports_the_failing_line(pool, tmp_path):
    """The build's homework run names the solutions file and line of a
    failing cell, writes no executed notebook for it, and leaves no
    kernel files behind."""
    root = _lesson(
        pool, "# %%\nx = 1\n\n# %%\ny = 2\nraise ValueError('boom')\n"
    )
    homework = Homework(root, "key", pool)
    problems = homework.wait()
    assert [(p.path, p.line) for p in problems] == [
        ("notebooks/homework_solutions.py", 6)
    ]
    assert "raised ValueError: boom" in problems[0].message
    assert (root / OUT_DIR / "notebooks" / "homework.ipynb").is_file()
    assert not (root / OUT_DIR / "notebooks/homework-solutions.ipynb").exists()
    assert list((tmp_path / "tmp").glob("kernel-*")) == []


def test_build_homework_whose_kernel_dies_is_a_problem_not_a_crash(pool):
    root = _lesson(pool, "# %%\nimport os\nos._exit(3)\n")
    problems = Homework(root, "key", pool).wait()
    assert [(p.path, p.line) for p in problems] == [
        ("notebooks/homework_solutions.py", 1)
    ]
    assert "executing the notebook failed" in problems[0].message
    assert "DeadKernelError" in problems[0].detail
    assert not (root / OUT_DIR / "notebooks/homework-solutions.ipynb").exists()


def test_build_homework_runs_on_a_kernel_forked_from_the_engine(pool):
    """The kernel inherits the fork server's imports: torch is loaded
    before the notebook imports it (no fresh interpreter to pay for)."""
    root = _lesson(
        pool,
        "# %%\nimport sys\nprint('torch' in sys.modules)\n\n"
        "# %%\nimport matplotlib.pyplot as plt\n"
        "plt.plot([0, 1])\nplt.show()\n",
    )
    assert Homework(root, "key", pool).wait() == []
    written = root / OUT_DIR / "notebooks" / "homework-solutions.ipynb"
    nb = nbformat.read(written, as_version=4)
    assert nb.cells[0].outputs[0].text == "True\n"
    # Figures show inline, as in a kernel Jupyter started.
    assert "image/png" in nb.cells[1].outputs[0].data


def test_build_homework_is_not_rerun_when_unchanged(pool):
    root = _lesson(pool, "# %%\nprint(6 * 7)\n")
    assert Homework(root, "key", pool).wait() == []
    written = root / OUT_DIR / "notebooks" / "homework-solutions.ipynb"
    nb = nbformat.read(written, as_version=4)
    assert nb.cells[0].outputs[0].text == "42\n"
    again = Homework(root, "key", pool)
    assert again._started is None  # nothing to run: same key, same source
    assert again.wait() == [] and again.uris == [
        "notebooks/homework.ipynb",
        "notebooks/homework-solutions.ipynb",
    ]
    # A new key (mha_ref or torch changed) runs it again.
    changed = Homework(root, "other key", pool)
    assert changed._started is not None
    assert changed.wait() == []


def test_cancelled_homework_leaves_no_process(pool, tmp_path):
    """A build that stops early kills the run and its kernel."""
    import os
    import time

    marker = tmp_path / "started"
    root = _lesson(
        pool,
        "# %%\nimport os, pathlib, time\n"
        f"pathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
        "time.sleep(600)\n",
    )
    homework = Homework(root, "key", pool)
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for a condition: the kernel is running
    kernel = int(marker.read_text())
    homework.cancel()
    while time.monotonic() < deadline:
        try:
            os.kill(kernel, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{kernel}/stat").read_text().split()[2] == "Z":
            break  # a zombie left for init to reap: it no longer runs
        time.sleep(0.05)
    else:
        pytest.fail(f"kernel {kernel} still running after cancel()")


def test_serve_keeps_the_homework_run_when_it_starts_its_servers(tmp_path):
    """Under ``mkdocs serve`` the plugin starts its fork-server pool after
    the homework run; that must not cancel the run (only on_shutdown
    does)."""
    from lessonbuild.plugin import LessonPlugin

    class Run:
        cancelled = False

        def cancel(self):
            self.cancelled = True

    plugin = LessonPlugin()
    plugin.on_startup(command="serve", dirty=False)
    run = plugin.build.homework = Run()
    assert plugin.build._pool(tmp_path) is not None
    assert not run.cancelled and plugin.build.homework is run
    plugin.on_shutdown()
    assert run.cancelled and plugin.build.homework is None


# The checks on their own: each branch a student can hit.


def _attention_mass(weights, keys):
    rows = torch.arange(weights.size(-1))  # (T,)
    return weights[:, :, rows, keys][:, :, 2:].mean(dim=(0, 2))  # (h,)


def test_specialisation_check_rejects_untrained_heads():
    """A right attention_mass is not enough: the heads must split."""
    untrained, _ = specialise.train(seed=0, steps=0, cache_dir=None)
    with pytest.raises(HomeworkCheckFailed, match="below 0.75"):
        homework_checks.check_specialisation(untrained, _attention_mass)
    model, _ = specialise.train(seed=0)
    homework_checks.check_specialisation(model, _attention_mass)


def test_parameter_check_rejects_a_formula_right_only_for_one_head():
    h, d_k = sympy.symbols("h d_k", positive=True, integer=True)
    one_head = 3 * (h * d_k) * d_k + (h * d_k) ** 2  # forgot "times h"
    with pytest.raises(HomeworkCheckFailed, match="d_model=8, h=2"):
        homework_checks.check_parameter_formula(one_head, h, d_k)
    d = sympy.Symbol("d_model")
    with pytest.raises(HomeworkCheckFailed, match="d_model"):
        homework_checks.check_parameter_formula(4 * d**2, h, d_k)
    homework_checks.check_parameter_formula(4 * h**2 * d_k**2, h, d_k)


class _Anticausal(MultiHeadAttention):
    def forward(self, x):
        T = x.size(1)
        return super().forward(x, x, x, mask=causal_mask(T, T).T)


class _IsCausal(MultiHeadAttention):
    def forward(self, x):
        return super().forward(x, x, x, is_causal=True)


class _CausalButScaled(MultiHeadAttention):
    def forward(self, x):
        out, weights = super().forward(x, x, x, is_causal=True)
        return 2 * out, weights


def test_causal_check_accepts_is_causal_and_rejects_wrong_masks():
    homework_checks.check_causal_self_attention(_IsCausal)
    with pytest.raises(HomeworkCheckFailed, match="later position"):
        homework_checks.check_causal_self_attention(_Anticausal)
    with pytest.raises(HomeworkCheckFailed, match="torch.nn.Multihead"):
        homework_checks.check_causal_self_attention(_CausalButScaled)
    with pytest.raises(HomeworkCheckFailed, match="subclass"):
        homework_checks.check_causal_self_attention(torch.nn.Linear)
