"""Tests for mha_ref.grade, run as a student runs it.

Each test writes a student's file into a temporary folder and grades it
(``python -m mha_ref.grade my_mha.py`` in a subprocess, or ``grade.main``
here where the command line is not the point: the student's file runs in
the grader's child process either way). The buggy modules are the
correct one (:data:`CORRECT`) with one line changed, so each test shows
exactly which mistake the grader must name; the forgeries try to pass
without the work (print PASS lines, exit early, patch the grader); the
unusual modules are correct in ways the grader was not written against.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest
import torch

from mha_ref import _isolate, _sandbox, grade
from tests.sockets import socket_files

ROOT = Path(__file__).resolve().parents[1]
MILESTONES = [
    "skeleton",
    "shapes",
    "h=1",
    "h>1",
    "masks",
    "causal",
    "T_q!=T_k",
]

# A correct module in the lesson's style: view + transpose, no loop.
CORRECT = """\
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{num_heads} does not divide {d_model}")
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)

    def merge(self, x):
        B, h, T, d_k = x.shape
        return x.transpose(1, 2).contiguous().view(B, T, h * d_k)

    def forward(self, query, key, value, mask=None, is_causal=False):
        q = self.split(self.W_Q(query))
        k = self.split(self.W_K(key))
        v = self.split(self.W_V(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        if is_causal:
            t_q, t_k = scores.shape[-2:]
            allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.W_O(self.merge(weights @ v)), weights
"""

# Correct too, written another way: einsum, and a loop over heads.
EINSUM_LOOP = """\
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        if d_model % h != 0:
            raise ValueError(f"h={h} must divide d_model={d_model}")
        self.h = h
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=False))

    def forward(self, query, key, value, mask=None, is_causal=False):
        d_k = query.shape[-1] // self.h
        q, k, v = self.W_Q(query), self.W_K(key), self.W_V(value)
        heads, weights = [], []
        for i in range(self.h):
            cols = slice(i * d_k, (i + 1) * d_k)
            s = torch.einsum("bqd,bkd->bqk", q[..., cols], k[..., cols])
            s = s * d_k**-0.5
            if mask is not None:
                # (B, h or 1, T_q, T_k): this head's; else as given
                m = mask if mask.dim() < 4 else mask[:, i % mask.size(1)]
                s = torch.where(m, s, torch.tensor(float("-inf")))
            if is_causal:
                s = s.masked_fill(
                    torch.ones_like(s[0], dtype=torch.bool).triu(1),
                    float("-inf"),
                )
            w = s.softmax(-1)
            heads.append(torch.einsum("bqk,bkd->bqd", w, v[..., cols]))
            weights.append(w)
        return self.W_O(torch.cat(heads, -1)), torch.stack(weights, 1)
"""


# Correct, unusually: permute/reshape, an additive bias, a causal buffer
# made once for the longest T and sliced per call, heads kept in `heads`.
BUFFER_BIAS = """\
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_len=64):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{num_heads} heads cannot split {d_model}")
        self.heads = num_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)
        tri = torch.ones(max_len, max_len, dtype=torch.bool).tril()
        self.register_buffer("tri", tri, persistent=False)

    def _split(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.heads, D // self.heads).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None, is_causal=False):
        q = self._split(self.W_Q(query))
        k = self._split(self.W_K(key))
        v = self._split(self.W_V(value))
        bias = torch.zeros(q.size(2), k.size(2))
        if is_causal:
            keep = self.tri[: q.size(2), : k.size(2)]
            bias = bias.masked_fill(~keep, float("-inf"))
        if mask is not None:
            blocked = torch.zeros(mask.shape).masked_fill(~mask, -math.inf)
            bias = bias + blocked
        scores = torch.matmul(q, k.transpose(2, 3)) / q.size(-1) ** 0.5
        weights = (scores + bias).softmax(dim=-1)
        ctx = torch.matmul(weights, v).permute(0, 2, 1, 3)
        return self.W_O(ctx.reshape(query.shape)), weights
"""

# Correct, unusually: PyTorch's fused attention for the output, the
# weights computed beside it from one combined boolean mask.
FUSED = """\
import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model}, num_heads={num_heads}")
        self.num_heads = num_heads
        self.W_Q, self.W_K, self.W_V, self.W_O = (
            nn.Linear(d_model, d_model, bias=False) for _ in range(4)
        )

    def forward(self, query, key, value, mask=None, is_causal=False):
        B, T_q, d = query.shape
        T_k = key.size(1)
        h = self.num_heads
        q = self.W_Q(query).view(B, T_q, h, d // h).transpose(1, 2)
        k = self.W_K(key).view(B, T_k, h, d // h).transpose(1, 2)
        v = self.W_V(value).view(B, T_k, h, d // h).transpose(1, 2)
        allowed = torch.ones(T_q, T_k, dtype=torch.bool)
        if is_causal:
            allowed = allowed.tril()
        if mask is not None:
            allowed = allowed & mask
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        scores = (q @ k.transpose(-2, -1)) / (d // h) ** 0.5
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        out = ctx.transpose(1, 2).reshape(B, T_q, d)
        return self.W_O(out), weights
"""


FORWARD_LINE = (
    "    def forward(self, query, key, value, mask=None, is_causal=False):\n"
)


def _bug(*edits: str, source: str = CORRECT) -> str:
    """``source`` with each ``old`` replaced by the ``new`` after it.

    ``edits`` is ``old, new, old, new, ...``; each ``old`` must occur once.
    """
    for old, new in zip(edits[::2], edits[1::2], strict=True):
        assert source.count(old) == 1, f"{old!r} is not once in the source"
        source = source.replace(old, new)
    return source


def _line_of(source: str, text: str) -> int:
    """1-based line of the line holding ``text``."""
    lines = [
        n for n, line in enumerate(source.splitlines(), 1) if text in line
    ]
    assert len(lines) == 1, f"{text!r} on lines {lines}"
    return lines[0]


def _run_grader(
    tmp_path: Path, source: str, *options: str, name: str = "my_mha.py"
):
    """``python -m mha_ref.grade my_mha.py`` as a student runs it, from
    the file's folder: the finished process."""
    (tmp_path / name).write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mha_ref.grade", name, *options],
        cwd=tmp_path,
        # One torch thread: the tensors are tiny, the machine is shared.
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _grade(tmp_path: Path, source: str, *options: str):
    """Run the grader as a student would.

    Returns (exit status, {milestone: (status, detail)}, stdout).
    """
    result = _run_grader(tmp_path, source, *options)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, _parse(result.stdout), result.stdout


def _grade_here(tmp_path: Path, source: str, capsys):
    """The same, in this process: for the cases that cannot hang.

    A subprocess costs a torch import (seconds on a loaded machine); the
    subprocess tests above already show the command-line path works.
    """
    path = tmp_path / "my_mha.py"
    path.write_text(source)
    # One seed per source: which later milestones a bug also fails can
    # depend on the numbers drawn ("scores clamped" passed masks on 1
    # seed in 60, failing the suite at random); the same source is graded
    # the same way on every run.
    seed = zlib.crc32(source.encode()) % 10**6
    status = grade.main([str(path), "--seed", str(seed)])
    stdout = capsys.readouterr().out
    return status, _parse(stdout), stdout


def _copy_of_the_reference(folder: Path) -> None:
    """mha_ref as package ``ref_copy`` in ``folder``: the reference's own
    code, graded as a student's (mha_ref itself is refused)."""
    shutil.copytree(
        Path(grade.__file__).parent,
        folder / "ref_copy",
        ignore=shutil.ignore_patterns("__pycache__"),
    )


def _parse(stdout: str) -> dict[str, tuple[str, str]]:
    lines = {}
    for line in stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("PASS", "FAIL", "SKIP"):
            name, _, detail = rest.strip().partition(" ")
            lines[name] = (status, detail.strip())
    return lines


def _statuses(lines):
    return {name: status for name, (status, _) in lines.items()}


@pytest.mark.parametrize(
    "source",
    [
        # The reference itself, as a package of another name: the
        # grader fails a file that runs mha_ref's own code (below).
        "from ref_copy import MultiHeadAttention  # noqa: F401\n",
        CORRECT,
        EINSUM_LOOP,
        BUFFER_BIAS,
        FUSED,
        # A checking decorator without functools.wraps: forward's
        # signature reads (*args, **kwargs), and every call still works.
        "import functools\n"
        + CORRECT.replace(
            "    def forward(",
            "    @staticmethod\n    def _unused(): pass\n\n"
            "    @(lambda f: lambda *a, **k: f(*a, **k))\n    def forward(",
        ),
        # Its own kind of ValueError for a bad head count: a ValueError.
        "class HeadCountError(ValueError):\n    pass\n\n\n"
        + CORRECT.replace("raise ValueError(", "raise HeadCountError("),
        # The tensors as *args: it takes three (the signature check must
        # not read "args" as one parameter).
        CORRECT.replace(
            "def forward(self, query, key, value, "
            "mask=None, is_causal=False):",
            "def forward(self, *tensors, mask=None, is_causal=False):\n"
            "        query, key, value = tensors",
        ),
        # A thread pool in every call: after 300 threads in all the
        # sandbox had no pid left to give (as root), and a module that
        # started 4 a call failed (an expert's audit).
        CORRECT.replace(
            "        weights = torch.softmax(scores, dim=-1)\n",
            "        from concurrent.futures import ThreadPoolExecutor\n\n"
            "        with ThreadPoolExecutor(4) as pool:\n"
            "            parts = list(pool.map(\n"
            "                lambda s: torch.softmax(s, dim=-1),\n"
            "                scores.unbind(1)))\n"
            "        weights = torch.stack(parts, 1)\n",
        ),
        # nanoGPT's causal buffer, 256 MiB a module: every module the
        # grader made stayed alive in the sandbox, whose memory ran out.
        CORRECT.replace(
            "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n",
            "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n"
            "        self.register_buffer(\n"
            "            'tril', torch.ones(8192, 8192).tril())\n",
        ),
        # The last map kept with its graph, to plot (the Annotated
        # Transformer's self.attn): one call's graph, replaced by the next,
        # unlike a list appended to (BUGS, "weights kept with their
        # graph").
        CORRECT.replace(
            "        weights = torch.softmax(scores, dim=-1)\n",
            "        weights = self.attn = torch.softmax(scores, dim=-1)\n",
        ),
        # This call's k and v kept in a dict, replaced by the next call's:
        # a collection that does not grow.
        CORRECT.replace(
            "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n",
            "        self.kv = getattr(self, 'kv', {})\n"
            "        self.kv['k'], self.kv['v'] = k, v\n"
            "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n",
        ),
        # Its own initialisation, drawn from the generator as nn.Linear's
        # is (two modules differ; the generator moves on, never reset).
        CORRECT.replace(
            "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n",
            "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n"
            "        for layer in (self.W_Q, self.W_K, self.W_V, self.W_O):\n"
            "            nn.init.orthogonal_(layer.weight)\n",
        ),
    ],
    ids=[
        "mha_ref",
        "view-transpose",
        "einsum-loop",
        "buffer-bias",
        "fused",
        "decorated",
        "valueerror-subclass",
        "star-args",
        "thread-pool",
        "large-buffer",
        "last-map-kept",
        "kv-replaced",
        "orthogonal-init",
    ],
)
def test_correct_modules_pass(tmp_path, source, capsys):
    """mha_ref and independent correct modules pass every milestone.
    (In this process: the command line's own path is the subject of the
    subprocess tests below; each start costs two torch imports.)"""
    _copy_of_the_reference(tmp_path)
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 0, stdout
    assert list(lines) == MILESTONES
    assert set(_statuses(lines).values()) == {"PASS"}, stdout
    assert stdout.splitlines()[-1] == "7 of 7 milestones pass"
    assert "float64" not in stdout, stdout  # each follows its input's dtype


def test_a_loop_over_heads_passes_and_is_named(tmp_path, capsys):
    """The project's build rules say no Python loop over heads. A loop
    computes the right values, so it passes, and its h>1 line says what
    the rule is (a student's loop passed 7 of 7 told nothing); a batched
    forward, fused or not, is told nothing."""
    for source, looped in (
        (EINSUM_LOOP, True),
        (CORRECT, False),
        (FUSED, False),
    ):
        status, lines, stdout = _grade_here(tmp_path, source, capsys)
        assert status == 0, stdout
        status, detail = lines["h>1"]
        assert status == "PASS", stdout
        assert ("loop over the heads" in detail) is looped, detail
        if looped:
            # The counts it read at h=2 and h=8: 6 heads more, 6 or more
            # calls more.
            counts = [
                int(n) for n in re.findall(r"(\d+) (?:calls )?at h=", detail)
            ]
            assert len(counts) == 2 and counts[1] - counts[0] >= 6, detail
            assert "(B, h, T, d_k)" in detail, detail


@pytest.mark.parametrize(
    ("source", "entry", "first"),
    [
        (
            "from mha_ref import MultiHeadAttention\n",
            "MultiHeadAttention.__init__",
            "skeleton",
        ),
        (
            "import mha_ref.mha as m\n"
            "class MultiHeadAttention(m.MultiHeadAttention):\n"
            "    pass\n",
            "MultiHeadAttention.__init__",
            "skeleton",
        ),
        # A module of the student's own that hands its forward on.
        (
            _bug(
                "    def forward(self, query, key, value, mask=None, "
                "is_causal=False):\n",
                "    def forward(self, query, key, value, mask=None, "
                "is_causal=False):\n"
                "        import mha_ref\n"
                "        ref = mha_ref.MultiHeadAttention(self.h * self.d_k, "
                "self.h)\n"
                "        ref.load_state_dict(self.state_dict())\n"
                "        return ref(query, key, value, mask, is_causal)\n",
            ),
            "MultiHeadAttention.forward",
            "shapes",
        ),
        # Only the head split taken from the package.
        (
            _bug(
                "from torch import nn\n",
                "from torch import nn\nfrom mha_ref.mha import split_heads\n",
                "        return x.view(B, T, self.h, self.d_k)"
                ".transpose(1, 2)\n",
                "        return split_heads(x, self.h)\n",
            ),
            "split_heads",
            "shapes",
        ),
        # Handed to a thread the file started while it was imported: the
        # thread kept the import's hook, and every milestone passed.
        (
            _bug(
                "from torch import nn\n",
                "from torch import nn\nimport queue, threading\n"
                "import mha_ref\n"
                "JOBS, DONE = queue.Queue(), queue.Queue()\n"
                "def work():\n"
                "    while True:\n"
                "        state, h, args = JOBS.get()\n"
                "        ref = mha_ref.MultiHeadAttention("
                "state['W_Q.weight'].shape[0], h)\n"
                "        ref.load_state_dict(state)\n"
                "        DONE.put(ref(*args))\n"
                "threading.Thread(target=work, daemon=True).start()\n",
                "    def forward(self, query, key, value, mask=None, "
                "is_causal=False):\n",
                "    def forward(self, query, key, value, mask=None, "
                "is_causal=False):\n"
                "        JOBS.put((self.state_dict(), self.h, "
                "(query, key, value, mask, is_causal)))\n"
                "        return DONE.get()\n",
            ),
            "MultiHeadAttention.__init__",
            "shapes",
        ),
    ],
    ids=["imported", "subclassed", "delegated", "one-helper", "thread"],
)
def test_a_file_that_runs_the_reference_fails(
    tmp_path, source, entry, first, capsys
):
    """Importing, subclassing or calling ``mha_ref``'s code passed every
    milestone: the grade is of the student's code. Each milestone from
    the first that runs it fails, naming the reference's function."""
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    failed = MILESTONES[MILESTONES.index(first) :]
    for name in failed:
        assert lines[name][0] == "FAIL", stdout
        assert "ran the lesson's reference" in lines[name][1], stdout
        assert f"mha.py: {entry}" in lines[name][1], stdout


def test_the_reference_imported_from_a_copy_of_the_package_fails(
    tmp_path, capsys
):
    """The site's ``mha_ref.zip`` beside the file, imported under another
    name: its code is named by the zip's path, not the package's folder,
    and passed 7 of 7 (an expert's audit)."""
    package = Path(grade.__file__).parent
    with zipfile.ZipFile(tmp_path / "mha_ref.zip", "w") as archive:
        for file in package.glob("*.py"):
            archive.write(file, f"mha_ref/{file.name}")
    source = (
        "import importlib, sys, types\n"
        "from pathlib import Path\n"
        "package = types.ModuleType('zref')\n"
        "package.__path__ = [str(Path(__file__).with_name('mha_ref.zip'))"
        " + '/mha_ref']\n"
        "sys.modules['zref'] = package\n"
        "MultiHeadAttention = importlib.import_module('zref.mha')"
        ".MultiHeadAttention\n"
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert lines["skeleton"][0] == "FAIL", stdout
    assert "ran the lesson's reference" in lines["skeleton"][1], stdout


# forward hands the work to PyTorch's own multi-head attention: the
# layer the grader compares against, so every value matched. Both build
# its mask (True = blocked, one per head) the same way, then call it.
_TORCH_MHA = """\
    def forward(self, query, key, value, mask=None, is_causal=False):
        B, T_q, d = query.shape
        T_k = key.size(1)
        allowed = torch.ones(T_q, T_k, dtype=torch.bool)
        if is_causal:
            allowed = allowed.tril()
        if mask is not None:
            allowed = allowed & mask
        blocked = ~allowed.expand(B, self.h, T_q, T_k)
        blocked = blocked.reshape(B * self.h, T_q, T_k)
{call}
    def unused(self, query, key, value, mask=None, is_causal=False):
"""
FORWARD = (
    "    def forward(self, query, key, value, mask=None, is_causal=False):\n"
)
TORCH_MHA_FUNCTIONAL = _bug(
    FORWARD,
    _TORCH_MHA.format(
        call="""\
        out, w = nn.functional.multi_head_attention_forward(
            query.transpose(0, 1), key.transpose(0, 1),
            value.transpose(0, 1), d, self.h, None, None, None, None,
            False, 0.0, self.W_O.weight, None, training=self.training,
            need_weights=True, use_separate_proj_weight=True,
            attn_mask=blocked, q_proj_weight=self.W_Q.weight,
            k_proj_weight=self.W_K.weight, v_proj_weight=self.W_V.weight,
            average_attn_weights=False,
        )
        return out.transpose(0, 1), w
"""
    ),
)
TORCH_MHA_LAYER = _bug(
    FORWARD,
    _TORCH_MHA.format(
        call="""\
        layer = nn.MultiheadAttention(d, self.h, bias=False, batch_first=True)
        with torch.no_grad():
            layer.in_proj_weight.copy_(torch.cat(
                [self.W_Q.weight, self.W_K.weight, self.W_V.weight]))
            layer.out_proj.weight.copy_(self.W_O.weight)
        return layer(query, key, value, attn_mask=blocked,
                     average_attn_weights=False)
"""
    ),
)

# torch's layer run in a thread of _thread.start_new_thread, which
# threading.setprofile does not reach: 7 of 7 (an expert's audit).
TORCH_MHA_RAW_THREAD = _bug(
    FORWARD,
    _TORCH_MHA.format(
        call="""\
        import _thread, queue
        done = queue.Queue()
        def run():
            layer = nn.MultiheadAttention(
                d, self.h, bias=False, batch_first=True)
            with torch.no_grad():
                layer.in_proj_weight.copy_(torch.cat(
                    [self.W_Q.weight, self.W_K.weight, self.W_V.weight]))
                layer.out_proj.weight.copy_(self.W_O.weight)
            done.put(layer(query, key, value, attn_mask=blocked,
                           average_attn_weights=False))
        _thread.start_new_thread(run, ())
        return done.get()
"""
    ),
)

# torch's second layer, pure Python, for quantization: handed the four
# Linears it passed 7 of 7 (an expert's audit). Sequence-first: its
# batch_first path merges the heads wrongly.
TORCH_MHA_QUANTIZABLE = _bug(
    FORWARD,
    _TORCH_MHA.format(
        call="""\
        from torch.ao.nn.quantizable import MultiheadAttention
        layer = MultiheadAttention(d, self.h, bias=False)
        layer.linear_Q, layer.linear_K = self.W_Q, self.W_K
        layer.linear_V, layer.out_proj = self.W_V, self.W_O
        layer.train(self.training)
        out, w = layer(query.transpose(0, 1), key.transpose(0, 1),
                       value.transpose(0, 1), attn_mask=blocked,
                       average_attn_weights=False)
        return out.transpose(0, 1), w
"""
    ),
)


# The fused layer reached below nn.MultiheadAttention: five milestones
# passed for each of these callees (an expert's review).
FUSED_CALLEES = {
    "ops": "torch.ops.aten._native_multi_head_attention.default",
    "ops-op": "torch.ops.aten._native_multi_head_attention.default._op",
    "jit-operation": (
        'torch._C._jit_get_operation("aten::_native_multi_head_attention")[0]'
    ),
}


def _fused_call(callee: str) -> str:
    return _bug(
        FORWARD,
        _TORCH_MHA.format(
            call=f"""\
        w = torch.cat([self.W_Q.weight, self.W_K.weight, self.W_V.weight])
        out, weights = {callee}(
            query, key, value, d, self.h, w, torch.zeros(3 * d),
            self.W_O.weight, torch.zeros(d),
            blocked.view(B, self.h, T_q, T_k), True, False, None,
        )
        return out, weights
"""
        ),
    )


# The hook turned off by an exception inside it: an object of the file
# whose __class__ raised when the hook looked at it, then torch's layer
# unseen (a reviewer's attack: 7 of 7).
TORCH_MHA_UNHOOKED = _bug(
    "        out, w = nn.functional",
    """\
        class Odd(list):
            @property
            def __class__(self):
                raise RuntimeError("no")

        Odd().append(1)
        out, w = nn.functional""",
    source=TORCH_MHA_FUNCTIONAL,
)


@pytest.mark.parametrize(
    ("source", "entry"),
    [
        (TORCH_MHA_FUNCTIONAL, "F.multi_head_attention_forward"),
        *(
            (_fused_call(callee), "torch's fused _native_multi_head_attention")
            for callee in FUSED_CALLEES.values()
        ),
        (TORCH_MHA_UNHOOKED, "F.multi_head_attention_forward"),
        (TORCH_MHA_LAYER, "nn.MultiheadAttention"),
        (TORCH_MHA_QUANTIZABLE, "torch.ao.nn.quantizable.MultiheadAttention"),
        (TORCH_MHA_RAW_THREAD, "nn.MultiheadAttention"),
    ],
    ids=[
        "functional",
        *FUSED_CALLEES,
        "unhooked",
        "layer",
        "quantizable layer",
        "raw thread",
    ],
)
def test_a_forward_that_runs_torchs_multi_head_attention_fails(
    tmp_path, source, entry, capsys
):
    """PyTorch's own multi-head attention is what the grader compares
    against: a forward that calls it matched every value and passed 7 of
    7. Every milestone that calls forward now fails, naming the call;
    the skeleton (no forward) still passes."""
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert lines["skeleton"][0] == "PASS", stdout
    for name in MILESTONES[1:]:
        assert lines[name][0] == "FAIL", stdout
        assert "ran PyTorch's own multi-head attention" in lines[name][1]
        assert entry in lines[name][1], stdout


_SCRIPTED = "_F = torch.jit.script(nn.functional.multi_head_attention_forward)"


@pytest.mark.parametrize(
    ("edits", "failing"),
    [
        # Made on import: one public call, and 7 of 7 passed.
        (("\nclass ", f"\n{_SCRIPTED}\n\n\nclass "), "load"),
        # Made in forward.
        (
            ("        out, w = ", f"        {_SCRIPTED}\n        out, w = "),
            "shapes",
        ),
    ],
    ids=["on import", "in forward"],
)
def test_torchscript_of_torchs_attention_is_refused(
    tmp_path, capsys, edits, failing
):
    """A TorchScript graph runs no Python the grader's hook can see, so
    torch.jit.script of F.multi_head_attention_forward passed 7 of 7 (an
    attacker's audit): a file that makes one fails, naming the call."""
    source = _bug(
        "out, w = nn.functional.multi_head_attention_forward(",
        "out, w = _F(",
        *edits,
        source=TORCH_MHA_FUNCTIONAL,
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert lines[failing][0] == "FAIL", stdout
    assert "called torch.jit.script: the grader checks" in lines[failing][1]


def test_a_graph_read_back_through_torch_c_is_refused(tmp_path, capsys):
    """Below torch.jit.load: a graph saved beforehand and read back with
    torch._C.import_ir_module_from_buffer, the bytes in the file, passed
    7 of 7 running PyTorch's own attention (a fresh check)."""
    import base64
    import io
    import warnings

    saved = io.BytesIO()
    with warnings.catch_warnings():  # "deprecated": the student's reason
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(torch.nn.Identity()), saved)
    read = (
        "import base64\n\n_G = torch._C.import_ir_module_from_buffer(\n"
        "    torch._C.CompilationUnit(),\n"
        f"    base64.b64decode({base64.b64encode(saved.getvalue())!r}),\n"
        "    None, {}, False,\n)\n"
    )
    source = _bug("\nclass ", f"\n{read}\n\nclass ")
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    said = lines["load"][1]
    assert "called torch._C.import_ir_module_from_buffer" in said, said


def test_a_correct_module_passes_where_torchs_own_rounding_missed(
    tmp_path, capsys
):
    """On this seed nn.MultiheadAttention in float32 was 1.38e-05 off a
    correct module at h=1 (an expert's audit: the module was nearer the
    exact value than torch), and the direct view, which is the split
    itself at h=1, was named as its bug. The expected values are exact
    (float64) and the tolerance scales with the output."""
    (tmp_path / "my_mha.py").write_text(CORRECT)
    status = grade.main([str(tmp_path / "my_mha.py"), "--seed", "764489"])
    stdout = capsys.readouterr().out
    assert status == 0, stdout
    assert stdout.splitlines()[-1] == "7 of 7 milestones pass", stdout


@pytest.mark.parametrize("seed", ["48", "53"])
def test_gradients_rounded_in_float32_are_not_a_cut_graph(
    tmp_path, capsys, seed
):
    """Weights as exp(s - logsumexp(s)), a correct module: on these seeds
    its float32 gradients (up to 23) were 1.35e-4 off the exact ones and
    it was told its graph was cut (an expert's audit). Gradients are
    compared within a tolerance of their own size."""
    source = _bug(
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        top = scores.logsumexp(-1, keepdim=True)\n"
        "        weights = (scores - top).exp()\n",
    )
    (tmp_path / "my_mha.py").write_text(source)
    status = grade.main([str(tmp_path / "my_mha.py"), "--seed", seed])
    stdout = capsys.readouterr().out
    assert status == 0, stdout


def test_a_suspect_that_is_a_no_op_at_these_sizes_is_never_named():
    """At h=1 the direct view is the right split: whatever differs, it
    is not the cause (it was named for a correct module's rounding)."""
    gen = torch.Generator().manual_seed(0)
    weights = {
        name: torch.randn(8, 8, generator=gen) for name in grade.PROJECTIONS
    }
    module = grade.Module(0, 1, weights, [])
    x = torch.randn(2, 5, 8, generator=gen)  # (B, T, d_model)
    right = grade.reference(module, x, x, x)
    want = (right[0] + 1e-3, right[1])  # an expected value the suspect misses
    with pytest.raises(grade.Failed) as failed:
        grade.compare(
            module, (x, x, x), right, want, "at h=1",
            suspects=grade.VALUE_SUSPECTS, otherwise="OTHERWISE",
        )  # fmt: skip
    assert "direct view" not in str(failed.value), failed.value


def test_a_finite_fill_is_named_not_blamed_on_precision(tmp_path, capsys):
    """Blocked keys filled with -10: numbers close to the right ones,
    which got the lower-precision hint (an expert's audit). How much
    weight leaks depends on the draw (it may stay under the tolerance
    in a later milestone): one seed, so the test is the same each run."""
    source = _bug(
        'scores.masked_fill(~mask, float("-inf"))',
        "scores.masked_fill(~mask, -10.0)",
    )
    (tmp_path / "my_mha.py").write_text(source)
    status = grade.main([str(tmp_path / "my_mha.py"), "--seed", "1"])
    lines = _parse(capsys.readouterr().out)
    assert status == 1
    status, detail = lines["masks"]
    assert status == "FAIL", detail
    assert "blocked keys still get weight" in detail, detail
    assert "not a finite number" in detail, detail
    assert "lower precision" not in detail, detail


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_finite_fill_under_is_causal_is_named_too(tmp_path, capsys, seed):
    """The same fill for the causal rule as for the mask: milestone
    causal blamed lower precision on its (B, 1, T, T) mask call (an
    attacker's audit); each call under is_causal names the fill."""
    source = CORRECT.replace('float("-inf")', "-10.0")
    assert source.count("-10.0") >= 2
    (tmp_path / "my_mha.py").write_text(source)
    status = grade.main([str(tmp_path / "my_mha.py"), "--seed", str(seed)])
    lines = _parse(capsys.readouterr().out)
    assert status == 1
    state, detail = lines["causal"]
    assert state == "FAIL", detail
    assert "lower precision" not in detail, detail
    assert "not a finite number" in detail or "fix milestone masks" in detail


def test_a_students_file_saved_in_the_package_is_still_theirs(tmp_path):
    """A file saved inside the unzipped mha_ref/ folder is the student's
    code, not the reference's: only the package's own files count."""
    from mha_ref import _sandbox, mha

    x = torch.zeros(1, 2, 4)
    for student, theirs in (
        (tmp_path / "my_mha.py", False),
        (Path(mha.__file__), True),  # as if split_heads were theirs
    ):
        seen: set[str] = set()
        with _sandbox._watching(seen, student):
            mha.split_heads(x, 2)
        assert ("mha.py: split_heads" not in seen) == theirs, seen


def test_a_mask_made_on_the_cpu_passes_with_a_note_for_the_gpu(
    tmp_path, capsys
):
    """A causal mask made without device= is right on the CPU, where the
    grader runs, and raises on a GPU (slide 51): the causal line passes
    and says so. With device=scores.device, or from mha_ref, no note."""
    note = "on a GPU it would raise"
    status, lines, stdout = _grade_here(tmp_path, CORRECT, capsys)
    assert status == 0, stdout
    assert lines["causal"][0] == "PASS"
    assert note in lines["causal"][1]
    assert "device=scores.device" in lines["causal"][1]
    on_its_device = _bug(
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "allowed = torch.ones(\n"
        "                t_q, t_k, dtype=torch.bool, device=scores.device\n"
        "            ).tril()",
    )
    _copy_of_the_reference(tmp_path)
    for source in (on_its_device, "from ref_copy import MultiHeadAttention\n"):
        status, lines, stdout = _grade_here(tmp_path, source, capsys)
        assert status == 0, stdout
        assert note not in stdout, stdout


def test_a_mask_with_is_causal_given_to_sdpa_passes_with_a_note(
    tmp_path, capsys
):
    """scaled_dot_product_attention given a mask and is_causal together:
    PyTorch's CPU kernel combines them, a GPU's raises (an attacker's
    module passed 7 of 7 with no word of it). The causal line passes and
    says so."""
    source = _bug(
        "        return self.W_O(self.merge(weights @ v)), weights",
        "        ctx = torch.nn.functional.scaled_dot_product_attention(\n"
        "            q, k, v, attn_mask=mask, is_causal=is_causal\n"
        "        )\n"
        "        return self.W_O(self.merge(ctx)), weights",
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "allowed = torch.ones(\n"
        "                t_q, t_k, dtype=torch.bool, device=scores.device\n"
        "            ).tril()",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 0, stdout
    assert lines["causal"][0] == "PASS"
    assert "on a GPU it would raise" in lines["causal"][1], stdout
    assert "the causal rule in it, or is_causal alone" in lines["causal"][1]


def test_a_tensor_made_on_the_cpu_only_without_a_mask_gets_the_note(
    tmp_path, capsys
):
    """The device note tries each path forward takes: a default mask of
    all True made without device= when no mask is given (the causal one
    then made on its device) raises on a GPU in every call without a
    mask, and passed 7 of 7 with no word: the one call on 'meta' passed
    a mask and is_causal (an attacker's audit)."""
    source = _bug(
        "        if mask is not None:\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "        if mask is None:\n"
        "            mask = torch.ones(scores.shape[-2:], dtype=torch.bool)\n"
        '        scores = scores.masked_fill(~mask, float("-inf"))\n',
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "allowed = torch.ones(\n"
        "                t_q, t_k, dtype=torch.bool, device=mask.device\n"
        "            ).tril()",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 0, stdout
    assert lines["causal"][0] == "PASS"
    assert "on a GPU it would raise" in lines["causal"][1], stdout
    assert "without a mask" in lines["causal"][1], stdout


def test_a_module_that_raises_in_float64_passes_with_a_note(tmp_path, capsys):
    """A softmax told its dtype (torch.softmax(..., dtype=torch.float32),
    the upcast idiom with the type typed in) is right in float32, where
    the grader runs, and raises once the model is .double(): it passed 7
    of 7 with no word (an attacker's audit). The h>1 line passes and
    says so; a module that follows its input's dtype gets no note."""
    note = "in float64 (model.double()) it would raise"
    source = _bug(
        "torch.softmax(scores, dim=-1)",
        "torch.softmax(scores, dim=-1, dtype=torch.float32)",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 0, stdout
    assert lines["h>1"][0] == "PASS"
    assert note in lines["h>1"][1], stdout
    assert "no .double()" not in lines["h>1"][1], stdout  # the grader's
    status, lines, stdout = _grade_here(tmp_path, CORRECT, capsys)
    assert status == 0, stdout
    assert note not in stdout, stdout


# (edits for _bug, milestones that fail, words the first failure must hold)
BUGS = {
    # The output squeezed: told to fix its merge, which was right (a
    # second attacker's audit).
    "output squeezed": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        out = self.W_O(self.merge(weights @ v))\n"
        "        return out.squeeze(), weights\n",
        {"h>1", "masks", "T_q!=T_k"},
        ["an axis of size 1 is gone"],
    ),
    # Round 10 of an expert's audit: each passed 7 of 7, or was told
    # another cause. Gradients off whenever not training: an eval-mode
    # backward (saliency, a frozen layer) raised.
    "gradients off in eval mode": (
        FORWARD_LINE,
        FORWARD_LINE + "        with torch.set_grad_enabled(self.training and "
        "torch.is_grad_enabled()):\n"
        "            return self.go(query, key, value, mask, is_causal)\n"
        "\n" + FORWARD_LINE.replace("forward", "go"),
        {"h>1"},
        ["in eval mode with gradients on", "does not require grad"],
    ),
    # The weights detached in eval mode only.
    "weights detached in eval mode": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        shown = weights if self.training else weights.detach()\n"
        "        return self.W_O(self.merge(weights @ v)), shown\n",
        {"h>1"},
        ["after a backward pass in eval mode", "model.eval() leaves"],
    ),
    # A default of None tested with `is not None`: an explicit
    # is_causal=False masked the future.
    "is_causal=None tested with is not None": (
        FORWARD_LINE,
        FORWARD_LINE.replace("is_causal=False", "is_causal=None")
        + "        is_causal = is_causal is not None\n",
        {"h>1"},
        ["is_causal=False", "if is_causal"],
    ),
    # torch.manual_seed(0) in forward: every caller's random numbers
    # reset at each call.
    "torch.manual_seed in forward": (
        FORWARD_LINE,
        FORWARD_LINE + "        torch.manual_seed(0)\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["random number generator", "seed once"],
    ),
    # The same in __init__, "for a reproducible initialisation": every
    # layer of a model built the same, the caller's numbers reset (it
    # passed 7 of 7: an expert's audit).
    "torch.manual_seed in __init__": (
        "        super().__init__()\n",
        "        super().__init__()\n        torch.manual_seed(0)\n",
        {"skeleton"},
        ["random number generator", "torch.manual_seed", "seed once"],
    ),
    # A loop over heads that gives every head the first head's mask: a
    # mask per head (B, h, T, T), as mha_ref takes, passed 7 of 7.
    "head 0's mask for every head": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            m = mask if mask.dim() < 4 else mask[:, :1]\n"
        '            scores = scores.masked_fill(~m, float("-inf"))\n',
        {"masks"},
        ["every head got head 0's mask", "mask per head"],
    ),
    # A split written for one sequence: no batch axis in the view (an
    # expert's audit: its T_q!=T_k line blamed the two lengths).
    "a view without the batch axis": (
        "        q = self.split(self.W_Q(query))\n",
        "        q = self.W_Q(query).view(query.size(1), self.h, self.d_k)\n"
        "        q = q.transpose(0, 1).unsqueeze(0)\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["an axis short (the batch? the heads?)", ".view(B, T, h, d_k)"],
    ),
    # The query projected from the key, viewed with the query's length:
    # told to split the key by its own length, which it already did.
    "query projected from the key": (
        "        q = self.split(self.W_Q(query))\n",
        "        B, T_q, _ = query.shape\n"
        "        q = self.W_Q(key).view(B, T_q, self.h, self.d_k)\n"
        "        q = q.transpose(1, 2)\n",
        {"T_q!=T_k"},
        ["viewed with the query's", "W_Q(query)"],
    ),
    # A K/V cache for inference keyed on the key's id and _version: a new
    # encoder output reusing a freed tensor's id got the old K and V.
    "K and V cached by the key's id and version": (
        "        k = self.split(self.W_K(key))\n"
        "        v = self.split(self.W_V(value))\n",
        "        tag = (id(key), key._version, tuple(key.shape))\n"
        "        if key is query or torch.is_grad_enabled():\n"
        "            k = self.split(self.W_K(key))\n"
        "            v = self.split(self.W_V(value))\n"
        "        else:\n"
        "            if getattr(self, 'tag', None) != tag:\n"
        "                self.tag = tag\n"
        "                self.kv = (self.split(self.W_K(key)),\n"
        "                           self.split(self.W_V(value)))\n"
        "            k, v = self.kv\n",
        {"T_q!=T_k"},
        ["on a new key and value", "keeps something from an earlier call"],
    ),
    # The last call's scores added to this call's: told "nothing random
    # may run in eval mode" (deterministic), then a mask hint.
    "the last call's scores added": (
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n",
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n"
        "        last = getattr(self, 'last', None)\n"
        "        if last is not None and last.shape == scores.shape:\n"
        "            scores = scores + last\n"
        "        self.last = scores.detach()\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["keeps something from an earlier call", "called once before"],
    ),
    # Each call's K and V appended to the last call's (a cache always
    # on): told the weights' shape was wrong, then the mask.
    "K and V appended to the last call's": (
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n",
        "        if getattr(self, 'k', None) is not None and "
        "len(self.k) == len(k):\n"
        "            k = torch.cat([self.k, k], 2)\n"
        "            v = torch.cat([self.v, v], 2)\n"
        "        self.k, self.v = k.detach(), v.detach()\n"
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["keeps something from an earlier call"],
    ),
    # The last call's weights returned with this call's output: told the
    # weights came from before the mask.
    "the last call's weights returned": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        shown = getattr(self, 'last', weights)\n"
        "        self.last = weights\n"
        "        return self.W_O(self.merge(weights @ v)), shown\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["keeps something from an earlier call"],
    ),
    # W_Q, W_K, W_V fused when train(False) is called, and used in eval
    # mode: stale once new weights come after eval() (the grader called
    # train() before every call, which fused them again).
    "a fused copy made by train(False)": (
        FORWARD_LINE,
        "    def train(self, mode=True):\n"
        "        super().train(mode)\n"
        "        if not mode:\n"
        "            w = (self.W_Q.weight, self.W_K.weight, self.W_V.weight)\n"
        "            self.qkv = torch.cat(w).detach()\n"
        "        return self\n"
        "\n" + FORWARD_LINE,
        "        q = self.split(self.W_Q(query))\n"
        "        k = self.split(self.W_K(key))\n"
        "        v = self.split(self.W_V(value))\n",
        "        if not self.training and hasattr(self, 'qkv'):\n"
        "            wq, wk, wv = self.qkv.chunk(3)\n"
        "        else:\n"
        "            wq, wk, wv = (self.W_Q.weight, self.W_K.weight,\n"
        "                          self.W_V.weight)\n"
        "        q = self.split(query @ wq.T)\n"
        "        k = self.split(key @ wk.T)\n"
        "        v = self.split(value @ wv.T)\n",
        {"h>1"},
        ["after new weights were copied"],
    ),
    # Round 9 of an expert's audit: each passed, or was told another
    # cause. The merge in (d_k, h) order: sent to a second SDPA call.
    "merge in (d_k, h) order": (
        "        return x.transpose(1, 2).contiguous().view(B, T, h * d_k)\n",
        "        return x.permute(0, 2, 3, 1).reshape(B, T, h * d_k)\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["merge orders each position's features as (d_k, h)"],
    ),
    # W_O's weight used as stored: x @ weight, not x @ weight.T.
    "W_O multiplied as stored": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return self.merge(weights @ v) @ self.W_O.weight, weights\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["W_O.weight as it is stored", "x @ weight.T"],
    ),
    # The output masked, the weights returned before the mask: told
    # their layout was wrong.
    "weights returned before the mask": (
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        raw = torch.softmax(q @ k.transpose(-2, -1) / "
        "math.sqrt(self.d_k), dim=-1)\n"
        "        return self.W_O(self.merge(weights @ v)), raw\n",
        {"masks", "causal"},
        ["softmax of the scores before any mask"],
    ),
    # The Annotated Transformer's mask.unsqueeze(1) on a mask already
    # (B, 1, 1, T_k): the scores went 5-D and the merge raised, unnamed.
    "mask given an axis": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            mask = mask.unsqueeze(1) if mask.dim() == 4 else mask\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["without the mask this call runs", "unsqueeze nothing"],
    ),
    # exp(s - s.max()) over the whole tensor: NaN on large inputs, mask
    # or not; the masked calls were told the mask was the cause.
    "one max for all the scores": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        e = torch.exp(scores - scores.max())\n"
        "        weights = e / e.sum(-1, keepdim=True)\n",
        {"h>1", "masks", "causal"},
        ["exp() of large scores overflows"],
    ),
    # Dropout on the weights in train mode (the Annotated Transformer):
    # told to look for a second SDPA call.
    "dropout in train mode": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        out_w = nn.functional.dropout(weights, 0.1, self.training)\n"
        "        return self.W_O(self.merge(out_w @ v)), weights\n",
        {"h>1"},
        ["in train mode too", "no dropout"],
    ),
    # nn.init.constant_ on every projection: 7 of 7; the heads never
    # separate in training.
    "constant initialisation": (
        "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n",
        "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n"
        "        for lin in (self.W_Q, self.W_K, self.W_V, self.W_O):\n"
        "            nn.init.constant_(lin.weight, 0.02)\n",
        {"skeleton"},
        ["constant initialisation", "heads start identical"],
    ),
    # torch.set_grad_enabled(False) as a statement in eval mode: the
    # caller's autograd stayed off.
    "gradients left off": (
        "        q = self.split(self.W_Q(query))\n",
        "        if not self.training:\n"
        "            torch.set_grad_enabled(False)\n"
        "        q = self.split(self.W_Q(query))\n",
        {"h>1"},
        ["turned gradients off and left them so"],
    ),
    # A buffer registered in forward: a trained model's state_dict did
    # not load into a new one.
    "buffer registered in forward": (
        "        q = self.split(self.W_Q(query))\n",
        "        self.register_buffer('seen', torch.ones(1))\n"
        "        q = self.split(self.W_Q(query))\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["forward registered seen", "register it in __init__"],
    ),
    # Attention maps kept for plotting, with their graph: memory grows
    # each training step.
    "weights kept with their graph": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        self.maps = getattr(self, 'maps', []) + [weights]\n",
        {"h>1"},
        ["keeps a tensor of the call's graph in self.maps"],
    ),
    # Attention maps kept for plotting, detached: no graph, but one more
    # (B, h, T, T) map each call, so a training run's memory grows every
    # step (B=32, h=8, T=512: 256 MB a step). It passed 7 of 7.
    "detached weights kept each call": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        self.maps = getattr(self, 'maps', []) + [weights.detach()]\n",
        {"h>1"},
        ["self.maps", "grew", "each call"],
    ),
    "detached weights kept in training only": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        if self.training:\n"
        "            self.maps = getattr(self, 'maps', [])\n"
        "            self.maps.append(weights.detach())\n",
        {"h>1"},
        ["self.maps", "grew", "in train mode"],
    ),
    # Sizes typed into forward: right for every call of the first shape
    # (B=2, d_model=8), so only a call of another shape shows them.
    "batch size typed in": (
        "        B, T, _ = x.shape\n",
        "        T = x.shape[1]\n        B = 2\n",
        {"h>1", "masks"},  # masks: one sequence (B = 1) too
        ["B=5", "is a size typed into forward"],
    ),
    "d_model typed in": (
        "        return x.transpose(1, 2).contiguous().view(B, T, h * d_k)\n",
        "        return x.transpose(1, 2).contiguous().view(B, T, 8)\n",
        {"h>1"},
        ["d_model=12", "is a size typed into forward"],
    ),
    # One sequence's padding used for the whole batch.
    "the first row of the mask": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        '            scores = scores.masked_fill(~mask[0], float("-inf"))\n',
        {"masks", "causal"},
        ["the first sequence's mask is used for the whole batch"],
    ),
    # The padding mask squeezed to its rows: at B = 1 the batch axis
    # went too, and forward raised (inference runs one sequence).
    "a squeezed mask": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            if mask.dim() == 4:\n"
        "                mask = mask.squeeze()[:, None, None, :]\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["one sequence (B = 1)", "IndexError"],
    ),
    # The scale folded into W_Q on every call: each call computed other
    # numbers, and the grader blamed randomness in eval mode.
    "W_Q rescaled in place": (
        "        q = self.split(self.W_Q(query))\n",
        "        self.W_Q.weight.data /= 2\n"
        "        q = self.split(self.W_Q(query))\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["changed the weights of W_Q", "not the weights"],
    ),
    # The heads' average returned in every head's place: the output is
    # right, and the hint sent the student to a split that was right.
    "weights averaged, head axis kept": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return self.W_O(self.merge(weights @ v)), "
        "weights.mean(1, keepdim=True).expand_as(weights)\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["the heads' average", "(B, h, T_q, T_k)"],
    ),
    # Scores as (B*h, T_q, T_k), the mask repeated batch after batch
    # (repeat) where each sequence's rows are together (repeat_interleave).
    "mask repeated, not interleaved": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            B, h, t_q, t_k = scores.shape\n"
        "            rows = mask.expand(B, 1, t_q, t_k).reshape(B, t_q, t_k)\n"
        "            flat = scores.reshape(B * h, t_q, t_k)\n"
        "            flat = flat.masked_fill(\n"
        '                ~rows.repeat(h, 1, 1), float("-inf"))\n'
        "            scores = flat.view(B, h, t_q, t_k)\n",
        {"masks", "causal"},
        ["repeat_interleave(h, dim=0)"],
    ),
    # The mask expanded as (h, B, ...) for scores laid out (B*h, ...):
    # right wherever B == h or B == 1, so at B = h = 2 it passed 7 of 7
    # (an expert's audit).
    "mask laid out for B == h": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            B, h, t_q, t_k = scores.shape\n"
        "            rows = mask.expand(h, B, t_q, t_k)\n"
        "            rows = rows.reshape(h * B, t_q, t_k)\n"
        "            flat = scores.reshape(B * h, t_q, t_k)\n"
        '            flat = flat.masked_fill(~rows, float("-inf"))\n'
        "            scores = flat.view(B, h, t_q, t_k)\n",
        {"masks"},
        ["B = 3, h = 2", "the mask's batch axis is B"],
    ),
    # The masking step under torch.no_grad(): every value right, and no
    # gradient for W_Q or W_K whenever a mask is given (an expert's audit).
    "mask step without gradients": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            with torch.no_grad():\n"
        '                scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["W_Q, W_K", "none at all", "no torch.no_grad()"],
    ),
    # is_causal defaulting to True: every call without it masked the
    # future, and the hint was the formula's (an expert's audit).
    "is_causal on by default": (
        "    def forward(self, query, key, value, mask=None, "
        "is_causal=False):\n",
        "    def forward(self, query, key, value, mask=None, "
        "is_causal=True):\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["masks the future", "is_causal must default to False"],
    ),
    # The softmax in float16: every value off by about 1e-3, and the hint
    # was the formula's, for a formula that was right (an expert's audit).
    "softmax in float16": (
        "weights = torch.softmax(scores, dim=-1)",
        "weights = torch.softmax(scores.half(), dim=-1).float()",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["lower precision", "float32"],
    ),
    # (output, weights) returned the other way round.
    "output and weights swapped": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return weights, self.W_O(self.merge(weights @ v))\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["the two are swapped: return (output, weights)"],
    ),
    # The query scaled in place: the caller's tensor changes.
    "query scaled in place": (
        "        q = self.split(self.W_Q(query))\n",
        "        query /= 2\n        q = self.split(self.W_Q(query * 2))\n",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["changed its query", "q = q / scale"],
    ),
    # The first call's mask kept on self, used for every later call.
    "mask kept from the first call": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            self.kept = getattr(self, 'kept', mask)\n"
        '            scores = scores.masked_fill(~self.kept, float("-inf"))\n',
        {"masks", "causal"},
        ["forward used the mask of its earlier call"],
    ),
    # torch's own words ("Use .reshape(...)") for the lesson's slip.
    "merge without .contiguous()": (
        "        return x.transpose(1, 2).contiguous().view(B, T, h * d_k)\n",
        "        return x.transpose(1, 2).view(B, T, h * d_k)\n",
        {"shapes", "h>1", "masks", "causal", "T_q!=T_k"},  # h=1: a view
        ["call .contiguous() before .view"],
    ),
    "key projected from the query": (
        "        k = self.split(self.W_K(key))\n",
        "        k = self.split(self.W_K(query))\n",
        {"T_q!=T_k"},
        ["project the key argument with W_K(key)"],
    ),
    # Scaled by sqrt(h): at h=1 that is no scale at all.
    "scaled by sqrt(h)": (
        "/ math.sqrt(self.d_k)",
        "/ math.sqrt(self.h)",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["the scores are not scaled", "sqrt(h) is at h=1"],
    ),
    "sequence length typed in": (
        "        B, T, _ = x.shape\n",
        "        B = x.shape[0]\n        T = 5\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["T=4", "T=5", "it ran", "is a size typed into forward"],
    ),
    # A padding mask made (B, h, T_q, T_q): it fits only while the
    # queries are as many as the keys.
    "padding mask expanded with the query's length": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            B, h, t_q, _ = scores.shape\n"
        "            mask = mask.expand(B, h, t_q, t_q)\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"T_q!=T_k"},
        ["padding mask", "do not expand or reshape it"],
    ),
    # Right numbers, but the caller's mask comes back inverted: a second
    # layer given the same mask would attend where it may not.
    "mask changed in place": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        '            scores = scores.masked_fill(~mask, float("-inf"))\n'
        "            mask.logical_not_()\n",
        {"masks", "causal"},
        ["changed its mask argument in place"],
    ),
    # Both masks applied to the weights after the softmax (blocked: 0):
    # one masking step, so the causal line names it too.
    "masks after the softmax": (
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)",
        "scores = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(-1)",
        'scores.masked_fill(~mask, float("-inf"))',
        "scores.masked_fill(~mask, 0.0)",
        'scores.masked_fill(~allowed, float("-inf"))',
        "scores.masked_fill(~allowed, 0.0)",
        "weights = torch.softmax(scores, dim=-1)",
        "weights = scores",
        {"masks", "causal"},
        ["before the softmax"],
    ),
    # At h=1 the direct view is the right split: only h>1 sees it.
    "direct view": (
        "x.view(B, T, self.h, self.d_k).transpose(1, 2)",
        "x.view(B, self.h, T, self.d_k)",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["differ", "at h=2", "view(B, h, T, d_k)", "direct view"],
    ),
    "transpose first": (
        "x.view(B, T, self.h, self.d_k).transpose(1, 2)",
        "x.transpose(1, 2).reshape(B, self.h, T, self.d_k)",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["at h=1", "transposes to (B, d_model, T)"],
    ),
    "flat split": (
        "x.view(B, T, self.h, self.d_k).transpose(1, 2)",
        "x.view(B, T * self.h, self.d_k)",
        "B, h, T, d_k = x.shape\n"
        "        return x.transpose(1, 2).contiguous().view(B, T, h * d_k)",
        "return x.reshape(x.size(0), -1, self.h * self.d_k)",
        # At h=1 the flat split's weights (B, T, T) have no head axis.
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["weights are (2, 10, 10)", "flat split"],
    ),
    "W_V applied to the key": (
        "v = self.split(self.W_V(value))",
        "v = self.split(self.W_V(key))",
        {"T_q!=T_k"},
        ["value != key", "project the key with W_V", "W_V(value)"],
    ),
    "is_causal replaces the mask": (
        "if mask is not None:",
        "if is_causal:\n"
        "            mask = torch.ones(scores.shape[-2:], dtype=torch.bool)"
        ".tril()\n"
        "            is_causal = False\n"
        "        if mask is not None:",
        {"causal"},
        ["together", "is_causal replaced the mask", "mask & causal"],
    ),
    "mask skips is_causal": (
        "        if is_causal:\n            t_q",
        "        elif is_causal:\n            t_q",
        {"causal"},
        ["together", "skip is_causal", "mask & causal"],
    ),
    "detached softmax": (
        "weights = torch.softmax(scores, dim=-1)",
        "weights = torch.softmax(scores, dim=-1).detach()",
        {"h>1"},
        ["gradients of W_Q, W_K", "train mode", ".detach()"],
    ),
    "in-place softmax": (
        "weights = torch.softmax(scores, dim=-1)",
        "weights = (scores - scores.amax(-1, keepdim=True)).exp_()\n"
        "        weights /= weights.sum(dim=-1, keepdim=True)",
        {"h>1"},
        ["backward", "inplace operation", "out of place"],
    ),
    "causal mask cached from the first T": (
        "            t_q, t_k = scores.shape[-2:]\n"
        "            allowed = torch.ones(t_q, t_k, dtype=torch.bool)"
        ".tril()\n",
        "            if not hasattr(self, 'allowed'):\n"
        "                t_q, t_k = scores.shape[-2:]\n"
        "                self.allowed = torch.ones(t_q, t_k, "
        "dtype=torch.bool).tril()\n"
        "            allowed = self.allowed\n",
        {"causal"},
        ["T=7", "second call", "a mask kept from the first call"],
    ),
    # The causal mask cached on self by T_q alone (a helper's audit; the
    # module-global cache below is met from another module): a later call
    # on the same module with that T_q and another T_k, as one query at a
    # time against a growing key, got the old mask.
    "causal mask cached on self by T_q": (
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "if getattr(self, 'tril', torch.ones(0, 0)).shape[0] != t_q:\n"
        "                self.tril = torch.ones(t_q, t_k, dtype=torch.bool)"
        ".tril()\n"
        "            allowed = self.tril",
        {"T_q!=T_k"},
        ["T_q=5, T_k=7", "one kept from an earlier call with the same T_q"],
    ),
    "causal mask T_q x T_q": (
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "allowed = torch.ones(t_q, t_q, dtype=torch.bool).tril()",
        {"T_q!=T_k"},
        ["is_causal=True, T_q=5, T_k=7", "(T_q, T_k)", "not (T_q, T_q)"],
    ),
    "causal mask bottom-right": (
        "dtype=torch.bool).tril()",
        "dtype=torch.bool).tril(t_k - t_q)",
        {"T_q!=T_k"},
        ["is_causal=True, T_q=5, T_k=7", "bottom-right", "keys 0..i"],
    ),
    "dropout in eval mode": (
        "weights = torch.softmax(scores, dim=-1)",
        "weights = torch.nn.functional.dropout("
        "torch.softmax(scores, dim=-1), 0.5)",
        # a random draw in eval mode: named at the first call (round 10)
        set(MILESTONES) - {"skeleton"},
        ["random number generator in eval mode", "self.training"],
    ),
    "float64 weights": (
        "self.W_O = nn.Linear(d_model, d_model, bias=False)",
        "self.W_O = nn.Linear(d_model, d_model, bias=False, "
        "dtype=torch.float64)",
        set(MILESTONES),
        ["W_O.weight is torch.float64", "expected torch.float32"],
    ),
    "float64 attention weights": (
        "weights = torch.softmax(scores, dim=-1)\n"
        "        return self.W_O(self.merge(weights @ v)), weights",
        "weights = torch.softmax(scores, dim=-1, dtype=torch.float64)\n"
        "        return self.W_O(self.merge(weights.float() @ v)), weights",
        set(MILESTONES) - {"skeleton"},
        ["weights are torch.float64", "expected torch.float32"],
    ),
    "merge without transpose": (
        "x.transpose(1, 2).contiguous().view(B, T, h * d_k)",
        "x.contiguous().view(B, T, h * d_k)",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["output differs", "at h=2", "merge skips the transpose"],
    ),
    "scale sqrt(d_model)": (
        "math.sqrt(self.d_k)",
        "math.sqrt(self.h * self.d_k)",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["at h=2", "sqrt(d_model)", "sqrt(d_k)"],
    ),
    "no scaling": (
        " / math.sqrt(self.d_k)",
        "",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["at h=1", "the scores are not scaled", "sqrt(d_k)"],
    ),
    "scale by d_k, not its root": (
        "math.sqrt(self.d_k)",
        "self.d_k",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["at h=1", "you divide the scores by d_k", "sqrt(d_k)"],
    ),
    "softmax over queries": (
        "torch.softmax(scores, dim=-1)",
        "torch.softmax(scores, dim=-2)",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["weights differ", "at h=1", "softmax runs over the queries"],
    ),
    "missing W_O": (
        "return self.W_O(self.merge(weights @ v)), weights",
        "return self.merge(weights @ v), weights",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["output differs", "at h=1", "never apply W_O"],
    ),
    "causal off by one": (
        "dtype=torch.bool).tril()",
        "dtype=torch.bool).tril(-1)",
        {"causal"},
        ["is_causal=True", "off by one", "blocks the diagonal"],
    ),
    "causal sees one ahead": (
        "dtype=torch.bool).tril()",
        "dtype=torch.bool).tril(1)",
        {"causal"},
        ["off by one", "see key i+1"],
    ),
    "torch's mask convention": (
        "scores.masked_fill(~mask,",
        "scores.masked_fill(mask,",
        {"masks", "causal"},
        ["padding mask", "True as blocked", "True = may attend"],
    ),
    # An expert's audit (stop 56): each passed 7 of 7 or got another's
    # hint. The causal mask applied under no_grad ("a constant"): W_Q
    # and W_K learn nothing in a GPT built on it.
    "causal mask under no_grad": (
        '            scores = scores.masked_fill(~allowed, float("-inf"))\n',
        "            with torch.no_grad():\n"
        "                scores = scores.masked_fill(\n"
        '                    ~allowed, float("-inf")\n'
        "                )\n",
        {"causal"},
        [
            "with is_causal=True in train mode",
            "W_Q, W_K: none at all",
            "no torch.no_grad()",
        ],
    ),
    # exp() / sum: right on small scores, NaN on trained-size ones.
    "softmax without the max taken out": (
        "weights = torch.softmax(scores, dim=-1)",
        "weights = scores.exp() / scores.exp().sum(-1, keepdim=True)",
        {"h>1", "masks", "causal"},
        ["large inputs", "inf or NaN", "softmax is unstable"],
    ),
    # A merge that tells the axes apart by their sizes.
    "merge skipped when T equals h": (
        "        B, h, T, d_k = x.shape\n",
        "        B, h, T, d_k = x.shape\n"
        "        if T == h:  # already (B, T, h, d_k)?\n"
        "            return x.contiguous().view(B, T, h * d_k)\n",
        {"h>1"},
        ["T=4", "merge skips the transpose"],
    ),
    # A causal mask cached by T_q alone, met again with another T_k.
    "causal mask cached by T_q": (
        "import math\n",
        "import math\n_MASKS = {}\n",
        "allowed = torch.ones(t_q, t_k, dtype=torch.bool).tril()",
        "allowed = _MASKS.setdefault(\n"
        "                t_q, torch.ones(t_q, t_k, dtype=torch.bool).tril()\n"
        "            )",
        {"T_q!=T_k"},
        ["T_q=5, T_k=7", "an earlier call with the same T_q"],
    ),
    "masked_fill's result dropped": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        '            scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["ignores mask", "masked_fill returns a new tensor"],
    ),
    # The output from a second computation that scales otherwise; the
    # weights returned are right (F.scaled_dot_product_attention with
    # scale=sqrt(d_k) does this).
    "output computed apart from the weights": (
        "return self.W_O(self.merge(weights @ v)), weights",
        "again = torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n"
        "        return self.W_O(self.merge(again @ v)), weights",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["output differs", "your weights are right", "scale= multiplies"],
    ),
    # Self-attention's forward: the grader's key went to mask, and every
    # later line named something else (a project student's run).
    "forward(x, mask, is_causal)": (
        "def forward(self, query, key, value, mask=None, is_causal=False):",
        "def forward(self, x, mask=None, is_causal=False):\n"
        "        query = key = value = x",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["forward(x, mask, is_causal) takes mask", "query, key and value"],
    ),
    "forward(x)": (
        "def forward(self, query, key, value, mask=None, is_causal=False):",
        "def forward(self, x):\n"
        "        query = key = value = x\n"
        "        mask, is_causal = None, False",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["forward(x) takes fewer than three tensors", grade.SIGNATURE],
    ),
    # The rest from an expert's audit: each passed 7 of 7 before.
    # A "self-attention fast path" chosen by shape: key and value taken
    # from the query whenever the three have one shape.
    "key and value from the query when shapes match": (
        "        k = self.split(self.W_K(key))\n",
        "        if query.shape == key.shape == value.shape:\n"
        "            key = value = query\n"
        "        k = self.split(self.W_K(key))\n",
        {"T_q!=T_k"},
        ["T_q = T_k = 5", "projected from the query"],
    ),
    # The inputs detached "to leave the caller's tensors alone": every
    # value and weight gradient right, none for the layers before.
    "inputs detached": (
        "        q = self.split(self.W_Q(query))\n",
        "        query, key, value = (\n"
        "            t.clone().detach() for t in (query, key, value))\n"
        "        q = self.split(self.W_Q(query))\n",
        {"h>1"},
        ["gradients of the inputs", ".detach()"],
    ),
    # Scores clamped "against overflow": wrong wherever one exceeds 50.
    "scores clamped": (
        "        if mask is not None:\n",
        "        scores = scores.clamp(-50, 50)\n"
        "        if mask is not None:\n",
        {"h>1", "masks", "causal"},
        ["large inputs", "do not clamp"],
    ),
    # The mask's convention guessed from how much of it is True.
    "mask convention guessed": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            if mask.float().mean() < 0.5:\n"
        "                mask = ~mask\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["three sequences", "however much of the mask is True"],
    ),
    # A 2-D mask whose first size is B read as (B, T_k) padding.
    "2-D mask told by B": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            if mask.dim() == 2 and mask.size(0) == scores.size(0):\n"
        "                mask = mask[:, None, None, :]\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks"},
        ["B = T = 4", "number of dimensions"],
    ),
    # Every 4-D mask read as padding (its last row): a decoder's
    # (B, 1, T, T) mask lost its causal part.
    "4-D mask read as padding": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            if mask.dim() == 4:\n"
        "                mask = mask[:, :, -1:, :]\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        {"masks", "causal"},
        ["(B, 1, T, T)", "a row per query"],
    ),
    # is_causal dropped for one query (a KV cache's rule); top-left, one
    # query sees key 0 only.
    "one query skips causal": (
        "        if is_causal:\n",
        "        if is_causal and query.size(1) > 1:\n",
        {"T_q!=T_k"},
        ["T_q=1", "ignores is_causal"],
    ),
    # nn.MultiheadAttention's (T, B, d) layout guessed from the sizes.
    "layout guessed from sizes": (
        "        q = self.split(self.W_Q(query))\n",
        "        if query.size(0) > query.size(1):\n"
        "            query, key, value = (\n"
        "                t.transpose(0, 1) for t in (query, key, value))\n"
        "        q = self.split(self.W_Q(query))\n",
        {"h>1", "T_q!=T_k"},
        ["(B, T, d_model)", "do not guess the layout"],
    ),
    # The batch size kept from the first call: the B = 3 call with a
    # mask raised in split, and was named a mask problem.
    "batch size kept from the first call": (
        "        B, T, _ = x.shape\n",
        "        if not hasattr(self, 'batch'):\n"
        "            self.batch = x.shape[0]\n"
        "        B, T = self.batch, x.shape[1]\n",
        {"masks"},
        ["with B = 3 and no mask", "kept from an earlier call"],
    ),
    # Weights reshaped, not transposed, to (B, h, T_q, T_k): the output
    # right, and the split's hint sent the student to a right split.
    "weights reshaped": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return self.W_O(self.merge(weights @ v)), "
        "weights.transpose(1, 2).reshape(weights.shape)\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["your output is right", "transpose or permute"],
    ),
    "output through W_V": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return self.W_V(self.merge(weights @ v)), weights\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["through W_V, not W_O"],
    ),
    "residual inside the layer": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return query + self.W_O(self.merge(weights @ v)), weights\n",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["adds the query", "residual"],
    ),
    # K and V cached by the key's address: a new key in the freed
    # storage of the last got the old answer, caught or not as the
    # allocator happened to reuse addresses.
    "K and V cached by data_ptr": (
        "        k = self.split(self.W_K(key))\n"
        "        v = self.split(self.W_V(value))\n",
        "        tag = (key.data_ptr(), value.data_ptr(), tuple(key.shape))\n"
        "        if getattr(self, 'tag', None) != tag:\n"
        "            self.tag = tag\n"
        "            self.kv = (self.split(self.W_K(key)),\n"
        "                       self.split(self.W_V(value)))\n"
        "        k, v = self.kv\n",
        # masks: x * 20 of the large-input call sits in x's storage;
        # T_q!=T_k: a new key and value of the same shapes
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["on a second input", "keeps something from an earlier call"],
    ),
    "scale inverted": (
        "/ math.sqrt(self.d_k)",
        "/ (1 / math.sqrt(self.d_k))",
        {"h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["multiply the scores by sqrt(d_k)"],
    ),
    # Each row of a mask read as a length (its count of True): right for
    # every mask that allows a prefix of the keys, wrong for left padding
    # and for a window (query i sees keys i-1..i+1) with is_causal.
    "mask read as lengths": (
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "            n = mask.sum(-1, keepdim=True)\n"
        "            prefix = torch.arange(mask.size(-1)) < n\n"
        '            scores = scores.masked_fill(~prefix, float("-inf"))\n',
        {"masks", "causal"},
        ["left-padding", "reads each row of the mask as a length"],
    ),
    # Encoder-decoder attention, mha(dec, enc, enc): key is value.
    "key and value swapped when key is value": (
        "        v = self.split(self.W_V(value))\n",
        "        v = self.split(self.W_V(value))\n"
        "        if key is value and key is not query:\n"
        "            k, v = v, k\n",
        {"T_q!=T_k"},
        ["key is value", "self.W_K(key) and self.W_V(value)"],
    ),
    "key and value detached in cross-attention": (
        "        k = self.split(self.W_K(key))\n",
        "        if key is not query:\n"
        "            key, value = key.detach(), value.detach()\n"
        "        k = self.split(self.W_K(key))\n",
        {"T_q!=T_k"},
        ["key is value", "gradients of the inputs (key, value)"],
    ),
    # nn.MultiheadAttention's reading of is_causal: a hint that the mask
    # is causal already, so dropped for a mask with a row per query.
    "is_causal dropped for a mask with a row per query": (
        "        if is_causal:\n",
        "        if is_causal and (mask is None or mask.size(-2) == 1):\n",
        {"causal"},
        ["a row per query", "mask & causal"],
    ),
    "causal part (T_q, T_q) beside a mask": (
        "            t_q, t_k = scores.shape[-2:]\n",
        "            t_q, t_k = scores.shape[-2:]\n"
        "            if mask is not None:\n"
        "                t_k = t_q\n",
        {"T_q!=T_k"},
        ["a padding mask and is_causal", "not (T_q, T_q)"],
    ),
    # Zeroed "to start uniform": neither ever gets a gradient.
    "W_Q and W_K zeroed": (
        "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n",
        "        self.W_O = nn.Linear(d_model, d_model, bias=False)\n"
        "        nn.init.zeros_(self.W_Q.weight)\n"
        "        nn.init.zeros_(self.W_K.weight)\n",
        {"skeleton"},
        ["W_Q and W_K are all zeros as built", "own initialisation"],
    ),
    # The weights written into a tensor kept on self, returned each call.
    "weights returned in a kept buffer": (
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        if getattr(self, 'buf', None) is None or "
        "self.buf.shape != weights.shape:\n"
        "            self.buf = torch.empty_like(weights)\n"
        "        with torch.no_grad():\n"
        "            self.buf.copy_(weights)\n"
        "        return self.W_O(self.merge(weights @ v)), self.buf\n",
        {"h>1", "masks", "causal", "T_q!=T_k"},
        ["an earlier call returned changed", "return new tensors"],
    ),
    # The mask's additive bias cached by the mask's address and shape:
    # masks come by keyword, and a new mask of a shape seen before sits
    # in that shape's storage.
    "mask bias cached by data_ptr": (
        "        if mask is not None:\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "        if mask is not None:\n"
        "            cache = self.__dict__.setdefault('biases', {})\n"
        "            tag = (mask.data_ptr(), tuple(mask.shape))\n"
        "            if tag not in cache:\n"
        "                cache[tag] = torch.zeros(mask.shape).masked_fill(\n"
        '                    ~mask, float("-inf"))\n'
        "            scores = scores + cache[tag]\n",
        {"masks"},
        ["an earlier call of this shape", "data_ptr"],
    ),
    "is_causal before mask in the signature": (
        "value, mask=None, is_causal=False):",
        "value, is_causal=False, mask=None):",
        {"shapes", "h=1", "h>1", "masks", "causal", "T_q!=T_k"},
        ["takes is_causal as its fourth argument", "mha(x, x, x, mask)"],
    ),
    "softmax over the heads when T_q != T_k": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        dim = -1 if scores.size(-1) == scores.size(-2) else 1\n"
        "        weights = torch.softmax(scores, dim=dim)\n",
        {"T_q!=T_k"},
        ["your softmax runs over the heads"],
    ),
    # The row's max taken over every key, blocked ones too, and the
    # blocked ones zeroed after exp(): NaN once a blocked key held the
    # max by more than float32 can take (caught on 200 seeds of 200).
    "max taken before the mask": (
        "        if mask is not None:\n"
        '            scores = scores.masked_fill(~mask, float("-inf"))\n',
        "        keep = None if mask is None else mask.to(scores.dtype)\n",
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = (scores - scores.amax(-1, keepdim=True)).exp()\n"
        "        if keep is not None:\n"
        "            weights = weights * keep\n"
        "        weights = weights / weights.sum(-1, keepdim=True)\n",
        {"masks"},
        ["with a padding mask (lengths 1 and 2)", "the allowed keys only"],
    ),
    # Paths the fixed calls never took (an expert's audit: 13 modules
    # passed 7 of 7); the sweeps cross each feature with h = 1, B = 1,
    # key is value, 2-D masks, arguments by position, strided inputs.
    "masks skipped at h = 1": (
        "        if mask is not None:\n",
        "        if mask is not None and self.h > 1:\n",
        "        if is_causal:\n",
        "        if is_causal and self.h > 1:\n",
        {"masks", "causal"},
        ["at h=1", "here your forward ignores mask", "on every path"],
    ),
    "is_causal dropped beside a 2-D mask": (
        "        if is_causal:\n",
        "        if is_causal and (mask is None or mask.dim() == 4):\n",
        {"causal"},
        ["a (T_q, T_k) mask and is_causal=True", "is_causal was dropped"],
    ),
    "is_causal dropped for one sequence": (
        "        if is_causal:\n",
        "        if is_causal and query.size(0) > 1:\n",
        {"causal"},
        ["B=1", "ignores is_causal"],
    ),
    # A checking decorator that hands on query, key, value and keywords:
    # a mask passed by position was dropped.
    "a decorator drops arguments by position": (
        "class MultiHeadAttention(nn.Module):\n",
        "def checked(forward):\n"
        "    import functools\n\n"
        "    @functools.wraps(forward)\n"
        "    def run(self, query, key, value, *rest, **named):\n"
        "        return forward(self, query, key, value, **named)\n\n"
        "    return run\n\n\n"
        "class MultiHeadAttention(nn.Module):\n",
        "    def forward(self, query, key, value, mask=None,",
        "    @checked\n    def forward(self, query, key, value, mask=None,",
        {"masks", "causal"},
        ["(passed by position)"],
    ),
    "a view that needs a contiguous input": (
        "        q = self.split(self.W_Q(query))\n",
        "        flat = query.view(-1, query.size(-1))\n"
        "        q = self.split(self.W_Q(flat).view(query.shape))\n",
        {"h>1"},
        ["the input a non-contiguous view", "view size is not compatible"],
    ),
    # W_Q copied at the first call and kept: right until the weights
    # change in place (an optimiser's step, load_state_dict).
    "W_Q copied once and kept": (
        "        q = self.split(self.W_Q(query))\n",
        "        if not hasattr(self, 'kept'):\n"
        "            self.kept = self.W_Q.weight.detach().clone()\n"
        "        q = self.split(query @ self.kept.T)\n",
        {"h>1"},
        ["after new weights were copied", "made once"],
    ),
    # A softmax per block of 8 keys, the blocks averaged: exact up to
    # T = 8, and every call before the long one was shorter.
    "a softmax per block of keys": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        blocks = scores.split(8, dim=-1)\n"
        "        weights = torch.cat([b.softmax(-1) for b in blocks], -1)\n"
        "        weights = weights / len(blocks)\n",
        {"h>1", "causal"},
        [f"a long sequence (T={grade.LONG_T})", "in blocks"],
    ),
    # The same with blocks of 64 keys, a flash-style tile: exact at the
    # T = 40 the long call had (round 10).
    "a softmax per block of 64 keys": (
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        blocks = scores.split(64, dim=-1)\n"
        "        weights = torch.cat([b.softmax(-1) for b in blocks], -1)\n"
        "        weights = weights / len(blocks)\n",
        {"h>1"},  # (causal calls stay within 40 keys: CAUSAL_LONG_T)
        ["a long sequence", "in blocks"],
    ),
}


@pytest.mark.parametrize("bug", list(BUGS))
def test_each_bug_fails_its_milestone_with_its_hint(tmp_path, bug, capsys):
    """The grader fails exactly the milestones the bug breaks, and the
    first failure names the bug."""
    *edits, failing, words = BUGS[bug]
    status, lines, stdout = _grade_here(tmp_path, _bug(*edits), capsys)
    assert status == 1, stdout
    assert {n for n, s in _statuses(lines).items() if s == "FAIL"} == failing
    first = next(name for name in MILESTONES if name in failing)
    detail = lines[first][1]
    for word in words:
        assert word in detail, f"{word!r} not in {first}: {detail}"
    assert (
        stdout.splitlines()[-1] == f"{7 - len(failing)} of 7 milestones pass"
    )
    for name, (present, absent) in LATER_LINES.get(bug, {}).items():
        assert all(word in lines[name][1] for word in present), lines[name]
        assert not any(word in lines[name][1] for word in absent)


# What a later line must (and must not) say, beyond the first failure.
LATER_LINES = {
    "a view without the batch axis": {
        "T_q!=T_k": (["an axis short"], ["each tensor keeps its length"]),
    },
    # A PASS claims only the sizes that ran: the sweeps wait for h>1.
    "batch size typed in": {
        "causal": (["once h>1 passes"], ["B = 1 to 6"]),
        "T_q!=T_k": (["once h>1 passes"], ["B = 1 to 6"]),
    },
    # At h=1 the flat split's weights lack the head axis; the cause is
    # the split, not an average over heads.
    "flat split": {"h=1": (["no head axis", "split to (B, h, T, d_k)"],
                           ["their average"])},
    "masks after the softmax": {
        "causal": (["fix milestone masks first", "how a mask is applied"],
                   [])
    },
    "forward(x, mask, is_causal)": {
        name: (["not graded until milestone shapes passes"], ["mask_scores"])
        for name in ("h=1", "h>1", "masks", "causal", "T_q!=T_k")
    },
    "one max for all the scores": {
        name: (["exp() of large scores overflows"], ["allowed keys only"])
        for name in ("masks", "causal")
    },
    # A value bug at h>1: the mask lines send the student back, no guess.
    "direct view": {
        name: (["fix milestone h>1 first"], ["True as blocked", "off by one"])
        for name in ("masks", "causal", "T_q!=T_k")
    },
}  # fmt: skip


def test_key_split_by_query_length_is_located(tmp_path, capsys):
    """A split that reuses the query's T crashes only when T_q != T_k."""
    source = _bug(
        "k = self.split(self.W_K(key))",
        "k = self.W_K(key).view(*query.shape[:2], self.h, self.d_k)"
        ".transpose(1, 2)",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    failing = {n for n, s in _statuses(lines).items() if s == "FAIL"}
    assert failing == {"T_q!=T_k"}, stdout
    detail = lines["T_q!=T_k"][1]
    line = _line_of(source, "view(*query.shape[:2]")
    assert detail.startswith("forward with T_q=3, T_k=7")
    assert "raised RuntimeError" in detail
    assert f"(my_mha.py:{line} in forward)" in detail
    assert "key.size(1)" in detail


def test_merge_by_key_length_is_told_the_querys(tmp_path, capsys):
    """The opposite mix-up, the output merged with the key's length:
    the hint must not send the student to the (right) key split."""
    source = _bug(
        "        return self.W_O(self.merge(weights @ v)), weights",
        "        ctx = (weights @ v).transpose(1, 2).contiguous()\n"
        "        ctx = ctx.view(key.size(0), key.size(1), -1)\n"
        "        return self.W_O(ctx), weights",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    detail = lines["T_q!=T_k"][1]
    assert "the query's length" in detail, detail
    assert "key.size(1)" not in detail, detail


def test_state_kept_from_an_earlier_call_is_named(tmp_path, capsys):
    """A key cached on self at the first call: right for that input, so
    h>1 calls the module again on a new one and names the cause (else a
    later milestone took the blame, with a mask hint)."""
    source = _bug(
        "        k = self.split(self.W_K(key))\n",
        '        if not hasattr(self, "_k"):\n'
        "            self._k = self.split(self.W_K(key))\n"
        "        k = self._k\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["h>1"][0] == "FAIL", stdout
    assert "keeps something from an earlier call" in lines["h>1"][1]


def test_syntax_error_is_reported_with_its_line(tmp_path):
    source = _bug("def merge(self, x):", "def merge(self x):")
    status, lines, stdout = _grade(tmp_path, source)
    assert status == 1
    line = _line_of(source, "def merge(self x):")
    assert lines == {"load": ("FAIL", lines["load"][1])}, stdout
    assert "SyntaxError" in lines["load"][1]
    assert f"my_mha.py:{line}" in lines["load"][1]
    assert stdout.splitlines()[-1] == "0 of 7 milestones pass"


def test_a_file_that_starts_indented_is_told_how_the_notebook_writes_it(
    tmp_path, capsys
):
    """A %%writefile -a cell run without -a (or alone) leaves a file
    that starts mid-class: Python's "unexpected indent" alone did not
    say why (a project student's run)."""
    status, lines, _ = _grade_here(
        tmp_path, "    def forward(self, query, key, value):\n", capsys
    )
    assert status == 1
    detail = lines["load"][1]
    assert "IndentationError" in detail, detail
    assert "%%writefile -a" in detail and "from milestone 1" in detail


def test_import_error_is_reported_with_its_line(tmp_path, capsys):
    source = _bug("import math\n", "import math\nimport no_such_module\n")
    status, lines, _ = _grade_here(tmp_path, source, capsys)
    assert status == 1
    detail = lines["load"][1]
    assert "ModuleNotFoundError" in detail and "no_such_module" in detail
    assert f"my_mha.py:{_line_of(source, 'no_such_module')}" in detail


def test_missing_class_is_named(tmp_path, capsys):
    status, lines, _ = _grade_here(tmp_path, "import torch\n", capsys)
    assert status == 1
    assert "defines no class MultiHeadAttention" in lines["load"][1]


def test_a_class_named_as_torchs_is_told_the_name(tmp_path, capsys):
    """nn.MultiheadAttention's spelling (small h): "defines no class
    MultiHeadAttention" was all a student was told, of a file that
    defines one."""
    source = _bug(
        "class MultiHeadAttention(nn.Module):",
        "class MultiheadAttention(nn.Module):",
    )
    status, lines, _ = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert "defines no class MultiHeadAttention" in lines["load"][1]
    assert "it defines MultiheadAttention" in lines["load"][1]


def test_exception_in_init_is_located(tmp_path, capsys):
    source = _bug("self.h = num_heads", "self.h = num_heads\n        1 / 0")
    status, lines, _ = _grade_here(tmp_path, source, capsys)
    assert status == 1
    detail = lines["skeleton"][1]
    assert "raised ZeroDivisionError" in detail
    assert f"my_mha.py:{_line_of(source, '1 / 0')} in __init__" in detail
    assert set(_statuses(lines).values()) == {"FAIL"}


def test_exception_in_forward_is_located(tmp_path, capsys):
    source = _bug(
        "scores = q @ k.transpose(-2, -1)",
        "scores = q @ k.transpose(-1, -3)",
    )
    status, lines, _ = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["skeleton"][0] == "PASS"
    detail = lines["shapes"][1]
    assert detail.startswith("forward at h=2 raised RuntimeError")
    line = _line_of(source, "k.transpose(-1, -3)")
    assert f"(my_mha.py:{line} in forward)" in detail


def test_mask_bug_is_not_blamed_on_is_causal(tmp_path, capsys):
    """With the mask read the wrong way round, the causal line's mask +
    is_causal check sends the student to milestone masks."""
    source = _bug("scores.masked_fill(~mask,", "scores.masked_fill(mask,")
    _, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert "True as blocked" in lines["masks"][1]
    assert "fix milestone masks first" in lines["causal"][1], stdout


def test_forward_that_never_returns_is_stopped(tmp_path):
    """A loop that never ends costs one timeout, not the student's day."""
    source = _bug(
        "q = self.split(self.W_Q(query))",
        "while True:\n            pass\n"
        "        q = self.split(self.W_Q(query))",
    )
    # No wall-clock bound here (the machine may be loaded): the verdict
    # names the limit and the line, and the rest is skipped.
    result = _run_grader(tmp_path, source, "--timeout", "2")
    status, lines, stdout = (
        result.returncode,
        _parse(result.stdout),
        result.stdout,
    )
    assert status == 1
    # The child's stack dump is read, not shown: it was a dozen lines of
    # the grader's own frames above the FAIL line that says where.
    assert "Timeout (" not in result.stderr and "_sandbox" not in result.stderr
    assert lines["skeleton"][0] == "PASS"
    detail = lines["shapes"][1]
    assert "no result after 2 s" in detail
    line = _line_of(source, "while True:") + 1
    assert f"my_mha.py:{line} in forward" in detail or (
        f"my_mha.py:{line - 1} in forward" in detail
    )
    assert {lines[n][0] for n in MILESTONES[2:]} == {"SKIP"}, stdout


@pytest.mark.parametrize(
    ("tail", "where"),
    [
        ("\nwhile True:\n    pass\n", "in <module>"),
        ("\ndef train():\n    while True:\n        pass\n\n\ntrain()\n", ""),
    ],
    ids=["loop", "function called"],
)
def test_a_loop_at_the_top_of_the_file_is_located_and_explained(
    tmp_path, tail, where
):
    """A training loop left at the top level, not under ``if __name__
    == "__main__":``, was "still running at no line of your file on the
    stack" (the line's function is ``<module>``, which the pattern did
    not read); one in a function the file calls there (``train()`` at
    its end) got no word of ``__main__`` (a fresh check)."""
    source = CORRECT + tail
    status, lines, stdout = _grade(tmp_path, source, "--timeout", "2")
    assert status == 1
    detail = lines["load"][1]
    line = _line_of(source, "while True:")
    if where:
        places = [f"my_mha.py:{n} {where}" for n in (line, line + 1)]
        assert any(place in detail for place in places), detail
    assert 'if __name__ == "__main__":' in detail, detail


def test_a_module_that_compiles_is_told_to_grade_without_compiling(
    tmp_path,
):
    """torch.compile in a correct module (an audit): compiling outlasted
    the time limit, and the verdict sent the student looking for a loop
    that never ends."""
    source = _bug(
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.compile(torch.softmax)(scores, dim=-1)\n",
    )
    status, lines, stdout = _grade(tmp_path, source, "--timeout", "1")
    assert status == 1
    assert "still compiling (torch.compile" in lines["shapes"][1], stdout
    assert "grade the module without torch.compile" in lines["shapes"][1]


def test_a_file_slow_on_every_call_ends_at_the_whole_gradings_limit(
    tmp_path, capsys, monkeypatch
):
    """Each call within its own limit, and ~114 of them: the grading
    took 35 minutes at the default limit (an expert's audit). It ends at
    its limit in all (here made 1 s), saying so; what is left is
    skipped."""
    monkeypatch.setattr(grade, "TOTAL_TIMEOUTS", 1 / grade.TIMEOUT_S)
    source = _bug(
        "        super().__init__()\n",
        "        super().__init__()\n        __import__('time').sleep(0.3)\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    failed = [name for name, (st, _) in lines.items() if st == "FAIL"]
    assert len(failed) == 1, stdout
    assert "ran past its 1 s in all" in lines[failed[0]][1], stdout
    later = MILESTONES[MILESTONES.index(failed[0]) + 1 :]
    assert all(lines[name][0] == "SKIP" for name in later), stdout


def test_a_call_that_stops_its_own_watchdog_still_times_out(tmp_path):
    """The child's watchdog can be cancelled by the student's code; the
    grader keeps the limit itself: a call past it fails, the rest is
    skipped."""
    source = _bug(
        "        super().__init__()\n",
        "        super().__init__()\n"
        "        import faulthandler, time\n"
        "        faulthandler.cancel_dump_traceback_later()\n"
        "        time.sleep(4)\n",
    )
    status, lines, stdout = _grade(tmp_path, source, "--timeout", "2")
    assert status == 1, stdout
    assert lines["skeleton"][0] == "FAIL", stdout
    assert "over the limit of 2 s" in lines["skeleton"][1], stdout
    assert {lines[n][0] for n in MILESTONES[1:]} == {"SKIP"}, stdout


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (
            "self.W_O = nn.Linear(d_model, d_model, bias=False)",
            "self.W_O = nn.Linear(d_model, d_model)",
            ["W_O has a bias", "bias=False"],
        ),
        (
            "self.W_V = nn.Linear(d_model, d_model, bias=False)",
            "self.W_V = nn.Linear(d_model, self.d_k, bias=False)",
            ["W_V.weight is (8, 32), expected (32, 32)"],
        ),
        (
            'raise ValueError(f"{num_heads} does not divide {d_model}")',
            "pass",
            ["MultiHeadAttention(10, 4) was accepted", "ValueError"],
        ),
        (
            "if d_model % num_heads:\n"
            '            raise ValueError(f"{num_heads} does not divide '
            '{d_model}")',
            "assert d_model % num_heads == 0",
            ["AssertionError", "python -O"],
        ),
        (
            "self.d_k = d_model // num_heads",
            "self.d_k = d_model // num_heads\n"
            "        self.scale = nn.Parameter(torch.ones(1))",
            ["4,097 parameters", "4,096 = 4*32^2"],
        ),
        # (num_heads, d_model): the student's own message said "32 does
        # not divide 4", of a call the student never wrote.
        (
            "def __init__(self, d_model, num_heads):",
            "def __init__(self, num_heads, d_model):",
            [
                "MultiHeadAttention(32, 4) raised ValueError",
                "d_model=32, num_heads=4",
                "MultiHeadAttention(d_model, num_heads)",
            ],
        ),
    ],
    ids=[
        "bias",
        "narrow W_V",
        "accepts 10/4",
        "assert",
        "extra param",
        "arguments swapped",
    ],
)
def test_skeleton_failures_are_named(tmp_path, old, new, words, capsys):
    status, lines, stdout = _grade_here(tmp_path, _bug(old, new), capsys)
    assert status == 1
    assert lines["skeleton"][0] == "FAIL", stdout
    for word in words:
        assert word in lines["skeleton"][1], lines["skeleton"][1]


def test_the_project_slide_states_the_interface_the_grader_calls():
    """A student working from the slides and the command line learned the
    interface only from failures: the project's first slide states it,
    as the grader writes it."""
    (slide,) = (ROOT / "docs" / "slides").glob("42-*.md")
    text = " ".join(slide.read_text(encoding="utf-8").split())
    assert f"`{grade.SIGNATURE}`" in text
    assert "`MultiHeadAttention(d_model, num_heads)`" in text
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        assert f"`{name}`" in text
    # The skeleton fails a ValueError that does not name both numbers: the
    # slide and the project notebook say so (they asked for "a
    # ValueError", and a student's correct module failed milestone 1).
    notebook = (ROOT / "notebooks" / "project.py").read_text("utf-8")
    for said in (text, " ".join(notebook.replace("#", " ").split())):
        assert "`ValueError` whose message names both numbers" in said


def test_a_class_without_forward_is_told_how_it_lost_it(tmp_path, capsys):
    """The project notebook writes my_mha.py with %%writefile, one cell a
    milestone: run again alone, the first cell dropped the forward the
    next one had added, and torch's message named nothing of the file."""
    source = CORRECT[: CORRECT.index("    def forward(")]  # its last
    assert "def forward" not in source and "def merge" in source
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert lines["skeleton"][0] == "PASS", stdout
    assert "has no forward" in lines["shapes"][1], stdout
    assert "run the cells again from milestone 1" in lines["shapes"][1]
    # Every milestone that uses forward says the same (the mask ones said
    # "forward has no mask parameter": an attacker's "foward" typo).
    failed = [name for name, (state, _) in lines.items() if state == "FAIL"]
    assert {"masks", "causal"} <= set(failed), stdout
    for name in failed:
        assert "has no forward" in lines[name][1], (name, stdout)


def test_forward_returning_one_tensor_is_named(tmp_path, capsys):
    source = _bug(
        "return self.W_O(self.merge(weights @ v)), weights",
        "return self.W_O(self.merge(weights @ v))",
    )
    _, lines, _ = _grade_here(tmp_path, source, capsys)
    assert (
        "forward returned one tensor of shape (2, 5, 8)"
        in (lines["shapes"][1])
    )


def test_a_file_that_saves_at_its_top_level_is_told_why_it_cannot(
    tmp_path, capsys
):
    """A demo left at the end of the file saved its attention weights:
    "Read-only file system" (torch's words: "[enforce fail at
    inline_container.cc]") of a folder the student can write to."""
    source = CORRECT + (
        "\n\nmha = MultiHeadAttention(8, 2)\n"
        "x = torch.randn(1, 4, 8)\n"
        "torch.save(mha(x, x, x)[1], 'weights.pt')\n"
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert "Read-only file system" in lines["load"][1], stdout
    assert "may write nothing" in lines["load"][1]
    assert 'if __name__ == "__main__":' in lines["load"][1]
    assert not (tmp_path / "weights.pt").exists()


def test_a_mask_without_a_default_is_told_to_take_one(tmp_path, capsys):
    """forward(query, key, value, mask, is_causal=False): the grader's
    first call leaves the mask out, and the student read only Python's
    "missing 1 required positional argument: 'mask'" and "no line of
    your file on the stack"."""
    source = _bug(FORWARD_LINE, FORWARD_LINE.replace("mask=None", "mask"))
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["shapes"][0] == "FAIL", stdout
    assert "give mask a default" in lines["shapes"][1]
    assert "mask=None, is_causal=False" in lines["shapes"][1]


def test_forward_without_mask_parameters_is_named(tmp_path, capsys):
    source = _bug(
        "def forward(self, query, key, value, mask=None, is_causal=False):",
        "def forward(self, query, key, value):\n"
        "        mask, is_causal = None, False",
    )
    _, lines, _ = _grade_here(tmp_path, source, capsys)
    assert lines["h>1"][0] == "PASS"
    assert "forward has no mask parameter" in lines["masks"][1]
    assert "forward has no is_causal parameter" in lines["causal"][1]


def test_students_prints_do_not_break_the_report(tmp_path, capsys):
    source = _bug("q = self.split(", 'print("debug")\n        q = self.split(')
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 0
    assert "debug" not in stdout
    assert list(lines) == MILESTONES


def test_a_value_error_that_names_no_number_fails_the_skeleton(
    tmp_path, capsys
):
    """Slide 45: the ValueError for d_model = 10, h = 4 names both numbers
    (an `assert` vanishes under -O; a bare "bad config" says nothing to
    whoever built the layer). Any ValueError passed (an expert's report)."""
    for said, passes in (
        ('"bad config"', False),
        ('f"d_model={d_model}"', False),
        ('f"d_model ({d_model}) must be divisible by num_heads ({h})"', True),
    ):
        source = CORRECT.replace(
            'raise ValueError(f"{num_heads} does not divide {d_model}")',
            f"raise ValueError({said.replace('{h}', '{num_heads}')})",
        )
        assert source != CORRECT
        _, lines, stdout = _grade_here(tmp_path, source, capsys)
        assert (lines["skeleton"][0] == "PASS") is passes, stdout
        if not passes:
            assert "name both numbers" in lines["skeleton"][1], stdout


def test_a_float64_leak_is_told_what_to_do(tmp_path, capsys):
    """q in float64 against float32 keys: torch says "expected m1 and m2
    to have the same dtype, but got: double != float", and the grader
    passed that on with no hint (an expert's report)."""
    source = _bug(
        "q = self.split(self.W_Q(query))",
        "q = self.split(self.W_Q(query)).double()",
    )
    _, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert lines["shapes"][0] == "FAIL", stdout
    assert "compute in the input's dtype" in lines["shapes"][1], stdout


def test_missing_file_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        grade.main([str(tmp_path / "nope.py")])
    assert exit_.value.code == 2
    assert "no such file:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "project.ipynb",
            "the project notebook writes yours with its %%writefile cells",
        ),
        ("my_mha.txt", "grade the Python file that defines"),
        ("my_mha.PY", "rename it to my_mha.py (Python imports only that)"),
    ],
)
def test_a_file_that_is_not_python_is_a_usage_error(
    tmp_path, capsys, name, words
):
    """The project notebook given to the grader read "raised
    AttributeError: 'NoneType' object has no attribute 'loader'"; the
    line says what to grade instead."""
    (tmp_path / name).write_text("{}")
    with pytest.raises(SystemExit) as exit_:
        grade.main([str(tmp_path / name)])
    assert exit_.value.code == 2
    said = capsys.readouterr().err
    assert f"{name} is not a .py file: {words}" in said, said
    # Graded from Python (a script, a notebook), it is the file's FAIL.
    failed = grade.grade(tmp_path / name, seed=1)
    assert failed == len(MILESTONES)
    said = capsys.readouterr().out
    assert f"ImportError: {name} is not a Python file (.py)" in said, said


# --- modules that try to pass without the work ---------------------------

# A wrong module (its forward returns zeros) that tries to pass anyway.
WRONG = """\
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"no: {d_model} % {num_heads}")
        self.h = num_heads
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=False))

    def forward(self, query, key, value, mask=None, is_causal=False):
        B, T_q, d = query.shape
        weights = torch.zeros(B, self.h, T_q, key.size(1))
        return torch.zeros(B, T_q, d), weights
"""

PASS_LINES = (
    "".join(f"PASS {name:<8}  ok\\n" for name in MILESTONES)
    + "7 of 7 milestones pass\\n"
)

FORGERIES = {
    # Prints the grader's lines at import, then ends the process with 0.
    "PASS printer, os._exit(0) at import": (
        "import os, sys\n"
        f"sys.stdout.write({PASS_LINES!r})\n"
        f"sys.__stdout__.write({PASS_LINES!r})\n"
        "sys.stdout.flush()\n"
        "os._exit(0)\n",
        "load",
    ),
    # Exits with 0 from inside forward, after printing PASS lines.
    "os._exit(0) in forward": (
        WRONG.replace(
            "        B, T_q, d = query.shape\n",
            "        import os\n"
            f"        print({PASS_LINES!r})\n"
            "        os._exit(0)\n"
            "        B, T_q, d = query.shape\n",
        ),
        "shapes",
    ),
    # Raises at import with the grader's lines as the message, after a
    # carriage return and an erase-line code, hiding what follows.
    "PASS lines in an exception's message": (
        "raise ImportError('x\\r\\x1b[2K' + "
        f"{PASS_LINES.replace(chr(92) + 'n', chr(10))!r} + '\\x1b[8m')\n",
        "load",
    ),
    # Rebinds the grader's comparisons wherever it can reach them.
    "grader patcher": (
        "import sys\n"
        "import mha_ref.grade as g\n"
        "g._close = lambda a, b: True\n"
        "g._differences = lambda got, want: []\n"
        "g.compare = lambda *a, **k: None\n"
        "import mha_ref._sandbox as s\n"
        "s._items = lambda result: result\n"
        "import torch\n"
        "torch.allclose = lambda *a, **k: True\n" + WRONG,
        "h=1",
    ),
}


# Reaches the grader process itself, found by its command line: writes
# PASS lines into its stdout, then stops or kills it (same user, so only
# the child's namespaces and the grader's undumpable state refuse).
_REACH_GRADER = """\
import os, signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"mha_ref.grade" in open(f"/proc/{pid}/cmdline", "rb").read():
            os.kill(int(pid), signal.SIGCONT)  # found: it is reachable
            with open(f"/proc/{pid}/fd/1", "w") as out:
                out.write(%r)
            os.kill(int(pid), signal.%s)
    except OSError:
        pass
"""
FORGERIES |= {
    "writes into the grader, then kills it": (
        _REACH_GRADER % (PASS_LINES.replace("\\n", "\n"), "SIGKILL") + WRONG,
        "h=1",
    ),
    "writes into the grader, then stops it": (
        _REACH_GRADER % (PASS_LINES.replace("\\n", "\n"), "SIGSTOP")
        + "os.kill(os.getppid(), signal.SIGSTOP)\n"
        + WRONG,
        "h=1",
    ),
}


@pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces")
def test_nothing_the_students_file_started_outlives_the_grader(tmp_path):
    """A process the module starts (here one that would sleep a minute)
    ends with the grading, and does not keep the grader waiting."""
    token = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    source = (
        "import os\n"
        "if os.fork() == 0:\n"
        f"    os.execvp('sleep', ['sleep', '{token}'])\n" + CORRECT
    )
    status, lines, stdout = _grade(tmp_path, source)
    assert status == 0, stdout
    left = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _cmdline(pid).endswith(token.encode())
    ]
    assert not left, f"left running: {left}"


@pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces")
@pytest.mark.parametrize("escape", ["os.setsid()", "os.kill(0, 9)"])
def test_a_hung_file_that_left_the_group_still_ends(tmp_path, escape):
    """A file that leaves the grader's process group (setsid), or kills
    the process waiting for it, then hangs with the watchdog off: the
    grader says so and ends it all the same."""
    first = "        q = self.split(self.W_Q(query))\n"
    # The hang: a sleep of "pid.nanoseconds" seconds, found by that
    # argument (the file's own /proc shows none of the machine's pids).
    token = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    source = _bug(
        first,
        "        import faulthandler, os\n"
        "        faulthandler.cancel_dump_traceback_later()\n"
        f"        {escape}\n"
        f"        os.execvp('sleep', ['sleep', '{token}'])\n" + first,
    )
    status, lines, stdout = _grade(tmp_path, source, "--timeout", "2")
    assert status == 1 and lines["shapes"][0] == "FAIL", stdout
    left = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _cmdline(pid).endswith(token.encode())
    ]
    assert not left, f"left running: {left}"


#: What a graded file tries beyond its own process: "PROBE name done"
#: or "PROBE name refused" for each.
_PROBES = """\
import ctypes, os, socket, tempfile
libc = ctypes.CDLL(None, use_errno=True)
def probe(name, act):
    try:
        act()
        print("PROBE", name, "done")
    except OSError:
        print("PROBE", name, "refused")
def call(result):
    if result == -1:
        raise OSError(ctypes.get_errno(), "refused")
def write(path):
    with open(path, "w") as f:
        f.write("import torch; torch.allclose = lambda *a, **k: True\\n")
def find_the_grader():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"mha_ref.grade" in f.read():
                return
    raise FileNotFoundError("no grader in sight")
probe("plant-beside-itself", lambda: write("secrets.py"))
probe("write-outside", lambda: write(%(outside)r))
probe("temporary-file", lambda: os.close(tempfile.mkstemp()[0]))
for tty in ("/dev/tty", "/dev/console", "/dev/pts/0", "/dev/pts/ptmx"):
    probe("open-" + tty, lambda: os.close(os.open(tty, os.O_WRONLY)))
probe("find-the-grader", find_the_grader)
probe("connect", lambda: socket.create_connection(("127.0.0.1", %(port)d), 5))
probe("mount", lambda: call(libc.mount(b"t", b"/dev/shm", b"tmpfs", 0, b"")))
probe("new-namespace", lambda: call(libc.unshare(0x10000000)))
probe("shared-memory", lambda: call(libc.shmget(%(key)d, 1 << 20, 0o1600)))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces")
def test_a_graded_file_writes_nothing_that_outlives_it(tmp_path):
    """Every mount is read-only to the student's file but a scratch
    tmpfs of its own: a file that plants a ``secrets.py`` beside itself
    (imported by the next grader started from that folder: a wrong
    module then passed) or writes elsewhere changes nothing; it finds no
    terminal to write on and no grader to read, no network to send what
    it read to, no capability to mount memory of its own, and no System
    V shared memory (memory no limit counts); and it is still graded as
    before."""
    outside = tmp_path.parent / f"escape-{tmp_path.name}.py"
    key = 0x4D480000 + os.getpid() % 0xFFFF
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        source = _PROBES % {"outside": str(outside), "port": port, "key": key}
        result = _run_grader(tmp_path, source + CORRECT)
    seen = dict(
        line.split("PROBE ", 1)[1].split()
        for line in result.stderr.splitlines()
        if "PROBE " in line
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert seen.pop("temporary-file") == "done", seen
    assert len(seen) == 11 and set(seen.values()) == {"refused"}, seen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_mha.py"]
    assert not outside.exists()
    segments = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    assert key not in {int(line.split()[0]) for line in segments}


def test_every_file_graded_in_one_process_may_write_temporary_files(tmp_path):
    """The project notebook grades each step in one kernel, each file in
    a child of one zygote. Its own TMPDIR is the one place a child may
    write, but tempfile's cached choice, made in the zygote when torch
    imported, named the read-only /tmp: every file but the first lost
    tempfile.mkstemp."""
    probe = (
        "import os, sys, tempfile\n"
        "try:\n"
        "    os.close(tempfile.mkstemp()[0])\n"
        "    sys.stderr.write('TEMP done\\n')\n"
        "except OSError as error:\n"
        "    sys.stderr.write(f'TEMP refused {error}\\n')\n"
    )
    (tmp_path / "my_mha.py").write_text(probe + CORRECT)
    result = subprocess.run(
        [
            sys.executable, "-c",
            "from mha_ref import grade\n"
            "for _ in range(3):\n"
            "    grade.grade('my_mha.py', upto='skeleton')\n",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    temp = [line for line in result.stderr.splitlines() if "TEMP" in line]
    assert temp == ["  my_mha.py| TEMP done"] * 3, (
        result.stdout + result.stderr
    )


def test_printed_control_characters_are_shown_not_obeyed(tmp_path):
    """A carriage return and escape codes in what the file prints could
    draw PASS lines over the grader's: they are shown as \\xNN."""
    source = (
        "import sys\n"
        "sys.stderr.write('\\r\\x1b[KPASS skeleton  ok\\x1b[8m\\n')\n"
        + CORRECT
    )
    result = _run_grader(tmp_path, source)
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "my_mha.py| \\x0d\\x1b[KPASS skeleton" in result.stderr
    # Nor in the file's name, which prefixes each line it prints: a name
    # holding escape codes cleared the screen and drew "7 of 7" there.
    name = "\x1b[H\x1b[2J7 of 7 milestones pass\nx.py"
    result = _run_grader(tmp_path, source, name=name)
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "\\x1b[H\\x1b[2J7 of 7 milestones pass\\nx.py| " in result.stderr


def test_no_line_the_file_prints_starts_like_the_graders(tmp_path):
    """Each line the file prints is shown after the file's name, which
    the student chooses: named "PASS skeleton  ok.py", its lines began
    "PASS skeleton", and `grep ^PASS` over the output counted them (an
    attacker's report). They are indented."""
    source = "import sys\nprint('hello')\nsys.stderr.write('there\\n')\n"
    result = _run_grader(
        tmp_path, source + CORRECT, name="PASS skeleton  ok.py"
    )
    theirs = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if "hello" in line or "there" in line
    ]
    assert len(theirs) == 2, result.stdout + result.stderr
    grader = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith(("PASS", "FAIL", "SKIP"))
    ]
    assert grader and all(line not in theirs for line in grader), grader


def test_the_graders_environment_is_not_the_students(tmp_path, monkeypatch):
    """An autograder's token in the environment was the student's to
    print (os.environ, /proc/self/environ)."""
    monkeypatch.setenv("GRADER_TOKEN", "s3cret-token")
    source = (
        "import os, sys\n"
        "sys.stderr.write(repr(dict(os.environ)) + '\\n')\n"
        "with open('/proc/self/environ', 'rb') as f:\n"
        "    sys.stderr.write(repr(f.read()) + '\\n')\n" + CORRECT
    )
    result = _run_grader(tmp_path, source)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "'PATH'" in result.stderr, result.stderr  # it did print
    assert "s3cret-token" not in result.stderr, result.stderr


def test_the_students_processes_are_bounded(tmp_path):
    """A fork bomb in the student's file ran until the machine's own
    limit. Here the file starts threads (each a task the kernel counts
    as it counts processes, and cheap: a fork of a process holding torch
    is not) until the kernel refuses one: it must refuse well before the
    1,000 asked for, as root too (the kernel holds uid 0 to no
    RLIMIT_NPROC; its bound is the PID namespace's own pid_max, Linux
    6.14+)."""
    if (
        os.getuid() == 0
        and _isolate._kernel() < _isolate.PER_NAMESPACE_PID_MAX
    ):
        pytest.skip("as root, processes are bounded from Linux 6.14 on")
    source = (
        "import sys, threading\n"
        "stop = threading.Event()\n"
        "started = 0\n"
        "try:\n"
        "    for _ in range(1000):\n"
        "        threading.Thread(target=stop.wait, daemon=True).start()\n"
        "        started += 1\n"
        "except RuntimeError:\n"
        "    pass\n"
        "stop.set()\n"
        "sys.stderr.write(f'STARTED {started}\\n')\n" + CORRECT
    )
    result = _run_grader(tmp_path, source)
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"STARTED (\d+)", result.stdout + result.stderr)
    assert found, result.stdout + result.stderr
    assert 0 < int(found[1]) < _isolate.PIDS, result.stdout + result.stderr


def test_no_room_for_the_watchdog_is_no_failure_of_the_file(monkeypatch):
    """A file whose threads had just filled the process limit left no
    room for faulthandler's watchdog thread: the child died between two
    requests and the grader blamed an exit() (a clean-clone CI run of
    the test above). The watchdog is tried again while the file's
    threads end, and given up after a second (the grader keeps the time
    limit itself): never an exception."""
    from mha_ref import _sandbox

    calls = []

    def refuse_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) <= 2:
            raise RuntimeError("unable to start watchdog thread")

    monkeypatch.setattr(_sandbox, "_DUMP_LATER", refuse_twice)
    monkeypatch.setattr(_sandbox, "_NO_ROOM", [])
    _sandbox._arm_watchdog(5.0, sys.stderr)
    assert len(calls) == 3  # armed on the third try

    def refuse(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("unable to start watchdog thread")

    monkeypatch.setattr(_sandbox, "_DUMP_LATER", refuse)
    _sandbox._arm_watchdog(5.0, sys.stderr)  # gives up, raises nothing
    # Given up once, it is tried once a request: a fork bomb that kept
    # the process table full made every request wait its second (7 of
    # 7 in 3 min 37 s: an attacker's audit).
    calls.clear()
    _sandbox._arm_watchdog(5.0, sys.stderr)
    assert len(calls) == 1


def test_c1_and_bidirectional_controls_are_shown_not_obeyed():
    """A terminal obeys C1 controls too (\\x9d starts a command, \\x85
    a new line), and U+202E reverses the rest of a line."""
    shown = grade._visible("a\x85b\x9d0;t\x07c\u202eSSAP\td")
    assert shown == "a\\x85b\\x9d0;t\\x07c\\u202eSSAP\td"
    # The bidirectional marks too (an attacker's audit).
    shown = grade._visible("\u200eL\u200fR\u061cA")
    assert shown == "\\u200eL\\u200fR\\u061cA"


def test_a_message_of_line_separators_reads_as_one_failing_line(
    tmp_path, capsys
):
    """PASS lines joined by U+2028 in an exception's message: a terminal
    shows one line, but a program reading the report (splitlines, as a
    course's autograder does) read seven PASS lines."""
    forged = (
        "".join(f"\u2028PASS {name}  ok" for name in MILESTONES)
        + "\u2029PASS x\x85PASS y"
    )
    source = _bug(
        FORWARD_LINE,
        FORWARD_LINE + "        if key.size(1) != query.size(1):\n"
        f"            raise ValueError({forged!r})\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["T_q!=T_k"][0] == "FAIL", stdout
    assert "\\u2028PASS" in lines["T_q!=T_k"][1]
    assert len(stdout.splitlines()) == len(MILESTONES) + 2, stdout


def test_a_weight_cut_from_the_graph_is_named_not_the_softmax(
    tmp_path, capsys
):
    """``F.linear(query, self.W_Q.weight.data)`` gave W_Q no gradient and
    was told not to detach the softmax (an attacker's audit, as an
    expert): a weight that gets none, where others do, may be cut by
    itself, and the line says how."""
    source = _bug(
        "q = self.split(self.W_Q(query))",
        "q = self.split(nn.functional.linear(query, self.W_Q.weight.data))",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["h>1"][0] == "FAIL", stdout
    said = lines["h>1"][1]
    assert "(W_Q: none at all)" in said, said
    assert "F.linear(query, self.W_Q.weight)), never its .data" in said


def test_a_long_message_is_cut_before_it_is_shown_or_read(tmp_path, capsys):
    """``raise ValueError("expected " * 20000)`` printed 180 KB on each
    FAIL line, and the float64 hint's pattern took 3 minutes over it,
    outside every time limit (an attacker's audit). A message is cut,
    saying how long it was, before a hint reads it."""
    said = "expected " * 2000
    source = _bug(
        "super().__init__()\n",
        f"super().__init__()\n        raise ValueError({said!r})\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["skeleton"][0] == "FAIL", stdout
    for line in stdout.splitlines():
        assert len(line) < 2 * _sandbox.SAID, line[:200]
    cut = f"... ({len('ValueError: ' + said):,} characters)"
    assert cut in lines["skeleton"][1], lines["skeleton"][1][-200:]


@pytest.mark.parametrize(
    "ending, said, unsaid",
    [
        # Told how forward uses the mask (the hint for an exception a mask
        # raises) after "do not call exit()": the exit alone.
        ("import os; os._exit(3)", "do not call exit()", "uses the mask"),
        # Told "do not call exit()", a call it never made.
        (
            "import os, signal; os.kill(0, signal.SIGKILL)",
            "stopped by SIGKILL",
            "exit()",
        ),
        # Its own process: ignored while the file ran as PID 1 of the
        # sandbox's namespace, so the module passed every milestone (and
        # ended its program run alone: a re-check); through ctypes, past
        # any check in Python, too (attackers' audits).
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            "SIGKILL",
            "exit()",
        ),
        (
            "import ctypes, os, signal; "
            "ctypes.CDLL(None).kill(os.getpid(), signal.SIGKILL)",
            "SIGKILL",
            "exit()",
        ),
        (
            "import ctypes, signal; "
            "ctypes.CDLL(None)['raise'](signal.SIGTERM)",
            "SIGTERM",
            "",
        ),
        ("import signal; signal.raise_signal(signal.SIGTERM)", "SIGTERM", ""),
        ("import os; os.abort()", "SIGABRT", "SIGSEGV"),
        # A timer's signal, sent by the process to itself later: one put
        # off by each call never rang while the grader ran (and ended a
        # program run alone a second after its last call).
        ("import signal; signal.alarm(1)", "sends SIGALRM to this", ""),
        # The C library's, which a guard on Python's functions missed.
        (
            "import ctypes; ctypes.CDLL(None).alarm(3)",
            "left a timer set (signal.alarm, signal.setitimer or the C",
            "",
        ),
        (
            "import signal; signal.setitimer(signal.ITIMER_REAL, 0.001)",
            "SIGALRM",
            "",
        ),
        # faulthandler's exit, as late (each call cancelled the grader's
        # own watchdog, so it never rang while the grader ran).
        (
            "import faulthandler; "
            "faulthandler.dump_traceback_later(2, exit=True)",
            "dump_traceback_later(exit=True) ends this process later",
            "",
        ),
    ],
    ids=[
        "exit",
        "killed",
        "killed-itself",
        "ctypes-kill",
        "ctypes-raise",
        "raise-signal",
        "abort",
        "alarm",
        "ctypes-alarm",
        "setitimer",
        "faulthandler",
    ],
)
def test_a_forward_that_ends_its_process_is_told_how(
    tmp_path, capsys, ending, said, unsaid
):
    """A forward that ends its process when given a mask is told how it
    ended, and nothing else (an attacker's audits)."""
    source = CORRECT.replace(
        "        q = self.split(self.W_Q(query))\n",
        f"        if mask is not None:\n            {ending}\n"
        "        q = self.split(self.W_Q(query))\n",
    )
    assert source != CORRECT
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    state, detail = lines["masks"]
    assert state == "FAIL", stdout
    assert said in detail, detail
    assert not unsaid or unsaid not in detail, detail


def test_what_forward_returned_is_named_with_its_article(tmp_path, capsys):
    """ "returned a int" (an attacker's audit): an int."""
    source = CORRECT.replace(
        "        return self.W_O(self.merge(weights @ v)), weights\n",
        "        return 8\n",
    )
    assert source != CORRECT
    status, _, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert "an int" in stdout and "a int" not in stdout, stdout


def test_a_message_of_megabytes_or_none_is_still_the_students_error(
    tmp_path, capsys
):
    """A 50 MB message was "sent a reply of 50001517 bytes" (the child
    sent it whole, over the grader's limit), and a ValueError subclass
    whose __str__ has a typo killed the child, reported as a call of
    exit() (an attacker's audit). Both are the student's ValueError,
    cut or named, and the file's own line."""
    big = _bug(
        "super().__init__()\n",
        "super().__init__()\n        raise ValueError('x' * 50_000_000)\n",
    )
    typo = (
        "class HeadsError(ValueError):\n"
        "    def __str__(self):\n"
        "        return f'{self.h} heads'\n\n\n"
        + CORRECT.replace("raise ValueError(", "raise HeadsError(")
    )
    for source, shown in (
        (big, "... (50,000,012 characters) (my_mha.py:"),
        (typo, "HeadsError: (its message: str() raised AttributeError)"),
    ):
        status, lines, stdout = _grade_here(tmp_path, source, capsys)
        assert status == 1, stdout
        assert "exit" not in stdout and "reply" not in stdout, stdout
        failed = [d for st, d in lines.values() if st == "FAIL"]
        assert failed and shown in failed[0], stdout


def test_replies_no_check_can_read_fail_the_file_not_the_grader(
    tmp_path, capsys
):
    """A forward that answers the grader's diagnosis with meta tensors
    (torch.equal raises on them, inside the handler of a failure): every
    milestone still gets its line and the summary comes, no traceback."""
    source = "CALLS = [0]\n" + CORRECT.replace(
        FORWARD_LINE,
        FORWARD_LINE + "        CALLS[0] += 1\n"
        "        if CALLS[0] >= 4:\n"
        "            return tuple(torch.empty(1, device='meta')\n"
        "                         for _ in range(3))\n"
        "        if CALLS[0] == 3:\n"
        "            query = query + 1\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert list(lines) == MILESTONES, stdout
    assert lines["h=1"][0] == "FAIL", stdout
    assert stdout.splitlines()[-1].endswith("milestones pass"), stdout


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
    except OSError:
        return b""


def test_a_child_that_stops_reading_cannot_hang_the_grader(tmp_path):
    """It answers every request to come without reading one, from a
    request pipe shrunk to one page: a blocking write by the grader hung
    past its time limit. Now each request has a deadline."""
    source = (
        "import faulthandler, fcntl, sys, time\n"
        "from mha_ref._sandbox import send\n"
        "requests, replies = int(sys.argv[4]), int(sys.argv[5])\n"
        "fcntl.fcntl(requests, 1031, 4096)  # F_SETPIPE_SZ\n"
        "faulthandler.cancel_dump_traceback_later()\n"
        "send(replies, {'ok': True, 'class': True})\n"
        "for _ in range(40):\n"
        "    send(replies, dict(ok=False, error='E', type='E', where='x'))\n"
        "while True:\n"
        "    time.sleep(60)\n"
    )
    status, lines, stdout = _grade(tmp_path, source, "--timeout", "2")
    assert status == 1 and lines["skeleton"][0] == "FAIL", stdout
    assert stdout.splitlines()[-1] == "0 of 7 milestones pass", stdout


def _forged_reply_is_refused(
    tmp_path, setup: str, reply: str, repack: str = ""
) -> str:
    """The file writes ``reply`` (after ``setup``; saved, then made into
    other ``data`` by ``repack``) into the grader's reply pipe at import:
    it is refused as not the grader's. Returns stdout."""
    source = (
        "import io, os, struct, sys, torch\n"
        + setup
        + "buffer = io.BytesIO()\n"
        f"torch.save({reply}, buffer)\n"
        "data = buffer.getvalue()\n"
        + repack
        + "assert len(data) < 10_000, len(data)\n"
        "os.write(int(sys.argv[-1]), struct.pack('<Q', len(data)) + data)\n"
        + CORRECT
    )
    status, lines, stdout = _grade(tmp_path, source)
    assert status == 1, stdout[:2000]
    assert lines["load"][0] == "FAIL", stdout[:2000]
    assert "not the grader's" in lines["load"][1], stdout[:2000]
    return stdout


def test_a_reply_that_formats_huge_is_refused_small(tmp_path):
    """A 1.4 KB forged reply of nested lists sharing their levels made
    the grader format a 322 MB message (an expert's audit; each level
    more is ten times that): refused as not the grader's, in a few
    lines."""
    stdout = _forged_reply_is_refused(
        tmp_path,
        "leaf = [0] * 10\nfor _ in range(5):\n    leaf = [leaf] * 10\n",
        "{'ok': False, 'error': leaf, 'where': 'x'}",
    )
    assert len(stdout) < 5_000, f"{len(stdout)} characters printed"


def test_a_reply_with_an_expanded_tensor_is_refused(tmp_path):
    """One element expanded to (2^15, 2^15) is a few KB on the wire and a
    billion elements to compare: an attacker's reply of (2^17, 2^17)
    kept the grader busy 225 s outside every time limit. A reply's
    tensors are refused beyond the bytes a reply may have on the wire."""
    _forged_reply_is_refused(
        tmp_path,
        "huge = torch.zeros(()).expand(1 << 15, 1 << 15)\n",
        "{'ok': False, 'error': 'x', 'got': huge}",
    )


def test_a_file_that_turns_off_the_hook_fails(tmp_path, capsys):
    """``sys.setprofile(None)`` in forward, then the reference: the hook
    that sees the reference's calls was off, and every milestone
    passed. Each milestone that calls forward fails, naming the call."""
    source = _bug(
        "    def forward(self, query, key, value, mask=None, "
        "is_causal=False):\n",
        "    def forward(self, query, key, value, mask=None, "
        "is_causal=False):\n"
        "        import sys\n"
        "        import mha_ref\n"
        "        sys.setprofile(None)\n"
        "        ref = mha_ref.MultiHeadAttention(self.h * self.d_k, "
        "self.h)\n"
        "        ref.load_state_dict(self.state_dict())\n"
        "        return ref(query, key, value, mask, is_causal)\n"
        "\n"
        "    def unused(self, query, key, value, mask=None, "
        "is_causal=False):\n",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    for name in MILESTONES[MILESTONES.index("shapes") :]:
        assert lines[name][0] == "FAIL", stdout
        assert "called sys.setprofile" in lines[name][1], stdout


#: A process that starts forks each holding ``MIB`` MiB, then waits.
FORKS = """\
import os, sys, time
count, mib, wait = map(float, sys.argv[1:])
for _ in range(int(count)):
    if os.fork() == 0:
        held = b"x" * (int(mib) << 20)
        time.sleep(wait)
        os._exit(0)
for _ in range(int(count)):
    os.wait()
"""


def test_all_of_a_files_processes_are_bounded_together(tmp_path):
    """RLIMIT_AS bounds each process alone: four forks of 400 MiB held
    1.6 GB together (an attacker's review). The process that waits for
    the file's (``_isolate.watch``) stops all of them once together they
    pass the budget, and lets a tree within it end as it ends."""
    budget = 200 << 20
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    over = subprocess.Popen([sys.executable, str(script), "4", "80", "600"])
    status = _isolate.watch(over.pid, budget, proc)
    over.returncode = status  # reaped by watch
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9, status
    within = subprocess.Popen([sys.executable, str(script), "2", "30", "0.5"])
    status = _isolate.watch(within.pid, budget, proc)
    within.returncode = status
    os.close(proc)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_files_beside_the_submission_are_not_the_graders_modules(tmp_path):
    """An autograder runs ``python -m mha_ref.grade my_mha.py`` in the
    submission's folder: a ``secrets.py`` there was imported by the
    grader itself (outside every sandbox) and printed 7 of 7 for an
    empty class (an attacker's review). The grader's modules are not
    taken from that folder, so the forgery never runs."""
    (tmp_path / "secrets.py").write_text(
        "print('7 of 7 milestones pass')\nraise SystemExit(0)\n"
    )
    (tmp_path / "argparse.py").write_text("raise SystemExit(0)\n")
    source = "from torch import nn\n\n\nclass MultiHeadAttention(nn.Module):"
    result = _run_grader(tmp_path, source + "\n    pass\n")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "0 of 7 milestones pass"


def test_a_module_planted_beside_mha_ref_runs_only_in_the_sandbox(tmp_path):
    """A student's folder as the course ships it: ``mha_ref`` unzipped
    beside ``my_mha.py``, graded there. The grader's zygote put that
    folder on its path, and torch's own import of ``typing_extensions``
    ran a file of that name planted there outside every sandbox (an
    attacker's review: it printed 7 of 7 for an empty class). The file
    may run only sandboxed (where it cannot write), and the grading goes
    on as for any folder."""
    folder, marker = tmp_path / "submission", tmp_path / "escaped"
    shutil.copytree(
        Path(grade.__file__).parent,
        folder / "mha_ref",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("typing_extensions", "numpy"):
        (folder / f"{name}.py").write_text(
            "import importlib, os, sys\n"
            "try:\n"
            f"    open({str(marker)!r}, 'a').write(f'{{os.getpid()}} ')\n"
            "except OSError:\n"
            "    pass\n"
            "here = os.path.dirname(os.path.abspath(__file__))\n"
            "sys.path[:] = [p for p in sys.path\n"
            "               if os.path.abspath(p or '.') != here]\n"
            "del sys.modules[__name__]\n"
            "sys.modules[__name__] = importlib.import_module(__name__)\n"
        )
    (folder / "my_mha.py").write_text(CORRECT)
    result = subprocess.run(
        [sys.executable, "-m", "mha_ref.grade", "my_mha.py"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not marker.exists(), marker.read_text()
    assert result.stdout.splitlines()[-1] == "7 of 7 milestones pass", (
        result.stdout + result.stderr
    )


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_forgeries_are_rejected(tmp_path, forgery):
    """Printing PASS lines, exiting early or patching the grader never
    gives a pass: the exit status is 1, and the grader's own lines (on
    stdout) say which milestone failed and why."""
    source, first = FORGERIES[forgery]
    status, lines, stdout = _grade(tmp_path, source)
    assert status == 1, stdout
    assert stdout.splitlines()[-1] != "7 of 7 milestones pass", stdout
    assert lines[first][0] == "FAIL", stdout
    assert "PASS" not in {s for name, (s, _) in lines.items()
                          if name in MILESTONES[2:]}, stdout  # fmt: skip
    if "exit" in forgery:
        assert "exit status 0" in lines[first][1], stdout
        assert "os._exit()" in lines[first][1]


def test_a_forward_that_exits_costs_only_its_milestones(tmp_path, capsys):
    """After the child dies, the next milestone runs in a new one."""
    source = _bug(
        "        if is_causal:\n            t_q",
        "        if is_causal:\n            import os\n"
        "            os._exit(3)\n            t_q",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert {n for n, s in _statuses(lines).items() if s == "FAIL"} == {
        "causal"
    }, stdout
    assert "exit status 3" in lines["causal"][1]


def test_later_milestones_say_the_values_are_wrong_at_h_gt_1(tmp_path, capsys):
    """A value bug no suspect explains: the mask, causal and cross lines
    send the student back to h>1 instead of guessing a mask hint."""
    source = _bug(
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)\n"
        "        if self.h > 1:\n"
        "            scores = scores * 1.5",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1
    assert lines["h=1"][0] == "PASS", stdout
    assert "match at h=1" in lines["h>1"][1]
    for name in ("masks", "causal", "T_q!=T_k"):
        assert lines[name][0] == "FAIL"
        assert "fix milestone h>1 first" in lines[name][1], lines[name][1]
        assert "mask True as blocked" not in lines[name][1]


def test_weights_none_is_named_before_any_comparison(tmp_path, capsys):
    source = _bug(
        "return self.W_O(self.merge(weights @ v)), weights",
        "return self.W_O(self.merge(weights @ v)), None",
    )
    _, lines, _ = _grade_here(tmp_path, source, capsys)
    detail = lines["shapes"][1]
    assert "forward returned None as the weights" in detail
    assert "(B, h, T_q, T_k)" in detail


def test_no_hint_names_a_slide_number():
    """Slide numbers drift; the grader's hints name the code instead."""
    import re

    text = Path(grade.__file__).read_text()
    assert not re.search(r"slide \d", text), "a slide number in a hint"
    assert "option C" not in text and "option D" not in text


# --- the zygote (mha_ref/_zygote.py) -----------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="fork and namespaces")
def test_the_zygote_stays_out_of_a_students_reach(tmp_path, capsys):
    """Every child of one grader is a fork of one zygote, which has
    imported torch; a student's file can neither signal it nor read its
    memory, and the next file is graded by it as before."""
    status, _, _ = _grade_here(tmp_path, CORRECT, capsys)
    zygote = grade._ZYGOTE["zygote"].process
    assert status == 0 and zygote.poll() is None
    attack = (
        "import os, signal\n"
        "seen = []\n"
        f"for act in (lambda: os.kill({zygote.pid}, signal.SIGKILL),\n"
        f"            lambda: open('/proc/{zygote.pid}/mem', 'rb').read(1)):\n"
        "    try:\n"
        "        act()\n"
        "        seen.append('done')\n"
        "    except OSError as error:\n"
        "        seen.append(type(error).__name__)\n"
        "print('SEEN', *seen)\n" + CORRECT
    )
    (tmp_path / "my_mha.py").write_text(attack)
    status = grade.main([str(tmp_path / "my_mha.py")])
    (seen,) = [
        line.split("SEEN ", 1)[1].split()
        for line in capsys.readouterr().err.splitlines()
        if "SEEN " in line
    ]
    # Its own /proc has no such pid; the machine's would refuse the read.
    assert seen[0] == "ProcessLookupError", seen
    assert seen[1] in ("FileNotFoundError", "PermissionError"), seen
    assert status == 0 and zygote.poll() is None
    assert grade._ZYGOTE["zygote"].process is zygote
    *edits, failing, _ = BUGS["direct view"]
    status, lines, _ = _grade_here(tmp_path, _bug(*edits), capsys)
    assert {n for n, s in _statuses(lines).items() if s == "FAIL"} == failing
    assert grade._ZYGOTE["zygote"].process is zygote


def test_without_a_zygote_each_file_gets_a_fresh_interpreter(
    tmp_path, capsys, monkeypatch
):
    """Where there is no zygote (another OS, or it could not start), a
    fresh child per file grades the same."""
    monkeypatch.setattr(grade, "_ZYGOTE", {"failed": True})
    status, lines, _ = _grade_here(tmp_path, CORRECT, capsys)
    assert status == 0 and len(lines) == len(MILESTONES)
    *edits, failing, _ = BUGS["direct view"]
    status, lines, _ = _grade_here(tmp_path, _bug(*edits), capsys)
    assert {n for n, s in _statuses(lines).items() if s == "FAIL"} == failing
    assert "zygote" not in grade._ZYGOTE


#: The command line, run with an audit hook that writes (in order) each
#: process it starts with the zygote's boot line, and its first import
#: of torch.
_STARTS_AND_IMPORTS = """
import runpy, sys
def hook(event, args):
    if event == "subprocess.Popen" and "_zygote import serve" in str(args[1]):
        print("zygote started", flush=True)
    elif event == "import" and args[0] == "torch":
        if "torch" not in sys.modules:
            print("torch imported", flush=True)
sys.addaudithook(hook)
sys.argv = ["grade", sys.argv[1]]
runpy.run_module("mha_ref.grade", run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the zygote: Linux")
def test_the_command_line_starts_one_zygote_before_it_imports_torch(tmp_path):
    """Both the grader and its zygote import torch (1-2 s each): the
    command line starts the zygote first, so the two imports run side by
    side, and grades with that zygote (no second one)."""
    (tmp_path / "my_mha.py").write_text("def broken(:\n")
    result = subprocess.run(
        [sys.executable, "-c", _STARTS_AND_IMPORTS, "my_mha.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    events = [
        line
        for line in result.stdout.splitlines()
        if line in ("zygote started", "torch imported")
    ]
    assert events == ["zygote started", "torch imported"], result.stdout
    assert "FAIL" in result.stdout and "line 1" in result.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="the zygote: Linux")
def test_a_zygote_nothing_took_ends_with_its_process(tmp_path):
    """The command line starts its zygote before it parses its arguments:
    where it then ends without grading (--help, no such file), the
    zygote is killed as it exits, not left to import torch for nothing
    in a session of its own. Its torch here never finishes importing."""
    _copy_of_the_reference(tmp_path)
    (tmp_path / "ref_copy").rename(tmp_path / "mha_ref")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "import time\ntime.sleep(600)\n"
    )
    script = (
        "import sys; from mha_ref import _zygote; "
        "_zygote.start_early(sys.argv[1]); "
        "print(_zygote._EARLY['zygote'].process.pid, flush=True)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    pid = int(result.stdout)

    def alive() -> bool:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return b") Z " not in stat and b"_zygote" in cmdline

    deadline = time.monotonic() + 60
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive():
        os.kill(pid, 9)
        pytest.fail("the zygote outlived the process that started it")


def test_grading_in_a_notebook_leaves_its_torch_threads_as_they_were(
    tmp_path, capsys
):
    """The grader runs torch on one thread while it grades (the tensors
    are tiny), and a notebook's kernel that called check() keeps the
    thread count it had, whatever that was."""
    (tmp_path / "my_mha.py").write_text(CORRECT)
    was = torch.get_num_threads()
    seen = []
    real = grade._grade

    def spy(*args):
        seen.append(torch.get_num_threads())
        return real(*args)

    try:
        for threads in (2, 3):
            torch.set_num_threads(threads)
            grade._grade = spy
            grade.check(tmp_path / "my_mha.py", upto="shapes")
            assert torch.get_num_threads() == threads
    finally:
        grade._grade = real
        torch.set_num_threads(was)
    assert seen == [1, 1]
    assert capsys.readouterr().out.count("2 of 2 milestones pass") == 2


def test_a_failing_run_names_its_seed_and_the_seed_repeats_it(
    tmp_path, capsys
):
    """Each run draws new inputs and weights, so "differs by up to 1.14"
    became "1.17" on the next run of the same file: a failing run says
    its seed, and that seed gives the same report again."""
    source = _bug("/ math.sqrt(self.d_k)", "/ math.sqrt(self.d_k * 2)")
    status, _, first = _grade_here(tmp_path, source, capsys)
    assert status == 1, first
    found = re.search(r"--seed (\d+)", first)
    assert found, first
    assert grade.main([str(tmp_path / "my_mha.py"), "--seed", found[1]]) == 1
    assert capsys.readouterr().out == first


@pytest.mark.parametrize(
    "edits",
    [
        # The head count on the class: the last module built's (raises).
        ("self.h = num_heads", "MultiHeadAttention.h = num_heads"),
        # The scale in a module-level variable: wrong numbers, no error.
        (
            "import math\n",
            "import math\n\nSCALE = [1.0]\n",
            "self.d_k = d_model // num_heads",
            "self.d_k = d_model // num_heads\n"
            "        SCALE[0] = self.d_k**-0.5",
            "/ math.sqrt(self.d_k)",
            "* SCALE[0]",
        ),
    ],
    ids=["class-attribute", "module-variable"],
)
def test_a_size_shared_by_every_module_fails_h_gt_1(tmp_path, capsys, edits):
    """Two modules at once, as an encoder's and a decoder's: a size kept
    on the class or in a module-level variable is the last one built's.
    Every call was made on the module built last, and such a file passed
    7 of 7 (an expert's review). The first module, called again after a
    second (another h and d_model) was built, fails h>1, and the line
    says where such a size lives; not blamed on a call before."""
    status, lines, stdout = _grade_here(tmp_path, _bug(*edits), capsys)
    assert status == 1, stdout
    assert lines["h>1"][0] == "FAIL", stdout
    detail = lines["h>1"][1]
    assert "called after another was built" in detail, stdout
    assert "kept on the class or in a module-level variable" in detail
    assert grade.FROM_BEFORE not in detail, stdout


def test_weights_returned_transposed_are_not_told_to_move_the_softmax(
    tmp_path, capsys
):
    """A right output with its weights returned as (B, h, T_k, T_q):
    they sum to 1 over the queries, and the line said "your softmax runs
    over the queries ... run it over the keys", which breaks the output
    (an expert's review). It says the output is right and the weights
    returned are not."""
    source = _bug(
        "return self.W_O(self.merge(weights @ v)), weights",
        "return self.W_O(self.merge(weights @ v)), weights.transpose(-2, -1)",
    )
    status, lines, stdout = _grade_here(tmp_path, source, capsys)
    assert status == 1, stdout
    assert lines["h=1"][0] == "FAIL", stdout
    assert "softmax runs over" not in lines["h=1"][1], stdout
    assert "the weights you return are transposed" in lines["h=1"][1]


@pytest.mark.parametrize(
    ("edits", "said", "not_said"),
    [
        (
            ("if mask is not None:", "if mask:"),
            "test `if mask is not None`",
            "unsqueeze nothing",
        ),
        (
            ("masked_fill(~mask,", "masked_fill(1 - mask,"),
            "invert it with ~mask",
            "unsqueeze nothing",
        ),
        (
            ("masked_fill(~mask,", "masked_fill(~mask.unsqueeze(1),"),
            "an axis more makes the scores 5-D",
            "an axis short",
        ),
        (
            (
                'scores = scores.masked_fill(~mask, float("-inf"))',
                "scores = scores.masked_fill(mask.logical_not_(), -1e30)\n"
                "            mask.logical_not_()",
            ),
            "a mask was changed in place",
            "torch.softmax(scores, dim=-1), out of place",
        ),
    ],
    ids=["if-mask", "one-minus-mask", "unsqueezed", "inverted-in-place"],
)
def test_a_mask_used_wrongly_is_told_what_its_error_names(
    tmp_path, capsys, edits, said, not_said
):
    """Every error raised with a mask got one tail: "it broadcasts over
    the scores ... (unsqueeze nothing: an axis more makes the scores
    5-D)", for `if mask:` and `1 - mask` too, after torch's view hint
    "an axis short" where the mask made one more; and a mask inverted in
    place was sent to the softmax (an expert's review). Each is told
    what its error names."""
    status, lines, stdout = _grade_here(tmp_path, _bug(*edits), capsys)
    assert status == 1, stdout
    assert lines["masks"][0] == "FAIL", stdout
    assert said in lines["masks"][1], stdout
    assert not_said not in lines["masks"][1], stdout


@pytest.mark.parametrize(
    "edits",
    [
        # The heads' mean: (B, T, d_k) reaches W_O.
        (
            "return x.transpose(1, 2).contiguous().view(B, T, h * d_k)",
            "return x.mean(dim=1)",
        ),
        # W_O applied to each head: (B, h, T, d_k) reaches it.
        (
            "return self.W_O(self.merge(weights @ v)), weights",
            "return self.merge(self.W_O(weights @ v)), weights",
        ),
        # W_Q applied to the split query.
        ("q = self.split(self.W_Q(query))", "q = self.W_Q(self.split(query))"),
    ],
    ids=["mean", "per-head", "w-q-after-split"],
)
def test_a_head_given_to_a_projection_is_told_the_order(
    tmp_path, capsys, edits
):
    """A merge by the heads' mean, or W_O per head, told only torch's
    "mat1 and mat2 shapes cannot be multiplied (10x4 and 8x8)" (an
    expert's review); so did W_Q applied after the split. The line says
    which width each projection takes (it cannot tell which one
    raised: the first hint named W_O for W_Q's error)."""
    status, lines, stdout = _grade_here(tmp_path, _bug(*edits), capsys)
    assert status == 1, stdout
    assert lines["shapes"][0] == "FAIL", stdout
    detail = lines["shapes"][1]
    assert "W_Q, W_K and W_V take (B, T, d_model) before the split" in detail
    assert "and W_O the heads merged back" in detail, stdout


def test_a_file_that_does_not_load_names_no_seed(tmp_path, capsys):
    """No number is drawn before the file loads: after a SyntaxError the
    seed line would send a student to rerun with numbers that played no
    part."""
    (tmp_path / "my_mha.py").write_text("class MultiHeadAttention(\n")
    assert grade.main([str(tmp_path / "my_mha.py")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL load") and "SyntaxError" in out, out
    assert "--seed" not in out, out


#: Runs the grader's thread hooks (mha_ref/_sandbox.py's functions, taken
#: from its text: the module imports torch, which another Python here
#: lacks) and reports, for a threading.Thread, a thread pool's workers
#: and a raw _thread thread, whether each ran under the hook.
_HOOKED_THREADS = """\
import ast, sys, threading, _thread, concurrent.futures
tree = ast.parse(open(sys.argv[1]).read())
names = {"_hooked_start", "_hooked_joinable", "_hook_thread_starts",
         "_in_thread"}
ns = {"_thread": _thread, "threading": threading, "sys": sys,
      "_CURRENT": [None], "_SET_PROFILE": sys.setprofile,
      "_START_THREAD": _thread.start_new_thread,
      "_START_JOINABLE": getattr(_thread, "start_joinable_thread", None)}
for node in tree.body:
    if isinstance(node, ast.FunctionDef) and node.name in names:
        exec(compile(ast.Module([node], []), "_sandbox.py", "exec"), ns)
ns["_hook_thread_starts"]()
hooked = lambda *_: sys.getprofile() is ns["_in_thread"]
seen = []
t = threading.Thread(target=lambda: seen.append(hooked()))
t.start(); t.join()
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    seen += pool.map(hooked, range(3))
done = threading.Event()
_thread.start_new_thread(lambda: (seen.append(hooked()), done.set()), ())
done.wait(10)
print(seen)
"""


def _pythons() -> list[str]:
    """Each CPython 3.11 or later found here (PATH, pyenv), by version."""
    found = {}
    candidates = [shutil.which(f"python3.{m}") for m in range(11, 20)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(map(str, pyenv.glob("versions/3.*/bin/python3")))
    for exe in filter(None, candidates):
        try:
            version = subprocess.run(
                [exe, "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
        except OSError:
            continue
        if version and ast.literal_eval(version) >= (3, 11):
            found.setdefault(version, exe)
    return list(found.values())


def test_every_thread_the_file_starts_is_hooked_on_each_python_here():
    """The grader watches the student's threads by wrapping how threads
    start, names CPython keeps private: ``threading.Thread`` starts
    through ``_start_new_thread`` up to 3.12 and
    ``_start_joinable_thread`` from 3.13, where the hook once missed
    every Thread (torch's layer run in one would have passed). Each
    Python here runs the hook's own code (a student's venv may hold any
    of them); where neither name exists the hook raises, naming the
    version."""
    sandbox = Path(grade.__file__).with_name("_sandbox.py")
    for exe in {sys.executable, *_pythons()}:
        run = subprocess.run(
            [exe, "-c", _HOOKED_THREADS, str(sandbox)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.stdout.strip() == "[True, True, True, True, True]", (
            exe,
            run.stdout,
            run.stderr[-2000:],
        )


# --- leaving the sandbox: socket files, a killed grader ----------------------

#: The grader as a command line ("zygote": each file a fork of one) and
#: with no zygote ("fresh": a ``python -I`` child per file).
_GRADERS = {
    "zygote": ["-m", "mha_ref.grade"],
    "fresh": [
        "-c",
        "import sys; from mha_ref import grade; "
        "grade._ZYGOTE['failed'] = True; sys.exit(grade.main(sys.argv[1:]))",
    ],
}
#: A stream socket file listening outside the sandbox, and a datagram
#: one: what each probe got ("done", or its errno).
_SOCKET_PROBES = """\
import socket
def probe(name, act):
    try:
        act()
        print("PROBE", name, "done")
    except OSError as error:
        print("PROBE", name, error.errno)
probe("connect", lambda: socket.socket(socket.AF_UNIX).connect(%(stream)r))
pair = lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]
probe("sendto", lambda: pair().sendto(b"x", %(datagram)r))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces")
@pytest.mark.parametrize("how", list(_GRADERS))
def test_a_graded_file_reaches_no_socket_file_outside(tmp_path, how):
    """The network namespace leaves a socket file of the machine's in
    reach (a file sent /etc/shadow to a listener outside: docker.sock,
    an ssh-agent, X11 on a real machine). Now it can make no Unix socket
    to connect with, nor a datagram pair to send from; its grade, over
    the grader's own pipes, is as before."""
    import errno

    with socket_files(tmp_path) as paths:
        (tmp_path / "my_mha.py").write_text(_SOCKET_PROBES % paths + CORRECT)
        result = subprocess.run(
            [sys.executable, *_GRADERS[how], "my_mha.py"],
            cwd=tmp_path,
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "OMP_NUM_THREADS": "1",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
        seen = dict(
            line.split("PROBE ", 1)[1].split()
            for line in result.stderr.splitlines()
            if "PROBE " in line
        )
        refused = str(errno.EACCES)
        assert seen == {"connect": refused, "sendto": refused}, result.stderr
        assert result.returncode == 0, result.stdout + result.stderr


def _parent_and_start(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a live process; None if it has ended
    (or is a zombie)."""
    try:
        fields = (
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        )
    except OSError:
        return None
    return None if fields[0] == "Z" else (int(fields[1]), fields[19])


@pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces")
@pytest.mark.parametrize("how", list(_GRADERS))
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_no_process_of_a_grading_outlives_its_grader(tmp_path, how, sig):
    """An autograder's ``timeout 15`` (SIGTERM) or SIGKILL ended the
    grader during a call whose watchdog the file had cancelled: its
    zygote ended, but the file's process and the one waiting for it
    lived on, that one reading its memory every 50 ms, for ever. Now each
    process of the grading (the zygote, the waiting process, the file's
    and what it started) ends with it, even where the file tried to
    clear its own parent-death signal."""
    import signal

    token = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    first = "        q = self.split(self.W_Q(query))\n"
    source = _bug(
        first,
        "        import ctypes, faulthandler, os\n"
        "        faulthandler.cancel_dump_traceback_later()\n"
        # Nothing when its parent ends: PR_SET_PDEATHSIG, 0 (refused).
        "        ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"
        "        os.fork()\n"  # one more process in its namespace
        f"        os.execvp('sleep', ['sleep', '{token}'])\n" + first,
    )
    (tmp_path / "my_mha.py").write_text(source)
    grader = subprocess.Popen(
        [sys.executable, *_GRADERS[how], "my_mha.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    grading: dict[int, str] = {}  # pid -> start time
    try:
        deadline = time.monotonic() + 120
        while len(grading) < 2 and time.monotonic() < deadline:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                if _cmdline(pid).endswith(token.encode()):
                    found = _parent_and_start(int(pid))
                    if found:
                        grading[int(pid)] = found[1]
            time.sleep(0.05)
        assert len(grading) == 2, "the file's processes never started"
        # Their ancestors up to the grader: PID 1 of the file's namespace
        # (it reaps), the waiting process, the zygote.
        for pid in list(grading):
            while (found := _parent_and_start(pid)) and found[0] != grader.pid:
                pid = found[0]
                grading[pid] = _parent_and_start(pid)[1]
        assert len(grading) == (5 if how == "zygote" else 4), grading
        grader.send_signal(getattr(signal, sig))
        grader.wait(timeout=60)

        def left() -> list[int]:
            return [
                pid
                for pid, start in grading.items()
                if (_parent_and_start(pid) or (0, None))[1] == start
            ]

        deadline = time.monotonic() + 20
        while left() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left() == [], f"left running after {sig}: {left()}"
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
        for pid, start in grading.items():
            if (_parent_and_start(pid) or (0, None))[1] == start:
                os.kill(pid, signal.SIGKILL)


def _tried(*calls) -> str:
    """Each call's outcome, in order: "made", or the errno it raised."""
    said = []
    for call in calls:
        try:
            call()
            said.append("made")
        except OSError as error:
            said.append(str(error.errno))
    return " ".join(said)


def _in_a_child(attempt, confined: bool = False) -> str:
    """What ``attempt()`` returns, run in a forked child, after
    ``isolate()`` if ``confined`` (there it leaves this process as it
    was): the same call before and after says what the sandbox takes."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            if confined:
                _isolate.isolate()
            os.write(write, attempt().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as said:
        seen = said.read()
    os.waitpid(pid, 0)
    return seen


def _made_then_refused(error: int, *calls) -> None:
    """Each call works in a forked child before ``isolate()`` and raises
    OSError ``error`` after it: the sandbox takes exactly these."""
    assert _in_a_child(lambda: _tried(*calls)) == " ".join(
        ["made"] * len(calls)
    )
    confined = _in_a_child(lambda: _tried(*calls), confined=True)
    assert confined == " ".join([str(error)] * len(calls))


@pytest.mark.skipif(sys.platform != "linux", reason="seccomp: Linux")
def test_without_namespaces_the_file_still_gets_no_unix_socket():
    """Where the kernel refuses a user namespace (a container's seccomp
    profile, a distribution that restricts them), isolate() returned
    before the filter: a Unix socket was allowed on exactly the machines
    where docker.sock is likeliest in reach (a reviewer's reproducer)."""
    import errno

    def attempt() -> str:
        _isolate._unshare = lambda *args: False
        _isolate.isolate()
        try:
            socket.socket(socket.AF_UNIX).close()
            return "allowed"
        except OSError as error:
            return str(error.errno)

    assert _in_a_child(attempt) == str(errno.EACCES)


#: add_key(2), by machine: a number of the kernel's ABI, read here apart
#: from the filter's table (glibc has no wrapper).
ADD_KEY = {"x86_64": 248, "aarch64": 217}


def _add_key_in_a_child(confined: bool) -> str:
    """add_key("user", ..., the process keyring) in a forked child, with
    or without isolate(): "added", or the errno it failed with."""
    import ctypes

    def attempt() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        got = libc.syscall(
            ADD_KEY[os.uname().machine],
            b"user",
            b"left-by-a-graded-file",
            b"data",
            ctypes.c_size_t(4),
            ctypes.c_int(-2),  # KEY_SPEC_PROCESS_KEYRING
        )
        return "added" if got >= 0 else str(ctypes.get_errno())

    return _in_a_child(attempt, confined)


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_gets_no_keyring():
    """No namespace scopes the caller's session keyring: a graded file
    added a key there that the next file graded from the same shell read
    (a channel between submissions, and the user's key quota: an
    attacker's report). The kernel's key calls are refused."""
    import errno

    if _add_key_in_a_child(confined=False) != "added":
        pytest.skip("this kernel gives no keyring to try")
    assert _add_key_in_a_child(confined=True) == str(errno.EACCES)


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_holds_no_memory_outside_its_mappings():
    """A file in memory written with os.write, or a System V segment
    filled and detached, is memory no limit counts: a graded file held
    2 GB in 32 such files and passed every milestone (an attacker's
    audit); so is a System V message queue, filled (another's: about
    500 MB). memfd_create, shmget and msgget are not there for it
    (ENOSYS); the same process before isolate() makes all three."""
    import errno

    _made_then_refused(
        errno.ENOSYS,
        lambda: os.close(os.memfd_create("held")),
        lambda: _shmget(1 << 20),
        _msgget,
    )


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_hands_no_pages_to_a_pipe():
    """vmsplice puts the file's own pages into a pipe by reference: one
    4 KB page of each transparent huge page kept the whole 2 MB alive
    after munmap, in no mapping; 32 pipes held 1 GB beside a correct
    module that passed 7 of 7, and the descriptors allow 16 GB a
    process (an attacker's audit). splice does the same with a file's
    pages. Neither is there for the file (ENOSYS); the same process
    before isolate() calls both."""
    import ctypes
    import errno

    def attempt() -> str:
        libc = ctypes.CDLL(None, use_errno=True)

        class Iovec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

        page = ctypes.create_string_buffer(4096)
        read, write = os.pipe()
        iov = Iovec(ctypes.addressof(page), 4096)
        got = libc.vmsplice(write, ctypes.byref(iov), ctypes.c_ulong(1), 0)
        said = ["spliced" if got == 4096 else str(ctypes.get_errno())]
        other_read, other_write = os.pipe()
        try:
            os.splice(read, other_write, 4096)
            said.append("spliced")
        except OSError as error:
            said.append(str(error.errno))
        return " ".join(said)

    assert _in_a_child(attempt) == "spliced spliced"
    assert (
        _in_a_child(attempt, confined=True) == f"{errno.ENOSYS} {errno.ENOSYS}"
    )


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_holds_no_memory_in_socket_buffers():
    """Data written into a stream socketpair and never read sits in the
    kernel's socket buffers, in no mapping: with SO_SNDBUF raised to the
    machine's wmem_max, 540 pairs held 7.7 GiB, none of it counted by the
    watcher, and passed every milestone (an attacker's audit); the open-
    file limit allowed 20 times that. A buffer may not be grown, and the
    descriptors are bounded; the same process before isolate() may."""
    import errno
    import resource
    import socket

    def attempt() -> str:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
            grown = "grown"
        except OSError as error:
            grown = str(error.errno)
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        return f"{grown} {files <= _isolate.FILES}"

    assert _in_a_child(attempt).startswith("grown ")
    assert _in_a_child(attempt, confined=True) == f"{errno.EACCES} True"


@pytest.mark.skipif(sys.platform != "linux", reason="namespaces: Linux")
def test_the_watcher_counts_what_unix_sockets_hold():
    """Each process of the file has FILES descriptors: socketpairs filled
    at the default buffer size held about 230 MB a fork, 2.7 GiB in 12
    forks (the TASKS of them about 14 GiB), in no mapping, and passed
    every milestone (an attacker's audit). In a network namespace of its
    own, the watcher adds what the Unix sockets there hold: a process of
    a few hundred KB, beside sockets holding 8 MiB, is over a budget of
    4 MiB and is killed."""
    import contextlib
    import ctypes
    import signal

    def attempt() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        if not _isolate._unshare(
            libc, _isolate.CLONE_NEWNET, os.getuid(), os.getgid()
        ):
            return "no namespace"
        held = []
        while _isolate.socket_bytes() < 8 << 20 and len(held) < 200:
            a, b = socket.socketpair()
            a.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                while True:
                    a.send(b"x" * 65536)
            held.append((a, b))
        sleeper = subprocess.Popen(["sleep", "30"])
        proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
        status = _isolate.watch(sleeper.pid, 4 << 20, proc, sockets=True)
        return str(os.WIFSIGNALED(status) and os.WTERMSIG(status))

    said = _in_a_child(attempt)
    if said == "no namespace":
        pytest.skip("this kernel gives no network namespace")
    assert said == str(int(signal.SIGKILL))


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_gets_no_netlink_socket():
    """One netlink socket may send to another: what each received and
    nobody read, about 200 KB a descriptor, sits in no mapping, and the
    watcher counts only Unix sockets' (an attacker's audit). The file
    may open none (EACCES); the same process before isolate() may."""
    import errno
    import socket

    def attempt() -> str:
        try:
            socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
            return "opened"
        except OSError as error:
            return str(error.errno)

    assert _in_a_child(attempt) == "opened"
    assert _in_a_child(attempt, confined=True) == str(errno.EACCES)


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_opens_no_socket_of_any_family():
    """A TCP socket reaches nothing in the file's network namespace, yet
    holds up to optmem_max (128 KB) of option memory in the kernel, in
    no mapping: TCP_MD5SIG keys on 600 sockets in two forks of a module
    that passed 7 of 7 held 110 MB of unreclaimable memory, none of it
    counted, 12 GB at the limits on descriptors and tasks (an
    attacker's audit). No socket() of any family is there (EACCES); the
    same process before isolate() opens them."""
    import errno
    import socket

    _made_then_refused(
        errno.EACCES,
        lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(),
        lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close(),
        lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close(),
    )


@pytest.mark.skipif(
    sys.platform != "linux" or os.uname().machine not in ADD_KEY,
    reason="seccomp: Linux on x86_64 or aarch64",
)
def test_a_graded_file_loads_no_bpf_program():
    """The kernel copies, converts and compiles a BPF program attached
    to a socket (about 300 KB for one of 1,100 instructions) or stacked
    as a seccomp filter, in no mapping: a thousand sockets of the
    socketpairs the file may make hold 300 MB, none of it counted (an
    attacker's audit). SO_ATTACH_FILTER, seccomp() and
    prctl(PR_SET_SECCOMP) are refused (EACCES); the same process before
    isolate() may."""
    import ctypes
    import errno
    import socket
    import struct

    def attempt() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        code = ctypes.create_string_buffer(
            struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000)  # ret ALLOW
        )
        program = ctypes.create_string_buffer(
            struct.pack("HxxxxxxQ", 1, ctypes.addressof(code))
        )
        said = []
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        attach_filter = 26  # SO_ATTACH_FILTER
        try:
            a.setsockopt(socket.SOL_SOCKET, attach_filter, program.raw[:16])
            said.append("attached")
        except OSError as error:
            said.append(str(error.errno))
        libc.prctl(_isolate.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        got = libc.prctl(
            _isolate.PR_SET_SECCOMP,
            _isolate.SECCOMP_MODE_FILTER,
            ctypes.c_void_p(ctypes.addressof(program)),
            0,
            0,
        )
        said.append("stacked" if got == 0 else str(ctypes.get_errno()))
        return " ".join(said)

    assert _in_a_child(attempt) == "attached stacked"
    assert (
        _in_a_child(attempt, confined=True) == f"{errno.EACCES} {errno.EACCES}"
    )


def _shmget(size: int) -> None:
    """A private System V segment of ``size`` bytes, then removed."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ipc_private, ipc_creat, ipc_rmid = 0, 0o1000, 0
    segment = libc.shmget(
        ipc_private, ctypes.c_size_t(size), ipc_creat | 0o600
    )
    if segment < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    libc.shmctl(segment, ipc_rmid, None)


def _msgget() -> None:
    """A private System V message queue, then removed."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ipc_private, ipc_creat, ipc_rmid = 0, 0o1000, 0
    queue = libc.msgget(ipc_private, ipc_creat | 0o600)
    if queue < 0:
        raise OSError(ctypes.get_errno(), "msgget")
    libc.msgctl(queue, ipc_rmid, None)


def test_a_restart_past_the_whole_gradings_limit_ends_at_once(tmp_path):
    """A new child started once the whole grading's time was spent: its
    close() waited for a fork that had not yet left the zygote's group,
    and the grader hung for ever (a reviewer: 4 runs in 5). It ends
    with the limit's message; a thread bounds the wait here."""
    import threading

    (tmp_path / "my_mha.py").write_text(CORRECT)
    warm = grade.Session(tmp_path / "my_mha.py", 20.0, 1)
    warm.start()
    warm.close()
    session = grade.Session(tmp_path / "my_mha.py", 20.0, 1)
    session.deadline = time.monotonic() - 1
    raised = []

    def start():
        try:
            session.start()
        except grade.TimedOut as error:
            raised.append(str(error))

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "start() past the limit never returned"
    assert raised and "ran past its 300 s in all" in raised[0], raised


def test_a_reply_that_inflates_is_refused_before_it_is_loaded(tmp_path):
    """torch.load inflates every entry of a zip it is pointed at: a forged
    133 KB reply whose entries named one deflated block of 128 MB took
    the grader to 2.27 GB and 75 s (an attacker's audit). A reply must
    be laid out as torch.save writes it, its entries stored, not
    compressed: this one, 512 KB of zeros deflated to a few KB, is
    refused as not the grader's before it is loaded."""
    _forged_reply_is_refused(
        tmp_path,
        "import zipfile\n",
        "{'ok': True, 'pad': torch.zeros(1 << 17)}",
        repack="plain = zipfile.ZipFile(io.BytesIO(data))\n"
        "packed = io.BytesIO()\n"
        "with zipfile.ZipFile(packed, 'w', zipfile.ZIP_DEFLATED) as out:\n"
        "    for name in plain.namelist():\n"
        "        out.writestr(name, plain.read(name))\n"
        "data = packed.getvalue()\n",
    )


def test_the_memory_watchers_stop_is_named_not_blamed_on_the_file():
    """A file stopped by the watcher for holding too much memory read
    "your code or something it started sent it (os.kill, a killed
    process group)" (an attacker's audit): the line says why."""
    from types import SimpleNamespace

    child = grade.Child(Path("my_mha.py"), 5.0)
    child.process = SimpleNamespace(returncode=-9)
    child.stderr_text = (
        "\nthe processes your file started held more than 8192 MiB "
        "together: all of them stopped\n"
    )
    said = str(child._ended("the import of your file"))
    assert "held more than 8192 MiB together" in said, said
    assert "os.kill" not in said, said
    child.gone, child.stderr_text = None, ""
    said = str(child._ended("the import of your file"))
    assert "stopped by SIGKILL" in said and "os.kill" in said, said
