#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the shapes of kiln's CUDA benchmarks.

Runs on the GPU machine in the same `run` call as kiln's
//benchmarks:cuda_bench (benchmarks/cuda_realmodels.sh ops), so the figures sit
side by side (issue 6):

  pointwise chain K=4/8/16 on 64M float32 (x + 0.1, x * 0.9 alternating),
  a device-to-device copy of the same size, sum(-1) over 8192^2,
  softmax(-1) over 8192^2, layer_norm over 32768x1024, gelu(x + bias) over
  8192^2, and mobilenet_v2 (torchvision, random weights, eval) at batch 1
  and 32.

Each op is timed with CUDA events (median of --reps runs after warm-up, the
same protocol as cuda_bench); compile latency is the wall time of the
first call of a freshly torch.compile'd function (after
torch._dynamo.reset()), which includes tracing, Inductor and Triton's
compiles. Prints one line per benchmark and a summary table; --json writes
the numbers too.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def time_ms(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def chain(k):
    def f(x):
        for i in range(k):
            x = x + 0.1 if i % 2 == 0 else x * 0.9
        return x
    return f


def compile_latency(fn, args):
    torch._dynamo.reset()
    compiled = torch.compile(fn)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        compiled(*args)
    torch.cuda.synchronize()
    return compiled, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="")
    ap.add_argument("--skip_models", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; "
          f"matmul tf32={torch.backends.cuda.matmul.allow_tf32} cudnn tf32={torch.backends.cudnn.allow_tf32}",
          flush=True)
    results = []

    n64m = 64 << 20
    x = torch.randn(n64m, device=dev)
    y = torch.empty_like(x)
    copy_ms = time_ms(lambda: y.copy_(x), args.reps)
    copy_gbs = 8 * n64m / (copy_ms * 1e-3) / 1e9
    print(f"TORCH {'d2d_copy_64M':26s} {copy_ms:9.4f} ms {copy_gbs:7.0f} GB/s", flush=True)
    results.append({"name": "d2d_copy_64M", "eager_ms": copy_ms, "eager_gbs": copy_gbs})

    def bench(name, fn, inputs, nbytes):
        with torch.no_grad():
            eager = time_ms(lambda: fn(*inputs), args.reps)
            compiled, latency = compile_latency(fn, inputs)
            comp = time_ms(lambda: compiled(*inputs), args.reps)
        r = {"name": name, "eager_ms": eager, "compile_ms": comp, "compile_latency_s": latency}
        if nbytes:
            r["eager_gbs"] = nbytes / (eager * 1e-3) / 1e9
            r["compile_gbs"] = nbytes / (comp * 1e-3) / 1e9
        results.append(r)
        gb = (f" eager {r['eager_gbs']:6.0f} GB/s compiled {r['compile_gbs']:6.0f} GB/s ({100 * r['compile_gbs'] / copy_gbs:.0f}% of copy)"
              if nbytes else "")
        print(f"TORCH {name:26s} eager {eager:9.4f} ms  torch.compile {comp:9.4f} ms{gb}  compile latency {latency:.2f} s",
              flush=True)

    for k in (4, 8, 16):
        bench(f"chain_k{k}_64M", chain(k), [x], 8 * n64m)
    del x, y
    n = 8192
    sq = torch.randn(n, n, device=dev)
    bench("sum_last_8192^2", lambda t: t.sum(-1), [sq], 4 * n * n + 4 * n)
    bench("softmax_8192^2", lambda t: torch.softmax(t, -1), [sq], 8 * n * n)
    bias = torch.randn(n, device=dev)
    bench("gelu_bias_8192^2", lambda t, b: F.gelu(t + b), [sq, bias], 8 * n * n + 4 * n)
    del sq
    ln_x = torch.randn(32768, 1024, device=dev)
    ln_w = torch.randn(1024, device=dev)
    ln_b = torch.randn(1024, device=dev)
    bench("layer_norm_32768x1024", lambda t, w, b: F.layer_norm(t, (1024,), w, b, 1e-5), [ln_x, ln_w, ln_b],
          8 * 32768 * 1024)
    del ln_x
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    bench("sgemm_4096^3", lambda p, q: p @ q, [a, b], 0)
    del a, b

    if not args.skip_models:
        try:
            import torchvision
            model = torchvision.models.mobilenet_v2(weights=None).eval().to(dev)
            for batch in (1, 32):
                inp = torch.randn(batch, 3, 224, 224, device=dev)
                bench(f"mobilenet_v2_b{batch}", model, [inp], 0)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"TORCH mobilenet_v2 FAILED: {e!r}", flush=True)

    print("\n==== torch summary (ms; GB/s where memory-bound) ====")
    print(f"{'benchmark':26s} {'eager_ms':>10s} {'compile_ms':>10s} {'eager_GB/s':>10s} {'comp_GB/s':>10s} {'latency_s':>9s}")
    for r in results:
        print(f"{r['name']:26s} {r.get('eager_ms', 0):10.4f} {r.get('compile_ms', 0):10.4f} "
              f"{r.get('eager_gbs', 0):10.0f} {r.get('compile_gbs', 0):10.0f} {r.get('compile_latency_s', 0):9.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
