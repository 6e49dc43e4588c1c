"""Time one MultiHeadAttention forward for several h; write what was seen.

Slide 17 says the FLOPs of the matrix multiplies do not depend on h but
the wall-clock time may. Times vary from machine to machine and run to
run, so no snippet prints them (the build compares snippet output
exactly); this script measures once and writes

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


def median_ms(module, x, device: str, repeats: int) -> float:
    """Median wall-clock milliseconds of ``module(x, x, x)``."""

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    times = []
    with torch.no_grad():
        for i in range(repeats + 3):  # 3 warm-up runs, not kept
            sync()
            start = time.perf_counter()
            module(x, x, x)
            sync()
            if i >= 3:
                times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--seq", type=int, default=128, help="T")
    parser.add_argument("--batch", type=int, default=4, help="B")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.seq, args.d_model, device=args.device)
    rows = []
    for h in HEADS:
        module = MultiHeadAttention(args.d_model, h).to(args.device)
        ms = median_ms(module, x, args.device, args.repeats)
        rows.append({"h": h, "d_k": args.d_model // h, "median_ms": ms})
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
        "load_average": round(os.getloadavg()[0], 1),
        "rows": rows,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "heads_timing.json").write_text(json.dumps(record, indent=2) + "\n")
    (OUT / "heads_timing.md").write_text(markdown(record))
    print(markdown(record), end="")


def markdown(record: dict) -> str:
    """The table slide 17 includes, with where and how it was measured."""
    lines = [
        f"*Measured on {record['machine']} ({record['device']}, PyTorch "
        f"{record['pytorch']}, {record['pytorch_build']} build, "
        f"{record['date']}), B = {record['B']}, "
        f"T = {record['T']}, d_model = {record['d_model']}, median of "
        f"{record['repeats']} runs, load average {record['load_average']}, "
        "by `scripts/measure_heads.py`. "
        "Not checked by the build: times vary by machine and run.*",
        "",
        "| h | d_k | forward time (ms) |",
        "|---|---|---|",
    ]
    for row in record["rows"]:
        lines.append(f"| {row['h']} | {row['d_k']} | {row['median_ms']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
