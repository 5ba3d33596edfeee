"""Cold and warm compile latency of `kiln run --backend compiled` (issue 14):
per model, one process on an empty KILN_CACHE_DIR (cold), then --warm more
processes on the same cache (warm: program cache hits), one call each.

  python3 benchmarks/compile_latency.py --kiln BIN --dir /tmp/rm --threads 2 \\
      --models bert_base,gpt2,vit_b_16 [--warm 3] [--cache_root /tmp/kc]

DIR/<model>/model.onnx and test_data_set_0/ (realmodels.py's layout). One
line per process: compile = times_ms import + passes + compile (what a call
waits for before running; on a hit, compile holds the cache lookup and the
device's load), the program cache's lookup, the CPU's report lines (C++
cache, packed weights) and the process's wall time (which includes the run,
and on a cold compile the entries written in the background). Then a
summary: cold, and the median and max of the warm compiles.
"""
import argparse
import os
import shutil
import statistics
import sys

from kiln_json import run_kiln_json


def one(args, model, cache):
    d = os.path.join(args.dir, model)
    cmd = [args.kiln, "run", os.path.join(d, "model.onnx"), "--inputs", os.path.join(d, "test_data_set_0"),
           "--backend", "compiled", "--iterations", "1", "--warmup", "0", "--check=false", "--json"]
    env = dict(os.environ, KILN_CACHE_DIR=cache, OMP_NUM_THREADS=str(args.threads))
    # Exit 1: the outputs differ from the exported ones beyond --atol (not
    # what this measures).
    doc, _, wall = run_kiln_json(cmd, env, 600, args.log, accept=(0, 1))
    t = doc["times_ms"]
    c = doc["compiled"]
    pc = c.get("program_cache", {})
    compile_ms = t.get("import", 0) + t.get("passes", 0) + t.get("compile", 0)
    return {"hit": pc.get("hit", False), "compile_ms": compile_ms, "import_ms": t.get("import", 0),
            "passes_ms": t.get("passes", 0), "lookup_ms": pc.get("lookup_ms", 0), "wall_ms": wall * 1e3,
            "notes": c.get("notes", [])}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kiln", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warm", type=int, default=3)
    p.add_argument("--cache_root", default="/tmp/kiln_compile_latency")
    p.add_argument("--log", default="/tmp/kiln_compile_latency.log")
    args = p.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load before: {f.read().split()[:3]}", flush=True)
    summary = []
    for model in args.models.split(","):
        cache = os.path.join(args.cache_root, model)
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache, mode=0o700)
        runs = []
        for i in range(1 + args.warm):
            try:
                r = one(args, model, cache)
            except RuntimeError as e:
                print(f"{model}: {e}", flush=True)
                break
            runs.append(r)
            kind = "hit " if r["hit"] else "cold"
            print(f"{model} {kind} compile {r['compile_ms']:8.1f} ms (import {r['import_ms']:.0f}, passes "
                  f"{r['passes_ms']:.0f}, lookup {r['lookup_ms']:.1f}) wall {r['wall_ms']:.0f} ms | "
                  f"{'; '.join(r['notes'])}", flush=True)
        if len(runs) > 1:
            warm = [r["compile_ms"] for r in runs[1:] if r["hit"]]
            summary.append((model, runs[0]["compile_ms"], statistics.median(warm) if warm else float("nan"),
                            max(warm) if warm else float("nan")))
        shutil.rmtree(cache, ignore_errors=True)
    with open("/proc/loadavg") as f:
        print(f"load after: {f.read().split()[:3]}")
    print("| model | cold ms | warm median ms | warm max ms |")
    print("|---|---|---|---|")
    for model, cold, med, mx in summary:
        print(f"| {model} | {cold:.0f} | {med:.1f} | {mx:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
