"""Analysis latency and memory per corpus model (CPU).

For each model: the child process's capture work (import of the model file, meta build, torch.export, graph
conversion; interpreter start-up, the torch import and one warm-up export excluded, as a long-lived worker would
pay them once) plus the parent's analysis (lowering, fusion, specs), and the child's peak RSS.

    python bench/analyze.py [tests/models/*.py] [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time

from tilestudio.core.analyzer import analyze_graph
from tilestudio.core.loader import capture_graph

TARGETS = {"op": 0.300, "fused": 0.300, "arch": 2.0, "big": 2.0}


def category(path: str) -> str:
    return os.path.basename(path).split("_", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = args.models or sorted(glob.glob(os.path.join(root, "tests", "models", "*.py")))
    rows = []
    print(f"{'model':44s} {'kernels':>7s} {'capture ms':>10s} {'analyze ms':>10s} {'total ms':>9s} {'peak MB':>8s}")
    for path in files:
        graph, result = capture_graph(path)
        start = time.perf_counter()
        dec = analyze_graph(graph, os.path.basename(path))
        analyze_s = time.perf_counter() - start
        work = result.timings["work_s"]
        row = {"model": os.path.basename(path), "category": category(path), "kernels": len(dec.kernels),
               "capture_s": work, "analyze_s": analyze_s, "total_s": work + analyze_s,
               "peak_rss_mb": result.peak_rss_mb}
        rows.append(row)
        print(f"{row['model']:44s} {row['kernels']:7d} {work * 1e3:10.1f} {analyze_s * 1e3:10.1f} "
              f"{row['total_s'] * 1e3:9.1f} {row['peak_rss_mb']:8.0f}", flush=True)
    print()
    print(f"{'category':10s} {'models':>6s} {'median ms':>9s} {'max ms':>8s} {'target ms':>9s} {'max peak MB':>11s}")
    ok = True
    for cat in sorted({r["category"] for r in rows}):
        sel = [r for r in rows if r["category"] == cat]
        med = statistics.median(r["total_s"] for r in sel)
        target = TARGETS.get(cat, 2.0)
        ok &= med < target
        print(f"{cat:10s} {len(sel):6d} {med * 1e3:9.1f} {max(r['total_s'] for r in sel) * 1e3:8.1f} "
              f"{target * 1e3:9.0f} {max(r['peak_rss_mb'] for r in sel):11.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
