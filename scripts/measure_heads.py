"""Time one MultiHeadAttention forward for several h; write what was seen.

Slide 17 says the FLOPs of the matrix multiplies do not depend on h but
the wall-clock time may. Times vary from machine to machine and run to
run, so no snippet prints them (the build compares snippet output
exactly). What carries from one machine to another is the *ratio* to
h = 1, so the slide shows ratios first; the runs of every h are
interleaved (round after round, each h once), so a load that comes and
goes weighs on every h alike, and the load average before and after is
printed with the table. This script measures once and writes

* ``snippets/measured/heads_timing.json``: the machine, the settings and the
  median time of each h;
* ``snippets/measured/heads_timing.md``: the same as a small table, which slide
  17 includes, labelled as measured and not checked by the build.

Run it from the repository root: ``.venv/bin/python
scripts/measure_heads.py`` (``--device cuda`` on a GPU machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from mha_ref import MultiHeadAttention

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "snippets" / "measured"
HEADS = (1, 8, 64, 512)


def machine(device: str) -> str:
    """A one-line description of where the times were taken."""
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return f"{name}, {torch.get_num_threads()} threads"


def interleaved_ms(modules: dict, x, device: str, repeats: int) -> dict:
    """Median wall-clock milliseconds of each ``module(x, x, x)``, and the
    median of its ratio to the first module's time in the same round."""

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    times: dict = {h: [] for h in modules}
    with torch.no_grad():
        for i in range(repeats + 2):  # 2 warm-up rounds, not kept
            for h, module in modules.items():
                sync()
                start = time.perf_counter()
                module(x, x, x)
                sync()
                if i >= 2:
                    times[h].append((time.perf_counter() - start) * 1e3)
    first = next(iter(modules))
    return {
        h: {
            "median_ms": statistics.median(ts),
            "ratio": statistics.median(
                t / t0 for t, t0 in zip(ts, times[first], strict=True)
            ),
        }
        for h, ts in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--seq", type=int, default=128, help="T")
    parser.add_argument("--batch", type=int, default=4, help="B")
    parser.add_argument("--repeats", type=int, default=31)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.seq, args.d_model, device=args.device)
    modules = {
        h: MultiHeadAttention(args.d_model, h).to(args.device) for h in HEADS
    }
    load_before = os.getloadavg()[0]
    seen = interleaved_ms(modules, x, args.device, args.repeats)
    rows = [{"h": h, "d_k": args.d_model // h, **seen[h]} for h in HEADS]
    record = {
        "machine": machine(args.device),
        "device": args.device,
        # The release and the build apart ("2.13.0", "cpu"): the
        # local tag is a fact about this wheel, not a version to pin.
        "pytorch": torch.__version__.split("+")[0],
        "pytorch_build": torch.__version__.partition("+")[2] or "default",
        "d_model": args.d_model,
        "T": args.seq,
        "B": args.batch,
        "repeats": args.repeats,
        "date": time.strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "rows": rows,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "heads_timing.json").write_text(json.dumps(record, indent=2) + "\n")
    (OUT / "heads_timing.md").write_text(markdown(record))
    print(markdown(record), end="")


def markdown(record: dict) -> str:
    """The table slide 17 includes, with where and how it was measured."""
    before, after = record["load_average"]
    lines = [
        "| h | d_k | time ÷ time at h = 1 | forward time (ms) |",
        "|---|---|---|---|",
    ]
    for row in record["rows"]:
        lines.append(
            f"| {row['h']} | {row['d_k']} | {row['ratio']:.2f} "
            f"| {row['median_ms']:.1f} |"
        )
    # How it was measured is for a reader checking it: reading-only (a
    # three-line caption on a projector: an instructor's rehearsal).
    lines += [
        "",
        '<div class="reading" markdown>',
        "",
        f"*Measured on {record['machine']} ({record['device']}, PyTorch "
        f"{record['pytorch']}, {record['pytorch_build']} build, "
        f"{record['date']}), B = {record['B']}, T = {record['T']}, "
        f"d_model = {record['d_model']}; medians of {record['repeats']} "
        f"interleaved rounds (ratios: per-round medians); load {before} "
        f"before, {after} after on {record['cores']} cores: compare the "
        "ratios, not the ms. By the course repository's `make "
        "measure-heads`; not checked by the build.*",
        "",
        "</div>",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
