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
    """Each check cell prints FAIL and what is wrong; nothing raises."""
    for task, (index, cell) in enumerate(_check_cells(starter_run), 1):
        assert not _errors(cell), f"starter cell {index} raised"
        text = _text(cell)
        assert text.startswith(f"FAIL task {task}: "), text
        assert len(text.split()) > 8, text
    errors = [
        (i, _errors(c)[0].evalue)
        for i, c in enumerate(starter_run.cells)
        if _errors(c)
    ]
    assert not errors, f"cells of the starter raised: {errors}"


def test_every_check_passes_on_the_solutions(solutions_run):
    checks = _check_cells(solutions_run)
    for task, (index, cell) in enumerate(checks, 1):
        assert not _errors(cell), index
        assert _text(cell).startswith(f"PASS task {task}: "), _text(cell)


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
    # Cell 0 of the notebook is the setup cell that carries mha_ref.
    assert f"{script}:6: cell 2 raised ValueError: boom" in message


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


def test_build_homework_runs_sandboxed_with_inline_figures(pool):
    """The kernel (a fork of the job, which inherited the fork server's
    imports) runs inside the job's sandbox: the repository is read-only
    to it. Figures show inline, as in a kernel Jupyter started."""
    root = _lesson(
        pool,
        "# %%\ntry:\n    open('written.txt', 'w')\n"
        "except OSError as exc:\n    print(exc.strerror)\n\n"
        "# %%\nimport matplotlib.pyplot as plt\n"
        "plt.plot([0, 1])\nplt.show()\n",
    )
    assert Homework(root, "key", pool).wait() == []
    assert not (root / "written.txt").exists()
    written = root / OUT_DIR / "notebooks" / "homework-solutions.ipynb"
    nb = nbformat.read(written, as_version=4)
    # Cell 0 is the setup cell that carries mha_ref.
    assert nb.cells[1].outputs[0].text == "Read-only file system\n"
    assert "image/png" in nb.cells[2].outputs[0].data


def test_build_homework_is_not_rerun_when_unchanged(pool):
    root = _lesson(pool, "# %%\nprint(6 * 7)\n")
    assert Homework(root, "key", pool).wait() == []
    written = root / OUT_DIR / "notebooks" / "homework-solutions.ipynb"
    nb = nbformat.read(written, as_version=4)
    assert nb.cells[1].outputs[0].text == "42\n"  # after the setup cell
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


def test_a_kernel_is_never_forked_beside_a_running_thread():
    """A fork copies only the calling thread: a lock another thread held
    (zmq's, after a notebook ran) stays held in the kernel, which then
    hangs until the build's timeout. The job forks every kernel first;
    a fork beside a thread is refused before it happens."""
    import threading

    from lessonbuild import notebooks

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(RuntimeError, match="threads can hang"):
            notebooks._forked_kernel()
    finally:
        stop.set()
        thread.join()


def test_cancelled_homework_leaves_no_process(pool, tmp_path):
    """A build that stops early kills the run and its kernel.

    The kernel runs sandboxed (the file system read-only but for its
    scratch), so it cannot leave a file the test could read; it names
    itself instead (prctl PR_SET_NAME, seen in /proc/PID/comm from
    outside its PID namespace)."""
    import os
    import secrets
    import time

    name = "hw" + secrets.token_hex(6)  # comm holds 15 bytes
    root = _lesson(
        pool,
        "# %%\nimport ctypes, time\n"
        f"ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"
        "time.sleep(600)\n",
    )

    def named() -> list[int]:
        """The running processes so named (a zombie, left for init to
        reap, no longer runs)."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    comm = Path(f"/proc/{entry}/comm").read_text().strip()
                    state = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue  # it ended meanwhile
                if comm == name and state.rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry))
        return found

    homework = Homework(root, "key", pool)
    deadline = time.monotonic() + 120
    while not (kernels := named()) and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for a condition: the kernel is running
    assert kernels, "the homework kernel never started its cell"
    homework.cancel()
    while named() and time.monotonic() < deadline:
        time.sleep(0.05)
    if named():
        pytest.fail(f"kernel {kernels} still running after cancel()")


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
    with pytest.raises(HomeworkCheckFailed, match="not above 0.5"):
        homework_checks.check_specialisation(untrained, _attention_mass)
    model, _ = specialise.train(seed=0)
    homework_checks.check_specialisation(model, _attention_mass)


def test_specialisation_message_agrees_with_specialise_threshold():
    """Heads that split (above specialise's 0.5) but not clearly are told
    they have split, and to train on."""
    model, _ = specialise.train(seed=0, steps=15, cache_dir=None)
    figure = specialise.specialisation_figure(
        model, specialise.held_out_batch()
    )
    assert (
        specialise.SPLIT_THRESHOLD
        < figure
        < homework_checks.SPECIALISATION_THRESHOLD
    )
    with pytest.raises(HomeworkCheckFailed) as failed:
        homework_checks.check_specialisation(model, _attention_mass)
    assert "have split" in str(failed.value)
    assert "not split" not in str(failed.value)


H, D_K = sympy.symbols("h d_k", positive=True, integer=True)
D = H * D_K  # d_model


@pytest.mark.parametrize(
    ("per_head", "w_o", "total", "words"),
    [
        # The forgery: the answer typed, the terms left at 0.
        (0, 0, 4 * D**2, "your per_head gives 0"),
        # One head's slices counted as d_model x d_k for one matrix only.
        (D * D_K, D**2, 4 * D**2, "your per_head gives"),
        # Forgot "times h" in the total.
        (3 * D * D_K, D**2, 3 * D * D_K + D**2, "your total gives"),
        # W_O counted per head.
        (3 * D * D_K, D * D_K, 4 * D**2, "your w_o gives"),
    ],
    ids=["typed answer", "one matrix", "no h", "W_O per head"],
)
def test_parameter_check_checks_each_term(per_head, w_o, total, words):
    with pytest.raises(HomeworkCheckFailed, match=words):
        homework_checks.check_parameter_formula(
            sympy.sympify(per_head), sympy.sympify(w_o), total, H, D_K
        )


def test_parameter_check_accepts_the_proof_and_refuses_d_model():
    homework_checks.check_parameter_formula(
        3 * D * D_K, D**2, H * 3 * D * D_K + D**2, H, D_K
    )
    d = sympy.Symbol("d_model")
    with pytest.raises(HomeworkCheckFailed, match="d_model"):
        homework_checks.check_parameter_formula(
            3 * d * D_K, d**2, 4 * d**2, H, D_K
        )


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


class _OwnModule(torch.nn.Module):
    """A student's own module (not mha_ref's), correct, with masks."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            setattr(self, name, torch.nn.Linear(d_model, d_model, bias=False))

    def forward(self, query, key, value, mask=None):
        B, T, d = query.shape

        def split(x):
            return x.view(B, -1, self.h, d // self.h).transpose(1, 2)

        q, k = split(self.W_Q(query)), split(self.W_K(key))
        v = split(self.W_V(value))
        scores = q @ k.transpose(-2, -1) / (d // self.h) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, d)
        return self.W_O(out), weights


class _OwnDecoder(_OwnModule):
    def forward(self, x):
        T = x.size(1)
        return super().forward(x, x, x, mask=causal_mask(T, T))


def test_causal_check_runs_on_the_students_own_module():
    homework_checks.check_causal_self_attention(_OwnDecoder, _OwnModule)
    with pytest.raises(HomeworkCheckFailed, match="subclass of"):
        homework_checks.check_causal_self_attention(_IsCausal, _OwnModule)


def test_causal_check_accepts_is_causal_and_rejects_wrong_masks():
    homework_checks.check_causal_self_attention(_IsCausal)
    with pytest.raises(HomeworkCheckFailed, match="later position"):
        homework_checks.check_causal_self_attention(_Anticausal)
    with pytest.raises(HomeworkCheckFailed, match="torch.nn.Multihead"):
        homework_checks.check_causal_self_attention(_CausalButScaled)
    with pytest.raises(HomeworkCheckFailed, match="subclass"):
        homework_checks.check_causal_self_attention(torch.nn.Linear)


class _Unfinished(_OwnModule):
    """The project's starter, as task 3 finds it beside the homework."""

    def forward(self, query, key, value, mask=None, is_causal=False):
        raise NotImplementedError("TODO: milestone 2, forward")


class _UnfinishedDecoder(_Unfinished):
    def forward(self, x):
        return super().forward(x, x, x, is_causal=True)


def test_a_check_whose_student_code_raises_reports_a_fail_line(capsys):
    """Task 3 on the project's unfinished module: a FAIL line naming the
    error and the student's line, not a traceback."""
    homework_checks.report(
        3,
        homework_checks.check_causal_self_attention,
        _UnfinishedDecoder,
        _Unfinished,
    )
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("FAIL task 3: your code raised "), line
    assert "NotImplementedError: TODO: milestone 2, forward" in line
    assert f"({Path(__file__).name}:" in line and "in forward)" in line


def _module_cell(path: Path) -> str:
    """The cell that picks the student's MultiHeadAttention (task 3)."""
    cells = [c.source for c in to_ipynb(path).cells if "my_mha" in c.source]
    code = [c for c in cells if "import MultiHeadAttention" in c]
    assert len(code) == 1, code
    return code[0].split("\n\n\nclass ")[0]


@pytest.mark.parametrize("path", [STARTER, SOLUTIONS], ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("my_mha", "outcome"),
    [
        # Not written yet (a notebook run on its own): mha_ref's, said so.
        (None, "stands in|mha_ref.mha"),
        # Written: the student's own, whatever it holds.
        (
            "import mha_ref\n\n\n"
            "class MultiHeadAttention(mha_ref.MultiHeadAttention):\n"
            "    pass\n",
            "|my_mha",
        ),
        # Written but broken: the student's error, never mha_ref's module
        # passing task 3 in its place.
        ("import torchh\n", "ModuleNotFoundError: No module named 'torchh'"),
        ("from torch import nothing_here\n", "ImportError: cannot import"),
    ],
)
def test_task_3_runs_the_students_module_or_says_whose(
    tmp_path, path, my_mha, outcome
):
    import subprocess
    import sys

    if my_mha is not None:
        (tmp_path / "my_mha.py").write_text(my_mha)
    program = _module_cell(path) + "\nprint('|' + YourAttention.__module__)\n"
    result = subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = result.stdout + result.stderr
    assert all(part in said for part in outcome.split("|")), said
    assert ("Traceback" in said) == ("Error" in outcome), said


# A student-cheat and expert audit of the three checks: each below passed.


class _SevenOnly(MultiHeadAttention):
    """The mask typed for the length the check used (T = 7)."""

    def forward(self, x):
        return super().forward(x, x, x, mask=causal_mask(7, 7))


class _LeaksPastEight(MultiHeadAttention):
    """Causal up to T = 8, every key allowed beyond."""

    def forward(self, x):
        T = x.size(1)
        mask = torch.ones(T, T, dtype=torch.bool)
        n = min(T, 8)
        mask[:n, :n] = causal_mask(n, n)
        return super().forward(x, x, x, mask=mask)


class _Untrainable(MultiHeadAttention):
    def forward(self, x):
        with torch.no_grad():
            return super().forward(x, x, x, is_causal=True)


class _TorchsLayer(MultiHeadAttention):
    """torch's own layer on the module's weights, not the module."""

    def forward(self, x):
        layer = torch.nn.MultiheadAttention(
            x.size(-1), self.num_heads, bias=False, batch_first=True
        )
        with torch.no_grad():
            layer.in_proj_weight.copy_(
                torch.cat([self.W_Q.weight, self.W_K.weight, self.W_V.weight])
            )
            layer.out_proj.weight.copy_(self.W_O.weight)
        T = x.size(1)
        return layer(
            x, x, x, attn_mask=~causal_mask(T, T), average_attn_weights=False
        )


class _WithBias(_OwnModule):
    """A project module with biases: wrong before any mask."""

    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            setattr(self, name, torch.nn.Linear(d_model, d_model))


class _WithBiasDecoder(_WithBias):
    def forward(self, x):
        T = x.size(1)
        return super().forward(x, x, x, mask=causal_mask(T, T))


def test_causal_check_tries_every_length_gradients_and_the_module():
    """A mask typed for T = 7 raises at another length; one that leaks
    past T = 8 is named at T = 12; a forward under no_grad cannot train;
    torch's own layer is not the student's module; and a subclass whose
    base is wrong before any mask is sent to the base, not its mask."""
    with pytest.raises(ValueError, match="does not broadcast"):
        homework_checks.check_causal_self_attention(_SevenOnly)
    with pytest.raises(HomeworkCheckFailed, match="later position at B=3"):
        homework_checks.check_causal_self_attention(_LeaksPastEight)
    with pytest.raises(HomeworkCheckFailed, match="carry no gradient"):
        homework_checks.check_causal_self_attention(_Untrainable)
    with pytest.raises(HomeworkCheckFailed, match="never runs your"):
        homework_checks.check_causal_self_attention(_TorchsLayer)
    with pytest.raises(HomeworkCheckFailed, match="itself differs"):
        homework_checks.check_causal_self_attention(
            _WithBiasDecoder, _WithBias
        )
    # The check leaves the classes as it found them.
    assert "forward" in vars(MultiHeadAttention)
    assert "forward" not in vars(_WithBias)
    homework_checks.check_causal_self_attention(_IsCausal)


class _Faked(torch.nn.Module):
    """An untrained model whose maps are replaced by one-hot ones on the
    two relationships' keys: the heads never split."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens):
        logits, weights = self.model(tokens)
        T = weights.size(-1)
        keys = specialise.relationship_keys(T)  # (R, T)
        fake = torch.zeros_like(weights)
        for head in range(2):
            fake[:, head, torch.arange(T), keys[head]] = 1.0
        return logits, fake


def test_specialisation_check_measures_the_trained_model_itself():
    """Maps a wrapper fakes (or a bare function) are not the model's:
    the figure is measured on the trained weights, loaded into the
    lesson's own model; an answer in float64 is an answer."""
    untrained, _ = specialise.train(seed=0, steps=0, cache_dir=None)
    for fake in (_Faked(untrained), lambda tokens: (None, None)):
        with pytest.raises(HomeworkCheckFailed, match="SpecialisingModel"):
            homework_checks.check_specialisation(fake, _attention_mass)
    model, _ = specialise.train(seed=0)
    homework_checks.check_specialisation(
        model, lambda w, k: _attention_mass(w, k).double()
    )


def test_parameter_check_reads_symbols_by_name_and_every_h():
    """sympify's own h and d_k, a float coefficient and an unevaluated
    Sum are the proof; terms made to agree at the sizes tried only (a
    polynomial zero at h = 1, 2, 3, 6, 8 added to one, taken from the
    other) are not."""
    h, d_k = sympy.symbols("h d_k")  # no assumptions: other symbols
    i = sympy.Symbol("i")
    homework_checks.check_parameter_formula(
        sympy.sympify("3.0*h*d_k**2"),
        (h * d_k) ** 2,
        sympy.Sum(3 * h * d_k**2, (i, 1, h)) + (h * d_k) ** 2,
        H,
        D_K,
    )
    P = (H - 1) * (H - 2) * (H - 3) * (H - 6) * (H - 8)
    with pytest.raises(HomeworkCheckFailed, match="not every h and d_k"):
        homework_checks.check_parameter_formula(
            3 * D * D_K + P, D**2 - H * P, 4 * D**2, H, D_K
        )
