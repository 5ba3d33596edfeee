"""Real models: kiln's compiled CPU path against PyTorch eager, on this machine.

  /usr/bin/python3 benchmarks/real_models.py --kiln_bench BIN [--models resnet50,...]
      [--threads 2] [--iterations 10] [--dir DIR] [--keep]

Exports torchvision's resnet50, mobilenet_v3_large, efficientnet_b0,
convnext_tiny, vit_b_16 and swin_t with the installed torch (Debian's 1.13:
opset 17, the TorchScript-based exporter), random weights (seeded), batch 1,
into DIR (default: a fresh temporary directory) in ONNX's backend-test layout
(model.onnx, test_data_set_0/input_0.pb and PyTorch's output_0.pb). Then, per
model and on the same input:

  * PyTorch eager with --threads threads: median of --iterations calls;
  * kiln through BIN (//benchmarks:real_models_bench, the driver path `kiln run
    --backend compiled` takes) with --threads threads: cold compile on an
    empty cache, warm compile on the same cache, the median call, the planned
    peak and the resident memory, and the error against PyTorch's output.

Eager and kiln alternate over --rounds rounds (so both see the same load on
a shared machine); each figure is the median over rounds of per-round
medians, the cold compile is round 0's (empty cache), the warm one round 0's
second compile. Prints one JSON line per measurement and a table with the
speed-up (eager / kiln). --off VAR adds, each round, a kiln run with the
environment switch VAR=0 (e.g. KILN_CPU_WINOGRAD), the two kiln runs in
alternating order, for before/after figures on the same load ("off_ms").
Build BIN first:
  ./bazelw build -c opt //benchmarks:real_models_bench
  BIN=$(./bazelw info -c opt bazel-bin)/benchmarks/real_models_bench
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision.models as tvm

MODELS = {
    "resnet50": tvm.resnet50,
    "mobilenet_v3_large": tvm.mobilenet_v3_large,
    "efficientnet_b0": tvm.efficientnet_b0,
    "convnext_tiny": tvm.convnext_tiny,
    "vit_b_16": tvm.vit_b_16,
    "swin_t": tvm.swin_t,
}
# The speed-up over eager each model must reach (issue 14).
GOALS = {"resnet50": 2.5, "mobilenet_v3_large": 2.5, "efficientnet_b0": 2.5,
         "convnext_tiny": 1.2, "vit_b_16": 1.2, "swin_t": 1.2}


def emit(**kw):
    print(json.dumps(kw), flush=True)


def save_tensor(path, name, t):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t.detach().numpy(), name).SerializeToString())


def make(name):
    """The model with random weights (seeded) and its input."""
    torch.manual_seed(0)
    m = MODELS[name]().eval()
    # torchvision zero-initializes some matrices (vit_b_16's head): their
    # outputs would be all zeros and check nothing.
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    x = torch.randn(1, 3, 224, 224)
    return m, x


def export(name, root):
    """Exports `name` to root/name; returns (module, input)."""
    m, x = make(name)
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with torch.no_grad():
        y = m(x)
    # Outside no_grad: under it nn.MultiheadAttention takes its fused fast
    # path (aten::_native_multi_head_attention), which opset 17 cannot express.
    torch.onnx.export(m, (x,), os.path.join(d, "model.onnx"), opset_version=17,
                      input_names=["input_0"], output_names=["output_0"])
    save_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"), "input_0", x)
    save_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"), "output_0", y)
    return m, x


def eager_ms(m, x, iterations, warmup=2):
    """(median, min) of `iterations` calls, in ms."""
    with torch.no_grad():
        for _ in range(warmup):
            m(x)
        times = []
        for _ in range(iterations):
            t = time.perf_counter()
            m(x)
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def run_kiln(bin_path, d, threads, iterations, cache_dir, off_var=""):
    cmd = [bin_path, "--model", os.path.join(d, "model.onnx"), "--inputs", os.path.join(d, "test_data_set_0"),
           "--threads", str(threads), "--iterations", str(iterations), "--cache_dir", cache_dir]
    env = dict(os.environ)
    if off_var:
        env[off_var] = "0"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {"error": (p.stderr or p.stdout).strip()[-600:], "rc": p.returncode}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln_bench", required=True, help="path of the real_models_bench binary")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="eager/kiln rounds, alternating (medians over rounds)")
    ap.add_argument("--dir", default="", help="export here (kept) instead of a temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--reuse", action="store_true", help="with --dir: reuse models already exported there")
    ap.add_argument("--off", default="", help="also run kiln with this environment variable set to 0, each round")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    root = args.dir or tempfile.mkdtemp(prefix="kiln_real_models_")
    emit(step="env", torch=torch.__version__, threads=torch.get_num_threads(), cpus=os.cpu_count(), dir=root)
    rows = []
    try:
        for name in args.models.split(","):
            if name not in MODELS:
                sys.exit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
            d = os.path.join(root, name)
            t0 = time.time()
            if args.reuse and os.path.exists(os.path.join(d, "model.onnx")):
                m, x = make(name)
            else:
                m, x = export(name, root)
            emit(step="export", model=name, s=round(time.time() - t0, 1))
            # Rounds alternate eager and kiln, so both see the same load on
            # a shared machine; the cache persists across rounds (round 0
            # compiles cold).
            cache = tempfile.mkdtemp(prefix="kiln_cache_")
            eager, eager_min, kiln, kiln_min, off, off_min = [], [], [], [], [], []
            k = {}
            try:
                for r in range(args.rounds):
                    e_med, e_min = eager_ms(m, x, args.iterations)
                    eager.append(e_med)
                    eager_min.append(e_min)
                    ko = {}
                    if args.off and r % 2 == 1:
                        ko = run_kiln(args.kiln_bench, d, args.threads, args.iterations, cache, args.off)
                    kr = run_kiln(args.kiln_bench, d, args.threads, args.iterations, cache)
                    if args.off and r % 2 == 0:
                        ko = run_kiln(args.kiln_bench, d, args.threads, args.iterations, cache, args.off)
                    if "median_ms" not in kr:
                        k = kr
                        break
                    extra = {}
                    if "median_ms" in ko:
                        off.append(ko["median_ms"])
                        off_min.append(ko["min_ms"])
                        extra = dict(off_ms=ko["median_ms"], off_min_ms=ko["min_ms"], off_rel_l2=ko["rel_l2"])
                    emit(step="round", model=name, round=r, eager_ms=round(e_med, 2), kiln_ms=kr["median_ms"],
                         ratio=round(e_med / kr["median_ms"], 2), eager_min_ms=round(e_min, 2),
                         kiln_min_ms=kr["min_ms"], **extra)
                    if r == 0:
                        k = kr
                    kiln.append(kr["median_ms"])
                    kiln_min.append(kr["min_ms"])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            k.update(model=name, eager_ms=round(statistics.median(eager), 2))
            if kiln:
                k["median_ms"] = round(statistics.median(kiln), 3)
                k["speedup"] = round(k["eager_ms"] / k["median_ms"], 2)
                # Best calls of each side: what the machine can do when the
                # other jobs of a shared host leave it alone.
                k["eager_min_ms"] = round(min(eager_min), 2)
                k["min_ms"] = round(min(kiln_min), 3)
                k["speedup_min"] = round(k["eager_min_ms"] / k["min_ms"], 2)
            if off:
                k["off_ms"] = round(statistics.median(off), 3)
                k["off_min_ms"] = round(min(off_min), 3)
                k["off_speedup"] = round(k["eager_ms"] / k["off_ms"], 2)
                k["off_speedup_min"] = round(k["eager_min_ms"] / k["off_min_ms"], 2)
            emit(step="model", **k)
            rows.append(k)
    finally:
        if not args.dir and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(f"| model | eager {args.threads}T ms | kiln ms | speed-up (goal) | best: eager / kiln ms, speed-up "
          "| cold compile s | warm compile ms | rel L2 vs torch | max abs | planned peak MB | RSS MB "
          "| kernels/externs/islands |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "median_ms" not in r:
            print(f"| {r['model']} | {r['eager_ms']} | error: {r.get('error', '?')[:200]} |")
            continue
        goal = GOALS[r["model"]]
        ok = "met" if r["speedup"] >= goal else "MISSED"
        print(f"| {r['model']} | {r['eager_ms']} | {r['median_ms']} | {r['speedup']}x ({goal}x {ok}) "
              f"| {r['eager_min_ms']} / {r['min_ms']}, {r['speedup_min']}x "
              f"| {r['cold_compile_s']} | {r['warm_compile_ms']} | {r['rel_l2']:.2e} | {r['max_abs']:.2e} "
              f"| {r['planned_peak_mb']} | {r['rss_mb']} | {r['kernels']}/{r['externs']}/{r['islands']} |")


if __name__ == "__main__":
    main()
