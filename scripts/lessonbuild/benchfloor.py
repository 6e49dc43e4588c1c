"""The least work a cold check of a deck can do: the bench's floor.

``python benchfloor.py ROOT TABLES PRELOAD RUNS SNIPPET...`` (PRELOAD:
the modules, comma-separated) does, in one interpreter, only what a
cold check cannot avoid: import torch and the modules the snippets use
(the collector off, as the fork servers do), then run each snippet
RUNS times, each run in a fork with one torch thread, RUNS forks at a
time. No cache, sandbox, output capture, exit-handler care, judge or
CLI.

The bench times it two ways: one interpreter per hash seed side by
side, one run each, as the engine runs its two servers; and one
interpreter doing both runs of each snippet, two at a time (what a
single hash seed would cost). The engine's cold time over the first is
what the engine itself costs; either one over ``import torch`` is what
the deck's own computation costs: a target below both cannot be met by
any engine on this machine.

A plain script with the standard library only until it imports, like
engine/server.py.
"""

import gc
import importlib
import os
import runpy
import sys


def main():
    root, tables, preload, runs, *snippets = sys.argv[1:]
    runs = int(runs)
    gc.disable()
    for name in ["torch", *filter(None, preload.split(","))]:
        importlib.import_module(name)
    torch = sys.modules["torch"]
    torch.set_num_threads(1)  # before any fork: no thread pool yet
    gc.freeze()
    os.chdir(root)
    # Figures render only for a run that publishes (mha_ref.figures).
    os.environ["MHA_REF_TABLES_FILE"] = tables
    failed, running = 0, 0
    for path in [p for p in snippets for _ in range(runs)]:
        if running == runs:
            failed += os.waitstatus_to_exitcode(os.wait()[1]) != 0
            running -= 1
        if os.fork() == 0:
            _child(os.path.join(root, path))
        running += 1
    for _ in range(running):
        failed += os.waitstatus_to_exitcode(os.wait()[1]) != 0
    sys.exit(1 if failed else 0)


def _child(path):
    code = 1
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        gc.enable()
        sys.argv, sys.path[0] = [path], os.path.dirname(path)
        sys.modules["torch"].default_generator.seed()
        runpy.run_path(path, run_name="__main__")
        sys.stdout.flush()
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code in (None, 0) else 1
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
