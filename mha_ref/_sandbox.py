"""The grader's child process: runs the student's module, reports tensors.

The grader (:mod:`mha_ref.grade`) never imports a student's file itself.
It runs this module in a separate interpreter (``python -I``, or a fork
of one that has imported torch: ``_zygote.py``), sends it
requests on one pipe and reads replies on another. This side only
*executes*: it builds the student's module, copies in the weights it is
sent, calls ``forward`` (and ``backward``) and sends back what came out.
It decides nothing. Every verdict is computed in the parent, from
tensors it compares with its own reference on inputs it chose (at
random, per run) -- so a module that prints "PASS", exits early or
rebinds functions here can at most send wrong tensors, and fails.

Messages are a 8-byte length and a ``torch.save`` payload of plain data
(dicts, lists, strings, numbers, tensors); the parent reads them with
``torch.load(weights_only=True)``, which builds no arbitrary objects.

The grade is of the student's own code, so each request also reports
the functions of the lesson's reference (any ``mha_ref`` module but
this one) that the student's module ran: ``from mha_ref import
MultiHeadAttention`` would otherwise pass every milestone. So would a
forward that hands its work to PyTorch's own multi-head attention, the
layer the grader compares against: those calls are reported too.
"""

from __future__ import annotations

import _thread
import contextlib
import copy
import faulthandler
import hashlib
import importlib.util
import inspect
import io
import os
import signal
import struct
import sys
import threading
import time
import traceback
from pathlib import Path

import torch
from torch import nn

PROJECTIONS = ("W_Q", "W_K", "W_V", "W_O")
#: forward's parameters, in the lesson's order.
ARGUMENTS = ("query", "key", "value", "mask", "is_causal")
_HEADER = struct.Struct("<Q")
#: The reference's folder, named as its modules' code names it.
_REFERENCE = os.path.dirname(__file__)
#: PyTorch's own multi-head attention, by the code it runs (taken before
#: the student's file is imported, so a rebinding does not hide it): the
#: layer the grader compares against, so calling it proves nothing.
#: F.scaled_dot_product_attention stays the student's to call (the
#: lesson shows it as the fused attention step). torch has a second,
#: pure-Python layer for quantization (imported with torch): a module
#: that handed it the four Linears passed 7 of 7 (an expert's audit).
_TORCH_MHA = {
    nn.functional.multi_head_attention_forward.__code__: (
        "F.multi_head_attention_forward"
    ),
    nn.MultiheadAttention.forward.__code__: "nn.MultiheadAttention",
    torch.ao.nn.quantizable.MultiheadAttention.forward.__code__: (
        "torch.ao.nn.quantizable.MultiheadAttention"
    ),
}
#: The fused layer's C entry points: torch's own function, torch.ops'
#: operator (``torch.ops.aten._native_multi_head_attention``) and what
#: ``torch._C._jit_get_operation`` hands out are built-ins of that name;
#: an overload's (``.default``, ``.out``; reached by its ``__call__`` or
#: its ``_op``) has none, and is known by identity. Each passed five
#: milestones (an expert's review). A built-in's name is its type's to
#: read: the file cannot make it raise.
_FUSED = "_native_multi_head_attention"
_FUSED_OVERLOADS = frozenset(
    getattr(torch.ops.aten._native_multi_head_attention, name)._op
    for name in torch.ops.aten._native_multi_head_attention.overloads()
)
_BUILTIN = type(len)


#: The profile function of the request under way, or None. A thread
#: keeps the hook it started with: one the file started while it was
#: imported ran the reference for later requests unseen, so every
#: thread's hook hands on to this (:func:`_in_thread`).
_CURRENT: list = [None]
#: Calls (Python and C) the hook has seen: a forward's count grows with
#: h where it runs a Python loop over the heads (a project build rule:
#: slides/43-project-multiheadattention-as-nn-module.html).
_CALLS: list = [0]
#: Bound before the student's file runs (one that replaced it with
#: no-ops hid its calls).
_SET_PROFILE = sys.setprofile


def _in_thread(frame, event, arg) -> None:
    if (profile := _CURRENT[0]) is not None:
        profile(frame, event, arg)


_START_THREAD = _thread.start_new_thread


def _hooked_start(function, args, kwargs=None):
    """``_thread.start_new_thread`` with the hook set in the new thread:
    ``threading.setprofile`` reaches only ``threading.Thread``, and a
    file that ran torch's layer in a raw thread passed 7 of 7 (an
    expert's audit)."""

    def run(*args, **kwargs):
        _SET_PROFILE(_in_thread)
        return function(*args, **kwargs)

    return _START_THREAD(run, args, kwargs or {})


#: Python 3.13 and later: how ``threading.Thread`` starts its thread
#: (``threading._start_joinable_thread``; before, ``_start_new_thread``).
_START_JOINABLE = getattr(_thread, "start_joinable_thread", None)


def _hooked_joinable(function, *args, **kwargs):
    """``_thread.start_joinable_thread`` with the hook set in the new
    thread: unhooked, a ``threading.Thread`` running torch's layer would
    pass on Python 3.13."""

    def run():
        _SET_PROFILE(_in_thread)
        return function()

    return _START_JOINABLE(run, *args, **kwargs)


def _hook_thread_starts() -> None:
    """Every thread the file starts sets the hook first thing, raw
    (``_thread``) or through ``threading``, which keeps its own name for
    the function it starts threads with: CPython's private names, so a
    Python whose ``threading`` has neither fails here, by name."""
    _thread.start_new_thread = _thread.start_new = _hooked_start
    if _START_JOINABLE is not None:
        _thread.start_joinable_thread = _hooked_joinable
        threading._start_joinable_thread = _hooked_joinable
    elif hasattr(threading, "_start_new_thread"):
        threading._start_new_thread = _hooked_start
    else:
        raise RuntimeError(
            f"Python {sys.version.split()[0]}: threading starts its threads "
            "through neither _start_joinable_thread nor _start_new_thread; "
            "the grader cannot watch them (mha_ref/_sandbox.py)"
        )


class EndsItsProcess(RuntimeError):
    """A timer the file set, whose signal would end its process later."""


#: faulthandler's watchdog, as the grader arms it: the name the file
#: sees is guarded (:func:`_guard_timers`).
_DUMP_LATER = faulthandler.dump_traceback_later


def _guard_timers() -> None:
    """``faulthandler.dump_traceback_later(exit=True)`` ends the process
    later, as a timer's signal does (:func:`_no_timer_left`), and each
    call of the grader's own watchdog cancelled it unseen: a program run
    alone ended 2 s after its last call (an attacker's audit). Refused."""

    def guarded_dump_later(timeout, repeat=False, file=None, exit=False):
        if exit:
            raise EndsItsProcess(
                "faulthandler.dump_traceback_later(exit=True) ends this "
                "process later, which ends a program run alone: a module "
                "must not end the process that uses it"
            )
        return _DUMP_LATER(
            timeout, repeat, sys.stderr if file is None else file
        )

    faulthandler.dump_traceback_later = guarded_dump_later


#: The interval timers and the signal each sends.
_TIMERS = {
    signal.ITIMER_REAL: signal.SIGALRM,
    signal.ITIMER_VIRTUAL: signal.SIGVTALRM,
    signal.ITIMER_PROF: signal.SIGPROF,
}


def _no_timer_left() -> None:
    """A timer's signal ends the process later, when the grader may be
    done with it: ``signal.alarm(1)`` on each call (each putting off the
    last) passed 7 of 7 and ended a program run alone a second after its
    last call, and the C library's ``alarm`` through ctypes got past a
    guard on Python's functions (attackers' audits). So, after the
    import and each call, however it was set: a timer left armed whose
    signal the process does not handle is refused (and disarmed). (A
    signal sent at once ends the process, which the grader sees:
    ``_isolate._reap``.)"""
    for which, sig in _TIMERS.items():
        if signal.getitimer(which)[0] and signal.getsignal(sig) in (
            signal.SIG_DFL,
            None,
        ):
            signal.setitimer(which, 0)
            raise EndsItsProcess(
                f"your code left a timer set (signal.alarm, "
                f"signal.setitimer or the C library's) that sends "
                f"{signal.Signals(sig).name} to this process later, which "
                f"ends a program run alone: a module must not end the "
                f"process that uses it"
            )


#: What turns the hook off (a file that called ``sys.setprofile(None)``
#: in forward, then the reference, passed every milestone).
_UNHOOK_C = {_SET_PROFILE: "sys.setprofile"}
_UNHOOK = {threading.setprofile.__code__: "threading.setprofile"}
#: What turns code into a graph the hook cannot see into: TorchScript,
#: an exported program. Through them no check here tells the file's
#: attention from PyTorch's own (torch.jit.script of
#: F.multi_head_attention_forward, one public call, passed 7 of 7: an
#: attacker's audit), so a file that uses them is refused, as one that
#: compiles is.
_OPAQUE = {
    f.__code__: f"torch.{f.__module__.split('.')[1]}.{f.__name__}"
    for f in (
        torch.jit.script,
        torch.jit.trace,
        torch.jit.trace_module,
        torch.jit.load,
        torch.export.export,
        torch.export.load,
    )
}
#: The same one level down, called from Python: what those call in C (a
#: graph saved beforehand, read back by torch._C.import_ir_module_from_
#: buffer, passed 7 of 7: a fresh check), and, below, any method of a
#: graph or of the unit that compiles one (a CompilationUnit's define).
_OPAQUE_C = {
    getattr(torch._C, name): f"torch._C.{name}"
    for name in (
        "import_ir_module",
        "import_ir_module_from_buffer",
        "_import_ir_module_from_package",
        "_jit_script_compile",
        "_jit_script_class_compile",
        "_jit_script_compile_overload",
        "_create_function_from_trace",
        "_create_function_from_trace_with_dict",
        "_jit_trace_module",
        "_jit_trace_graph",
        "_load_for_lite_interpreter",
        "_load_for_lite_interpreter_from_buffer",
    )
    if hasattr(torch._C, name)
}

_GRAPHS = tuple(
    getattr(torch._C, name)
    for name in (
        "ScriptModule",
        "ScriptFunction",
        "ScriptMethod",
        "CompilationUnit",
        "LiteScriptModule",
    )
    if hasattr(torch._C, name)
)


def _named(opaque: set[str]) -> list[str]:
    """The calls to name: torch.jit.script, not also the torch._C call
    it made (a student wrote the one, never the other)."""
    above = [name for name in opaque if not name.startswith("torch._C.")]
    return sorted(above or opaque)


def _is_reference(file: str) -> bool:
    """A module of the reference package, wherever it was imported from:
    this folder, or a copy of the package (the site's ``mha_ref.zip``,
    imported under another name, passed 7 of 7: an expert's audit)."""
    folder, name = os.path.split(file)
    return folder == _REFERENCE or (
        os.path.basename(folder) == "mha_ref" and name in _REFERENCE_FILES
    )


_REFERENCE_FILES = frozenset(
    name for name in os.listdir(_REFERENCE) if name.endswith(".py")
)


@contextlib.contextmanager
def _watching(
    seen: set[str],
    student: Path,
    torch_mha: set[str] | None = None,
    hidden: set[str] | None = None,
    opaque: set[str] | None = None,
):
    """Add to ``seen`` each ``mha_ref`` function that the code run
    inside calls (``mha.py: MultiHeadAttention.forward``), where the
    student's code enters it; this module's own are not the student's,
    nor is the student's file if it was saved in the package's folder.
    Add to ``torch_mha`` each entry into PyTorch's own multi-head
    attention (:data:`_TORCH_MHA`). A profile hook sees every Python
    call (and each call of a C function): through a subclass, a wrapper
    or a function taken from the package. Add to ``hidden`` each call
    that changes the hook (:data:`_UNHOOK_C`, :data:`_UNHOOK`), and a
    hook found changed at the end: what ran after it went unseen. Add
    to ``opaque`` each call that makes, reads or runs a graph by name
    (:data:`_OPAQUE`, :data:`_OPAQUE_C`, a method of :data:`_GRAPHS`)."""

    def inside(frame) -> bool:
        file = frame.f_code.co_filename if frame else ""
        return _is_reference(file) and file not in mine

    mine = (__file__, str(student))

    torch_mha = set() if torch_mha is None else torch_mha
    hidden = set() if hidden is None else hidden
    opaque = set() if opaque is None else opaque
    ending = False

    def profile(frame, event, arg):
        # An exception here turns the hook off (CPython's rule), and the
        # file's objects are looked at: a __str__ or a __class__ that
        # raised ran torch's attention unseen, 7 of 7 (a reviewer's
        # attack). Whatever raises in the watch counts as hiding.
        try:
            if event in ("call", "c_call"):
                _CALLS[0] += 1
            if event == "c_call":
                # (Inline: the hook sees every C call.)
                if type(arg) is _BUILTIN and (
                    _FUSED in arg.__name__ or arg in _FUSED_OVERLOADS
                ):
                    torch_mha.add(f"torch's fused {_FUSED}")
                # (Not this function's own call that ends the watch.)
                if (name := _UNHOOK_C.get(arg)) is not None and not ending:
                    hidden.add(name)
                if (name := _OPAQUE_C.get(arg)) is not None:
                    opaque.add(name)
                elif issubclass(
                    type(owner := getattr(arg, "__self__", None)), _GRAPHS
                ):
                    opaque.add(
                        f"a TorchScript {type(owner).__name__}'s methods"
                    )
                return
            if event != "call":
                return
            if (name := _TORCH_MHA.get(frame.f_code)) is not None:
                torch_mha.add(name)
            if (name := _UNHOOK.get(frame.f_code)) is not None:
                hidden.add(name)
            if (name := _OPAQUE.get(frame.f_code)) is not None:
                opaque.add(name)
            # The entry into the reference, not the helpers it calls on, nor
            # the import of its modules (the package loads them on first use).
            code = frame.f_code
            loading = code.co_name in ("<module>", "__getattr__", "__dir__")
            if inside(frame) and not inside(frame.f_back) and not loading:
                name = os.path.basename(code.co_filename)
                seen.add(f"{name}: {code.co_qualname}")
        except BaseException:  # noqa: BLE001 - the file's doing
            hidden.add("an object that raised when the grader's hook read it")

    _CURRENT[0] = profile  # and so every thread's hook (main sets it)
    _SET_PROFILE(profile)
    try:
        yield
    finally:
        if sys.getprofile() is not profile:
            hidden.add("sys.setprofile")
        ending = True
        _CURRENT[0] = None
        _SET_PROFILE(None)


def encode(message: dict) -> bytes:
    """One message as written: its length, then its ``torch.save``
    bytes."""
    buffer = io.BytesIO()
    torch.save(message, buffer)
    data = buffer.getvalue()
    return _HEADER.pack(len(data)) + data


def send(fd: int, message: dict) -> None:
    """Write one message (the child's side: the grader writes with a
    deadline, grade.Child._send)."""
    view = memoryview(encode(message))
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> dict | None:
    """Read one message; None at end of file (the parent has gone)."""
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    data = _read_exactly(fd, size)
    return torch.load(io.BytesIO(data), weights_only=True)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Runner:
    """Executes the parent's requests on the student's class."""

    def __init__(self, path: Path, timeout: float, dump) -> None:
        self.path = path
        self.timeout = timeout
        self.dump = dump  # where a stuck call's stack is written
        self.cls = None
        self.modules: dict[int, nn.Module] = {}
        self.buffers: dict[tuple, torch.Tensor] = {}  # (place, shape, dtype)
        self.returned: list[tuple] = []  # (name, tensor, its copy) of a call

    # -- each request ------------------------------------------------

    def load(self) -> dict:
        sys.path.insert(0, str(self.path.parent))  # as `python my_mha.py`
        spec = importlib.util.spec_from_file_location("student_mha", self.path)
        if spec is None:  # a name Python does not import (my_mha.txt)
            raise ImportError(f"{self.path.name} is not a Python file (.py)")
        student = importlib.util.module_from_spec(spec)
        sys.modules["student_mha"] = student
        spec.loader.exec_module(student)
        cls = getattr(student, "MultiHeadAttention", None)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            # The classes the file defines, for the grader to name.
            classes = [
                name
                for name, value in vars(student).items()
                if isinstance(value, type)
                and value.__module__ == "student_mha"
            ]
            return {"ok": True, "class": False, "classes": classes[:4]}
        self.cls = cls
        return {"ok": True, "class": True}

    def new(self, id: int, args: list) -> dict:
        # A draw first: two constructions then start from different random
        # states, and end in the same one only if __init__ set it
        # (torch.manual_seed there reset the caller's random numbers and
        # made every layer of a model start alike: an expert's audit).
        torch.rand(1)
        module = self.cls(*args)
        self.modules[id] = module
        after = torch.get_rng_state()
        projections = {}
        for name in PROJECTIONS:
            layer = getattr(module, name, None)
            weight = getattr(layer, "weight", None)
            projections[name] = {
                "type": type(layer).__name__,
                "linear": isinstance(layer, nn.Linear),
                "bias": getattr(layer, "bias", None) is not None,
                "shape": list(weight.shape)
                if isinstance(weight, torch.Tensor)
                else None,
                "dtype": str(weight.dtype)
                if isinstance(weight, torch.Tensor)
                else None,
                "zero": isinstance(weight, torch.Tensor)
                and not bool(weight.detach().any()),
                # Every output feature the same function of the input.
                "rows_equal": isinstance(weight, torch.Tensor)
                and weight.dim() == 2
                and weight.size(0) > 1
                and bool((weight.detach() == weight.detach()[:1]).all()),
            }
        try:
            # "**" for a **kwargs (a decorated forward takes any keyword),
            # "*" for an *args (any number of tensors).
            kind = inspect.Parameter
            stars = {kind.VAR_KEYWORD: "**", kind.VAR_POSITIONAL: "*"}
            parameters = inspect.signature(module.forward).parameters
            names = [stars.get(q.kind, q.name) for q in parameters.values()]
            # What a caller passing them by position fills, in order.
            by_position = (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)
            positional = [
                q.name for q in parameters.values() if q.kind in by_position
            ]
        except (TypeError, ValueError):
            names, positional = [], []
        return {
            "ok": True,
            "projections": projections,
            "rng_after": hashlib.sha256(bytes(after.tolist())).hexdigest(),
            "parameters": sum(p.numel() for p in module.parameters()),
            "forward": names,
            "positional": positional,
            # nn.Module's own: the class defines none (a "foward" typo).
            "no_forward": type(module).forward is torch.nn.Module.forward,
        }

    def drop(self, ids: list) -> dict:
        """Forget modules the grader is done with (a module holding a
        large buffer, kept for every call of a sweep, ran out of the
        child's memory: an expert's audit)."""
        for id in ids:
            self.modules.pop(id, None)
        return {"ok": True}

    def set(self, id: int, weights: dict) -> dict:
        module = self.modules[id]
        with torch.no_grad():
            for name, value in weights.items():
                getattr(module, name).weight.copy_(value)
        return {"ok": True}

    def _inputs(self, args: list, kwargs: dict, grads) -> tuple:
        """The arguments forward gets (positional, keyword), and with
        ``grads`` the leaf of each input (by name) to read its gradient
        from.

        Each tensor is copied into the tensor the last call of that
        place (position or keyword) and shape had: a forward that keys a
        cache on ``data_ptr()`` then gets a stale answer on every new
        input, not only when the allocator happens to reuse an address
        (an expert's module passed 7 of 7 or not by the grader's order of
        calls; another cached its mask's bias so, and the masks came by
        keyword). One tensor passed as several arguments stays one
        tensor (self-attention: its gradient is what the uses add up to).
        A leaf is passed as a copy in the graph: changed in place, a leaf
        raises.
        """
        leaves, made = {}, []  # made: (argument, passed, leaf)

        def passed(place, arg):
            if not torch.is_tensor(arg):
                return arg
            found = next((m for m in made if m[0] is arg), None)
            if found is None:
                key = (place, tuple(arg.shape), arg.dtype)
                if key not in self.buffers:
                    self.buffers[key] = torch.empty_like(arg)
                # Written through .data, which leaves the tensor's
                # _version as it was: a cache keyed on (id, _version) of
                # the key passed, where a new input's tensor comes back
                # with a freed one's id and version 0 (round 10).
                copy = self.buffers[key]
                copy.data.copy_(arg)
                leaf = None
                if grads and copy.is_floating_point():
                    leaf = copy.detach().requires_grad_()
                    copy = leaf.clone()
                found = (arg, copy, leaf)
                made.append(found)
            if found[2] is not None and place in range(len(ARGUMENTS)):
                leaves[ARGUMENTS[place]] = found[2]
            return found[1]

        out = [passed(place, arg) for place, arg in enumerate(args)]
        named = {name: passed(name, arg) for name, arg in kwargs.items()}
        return out, named, leaves

    def call(
        self, id, args, kwargs, train=False, grads=None, grad_on=False,
        held=False,
    ) -> dict:  # fmt: skip
        """One forward; with ``grads`` one backward pass too. Without,
        under ``no_grad``, unless ``grad_on`` (model.eval() alone leaves
        gradients on). ``held``: the reply says what the module holds
        after it (:func:`_held`)."""
        module = self.modules[id]
        args, kwargs, leaves = self._inputs(args, kwargs, grads)
        # Only a change of mode, as a caller's model.eval() makes it once:
        # a fused copy of W_Q, W_K, W_V made by an overridden train(False)
        # was made again before every call, and passed though it went
        # stale when new weights came after eval() (round 10).
        if module.training != train:
            module.train(train)
        for name in PROJECTIONS:
            getattr(module, name).weight.grad = None
        grad_on = bool(grads or grad_on)
        context = torch.enable_grad() if grad_on else torch.no_grad()
        given = {**dict(zip(ARGUMENTS, args, strict=False)), **kwargs}
        kept = {k: t.clone() for k, t in given.items() if torch.is_tensor(t)}
        before = {n: _weight(module, n) for n in PROJECTIONS}
        state = set(module.state_dict())
        collections = _collections(module) if grads else {}
        # In eval mode nothing random runs: a torch.manual_seed(0) in
        # forward reset every caller's random numbers (round 10).
        rng = None if train else torch.get_rng_state()
        calls = _CALLS[0]
        with context:
            result = module(*args, **kwargs)
            calls = _CALLS[0] - calls
            # Switched by a bare torch.set_grad_enabled(False) in forward:
            # every later computation of the caller's loses its graph.
            grad_mode = torch.is_grad_enabled()
        items = _items(result)
        changed = [k for k, t in kept.items() if not torch.equal(t, given[k])]
        # A forward that rescales a weight (to fold a scale in) gave each
        # call different numbers: blamed on randomness in eval mode.
        moved = [
            n
            for n, w in before.items()
            if w is not None and not _same(w, _weight(module, n))
        ]
        reply = {"ok": True, "items": items, "changed": changed}
        reply["calls"] = calls
        if moved:
            reply["moved"] = moved
        if rng is not None and not torch.equal(rng, torch.get_rng_state()):
            reply["rng"] = True
        if grad_mode != grad_on:
            reply["grad_mode"] = "on" if grad_mode else "off"
        # A buffer or parameter registered in forward: the module's
        # state_dict then depends on whether it was called (a trained
        # model's checkpoint did not load into a fresh one).
        if registered := sorted(set(module.state_dict()) - state):
            reply["registered"] = registered
        if grads and (
            kept := _grown_with_graphs(collections, _collections(module))
        ):
            reply["kept_graph"] = kept
        if held:
            reply["held"] = _held(module)
        # What an earlier call returned, as the caller holds it: a forward
        # that fills a buffer kept on self returned the same tensor each
        # call, and each call rewrote what the caller had been given.
        overwritten = [
            name
            for name, item, copy in self.returned
            if not _same(copy, item.detach())
        ]
        if overwritten:
            reply["overwritten"] = overwritten
        if isinstance(result, tuple | list) and len(result) == 2:
            named = zip(("output", "weights"), result, strict=True)
            self.returned = [
                (name, item, item.detach().clone())
                for name, item in named
                if torch.is_tensor(item)
            ]
        if grads and isinstance(items, list) and len(items) == 2:
            out, weights = result
            try:
                loss = (out * grads[0]).sum() + (weights * grads[1]).sum()
                loss.backward()
            except Exception as error:  # noqa: BLE001 - reported, located
                return {**reply, "backward": _error(error, self.path)}
            reply["grads"] = {
                name: _plain(getattr(module, name).weight.grad)
                for name in PROJECTIONS
            } | {name: _plain(leaf.grad) for name, leaf in leaves.items()}
        return reply

    def elsewhere(self, id, args, kwargs, dtype=None) -> dict:
        """A copy of the module called on the ``meta`` device, as on a GPU:
        a tensor forward makes on the CPU (a mask without ``device=``)
        then meets the others on two devices, and raises. With a
        ``dtype`` (a name: "float64"), on the CPU in that dtype instead,
        as after ``model.double()``: a dtype typed into forward raises."""
        device = "meta" if dtype is None else "cpu"
        dtype = None if dtype is None else getattr(torch, dtype)
        module = copy.deepcopy(self.modules[id]).to(device, dtype)
        args = [a.to(device, dtype) for a in args]
        kwargs = {
            k: v.to(device) if torch.is_tensor(v) else v
            for k, v in kwargs.items()
        }
        with torch.no_grad():
            module(*args, **kwargs)
        return {"ok": True}

    # -- the loop ------------------------------------------------------

    def serve(self, requests: int, replies: int) -> None:
        while True:
            request = receive(requests)
            if request is None:
                return
            op = request.pop("op")
            _arm_watchdog(self.timeout, self.dump)
            seen: set[str] = set()
            torch_mha: set[str] = set()
            hidden: set[str] = set()
            opaque: set[str] = set()
            try:
                with _watching(seen, self.path, torch_mha, hidden, opaque):
                    reply = getattr(self, op)(**request)
                _no_timer_left()
                if seen:
                    reply["reference"] = sorted(seen)
                if torch_mha:
                    reply["torch_mha"] = sorted(torch_mha)
                if hidden:
                    reply["hidden"] = sorted(hidden)
                if opaque:
                    reply["opaque"] = _named(opaque)
            except BaseException as error:  # noqa: BLE001 - the student's
                reply = {"ok": False, **_error(error, self.path)}
                # (PyTorch's layer that raised is named all the same: a
                # call it refused told only its error.)
                if torch_mha:
                    reply["torch_mha"] = sorted(torch_mha)
            finally:
                faulthandler.cancel_dump_traceback_later()
            send(replies, reply)


#: nn.Module's own attributes (its parameter, buffer and hook dicts):
#: not the student's; buffers are looked at by name.
_MODULE_OWN = frozenset(vars(nn.Module()))


def _collections(module: nn.Module) -> dict[str, tuple[int, set[int]]]:
    """{attribute: (tensors held, ids of those with a graph)} for each
    list, tuple or dict the module or its submodules hold. One that a
    call in train mode grew with tensors of its graph keeps every
    step's graph in memory (a list of attention maps appended to in
    forward). One that holds as many tensors as before (a dict of this
    call's k and v, replaced each call), or a tensor held directly
    (``self.attn = weights``, the Annotated Transformer's last map to
    plot), keeps one call's graph, freed by the next."""
    found = {}
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if name in _MODULE_OWN or not isinstance(
                value, list | tuple | dict
            ):
                continue
            path = f"self.{prefix}.{name}" if prefix else f"self.{name}"
            tensors = list(_tensors_in(value))
            graphs = {id(t) for t in tensors if t.grad_fn is not None}
            found[path] = (len(tensors), graphs)
    return found


def _tensors_in(value):
    """The tensors in ``value``: itself, or those in its lists, tuples
    and dicts, at any depth (the first 10,000 items looked at: the
    file's structure is bounded, not trusted)."""
    stack, seen = [value], 0
    while stack and seen < 10_000:
        item, seen = stack.pop(), seen + 1
        if torch.is_tensor(item):
            yield item
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def _held(module: nn.Module) -> dict[str, int]:
    """{attribute: numbers} of the tensors the module (and its
    submodules) holds outside its parameters: each tensor attribute or
    buffer, and each list, tuple or dict (its tensors' elements). The
    grader calls forward twice the same way: one that holds more after
    the second call keeps something of every call (attention maps
    appended, detached, for plotting: no graph, and 7 of 7 passed)."""
    found = {}
    for prefix, sub in module.named_modules():
        values = {**vars(sub), **sub._buffers}
        for name, value in values.items():
            if name in _MODULE_OWN:
                continue
            path = f"self.{prefix}.{name}" if prefix else f"self.{name}"
            if numbers := sum(t.numel() for t in _tensors_in(value)):
                found[path] = numbers
    return found


def _grown_with_graphs(before: dict, after: dict) -> list[str]:
    """The collections of :func:`_collections` a call grew with tensors
    of its graph."""
    grown = []
    for path, (count, graphs) in after.items():
        old_count, old_graphs = before.get(path, (0, set()))
        if count > old_count and graphs - old_graphs:
            grown.append(path)
    return sorted(grown)


def _weight(module, name: str) -> torch.Tensor | None:
    """A copy of ``module.<name>.weight``, or None if it has none."""
    weight = getattr(getattr(module, name, None), "weight", None)
    return weight.detach().clone() if torch.is_tensor(weight) else None


def _same(a: torch.Tensor, b: torch.Tensor | None) -> bool:
    """Equal, NaN where NaN (a result may hold NaN: a fully masked row)."""
    return (
        b is not None
        and a.shape == b.shape
        and a.dtype == b.dtype
        and bool(((a == b) | (a.isnan() & b.isnan())).all())
    )


def _arm_watchdog(timeout: float, file) -> None:
    """Dump the stack and exit after ``timeout`` s (faulthandler's
    watchdog: a thread per call). A file that started threads up to the
    process limit left no room for it, and the child died between two
    requests ("unable to start watchdog thread"), a FAIL blaming an
    exit() the file never called: while the file's threads end, try
    again for up to a second; then go on without it (the grader keeps
    each request's time limit itself, with or without a stack). Given
    up once, it is tried once a request: a fork bomb that kept the
    process table full made each request wait its second (7 of 7 in
    3 min 37 s: an attacker's audit)."""
    deadline = time.monotonic() + (0.0 if _NO_ROOM else 1.0)
    while True:
        try:
            _DUMP_LATER(timeout, exit=True, file=file)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                _NO_ROOM.append(timeout)
                return
            time.sleep(0.01)


#: Set once the watchdog was given up (:func:`_arm_watchdog`).
_NO_ROOM: list[float] = []


def _items(result) -> list | str:
    """What forward returned, as data: a list of tensors (or of
    descriptions of what is not a tensor), or a description."""
    if not isinstance(result, tuple | list):
        return _describe(result)
    return [
        _plain(item) if isinstance(item, torch.Tensor) else _describe(item)
        for item in result
    ]


def _plain(tensor):
    """A detached copy, as a plain tensor (no subclass, no graph)."""
    if tensor is None:
        return None
    return tensor.detach().clone().as_subclass(torch.Tensor)


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"one tensor of shape {tuple(value.shape)}"
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"  # an int, a list
    if isinstance(value, tuple | list):
        return f"{article} {name} of {len(value)} items"
    if value is None:
        return "None"
    return f"{article} {name}"


#: Of what an exception said: what is sent (a 50 MB message was a reply
#: too large to read, reported as a broken one: an attacker's audit).
SAID = 1000


def said(text: str) -> str:
    """``text`` in :data:`SAID` characters, saying how long it was if cut
    (within them: the grader cuts again what the child sent, and a cut
    text stays as it is)."""
    if len(text) <= SAID:
        return text
    told = f"... ({len(text):,} characters)"
    return text[: SAID - len(told)] + told


def _error(error: BaseException, path: Path) -> dict:
    """The exception as data, with the student's innermost line. A
    message that cannot be read (its class's ``__str__`` raised: a typo
    in a student's own ValueError) is named as such: the child died of
    it, reported as a call of exit()."""
    try:
        message = str(error)
    except Exception as inner:  # noqa: BLE001 - the student's __str__
        message = f"(its message: str() raised {type(inner).__name__})"
    if isinstance(error, SyntaxError) and error.filename:
        where = f"{Path(error.filename).name}:{error.lineno}"
    else:
        frames = traceback.extract_tb(error.__traceback__)
        mine = [f for f in frames if Path(f.filename).resolve() == path]
        where = (
            f"{path.name}:{mine[-1].lineno} in {mine[-1].name}"
            if mine
            else "no line of your file on the stack"
        )
    return {
        "error": said(f"{type(error).__name__}: {message}"),
        # Its class and every base: a ValueError of the student's own
        # subclass is still a ValueError.
        "types": [c.__name__ for c in type(error).__mro__],
        "where": where,
    }


def main(argv: list[str]) -> None:
    """``PATH TIMEOUT REQUESTS_FD REPLIES_FD``; the first reply is the
    import's."""
    path = Path(argv[0]).resolve()
    timeout = float(argv[1])
    requests, replies = int(argv[2]), int(argv[3])
    os.set_inheritable(replies, False)
    os.set_inheritable(requests, False)
    # The student's prints (stdout) go where their errors go: stderr.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    torch.set_num_threads(1)  # tiny tensors; the machine may be shared
    runner = _Runner(path, timeout, sys.__stderr__)
    # Every thread the file starts, on import too, sets the hook first
    # thing. Not through threading.setprofile as well: a Thread's
    # bootstrap then called sys.setprofile under the hook, which read as
    # the file turning it off (a thread pool over the heads failed 7 of
    # 7: an expert's audit).
    _hook_thread_starts()
    _guard_timers()
    _DUMP_LATER(timeout, exit=True, file=sys.__stderr__)
    opaque: set[str] = set()  # a graph made on import is used later
    try:
        with _watching(set(), path, opaque=opaque):
            reply = runner.load()
        _no_timer_left()
        if opaque:
            reply["opaque"] = _named(opaque)
    except BaseException as error:  # noqa: BLE001 - the student's import
        reply = {"ok": False, **_error(error, path)}
    finally:
        faulthandler.cancel_dump_traceback_later()
    send(replies, reply)
    if reply.get("class"):
        runner.serve(requests, replies)


if __name__ == "__main__":
    main(sys.argv[1:])
