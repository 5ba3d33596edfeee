#!/usr/bin/env python3
"""torch.compile(backend="kiln") on a torch 2.x machine (run by hand; needs
torch._dynamo, so it is not part of the Bazel tests, which run torch 1.13).

    python3 python/tests/torch_compile_check.py \\
        --realmodels ../shared/corpus/gen/realmodels.py --devices cpu,cuda

with the kiln wheel installed, or with PYTHONPATH=python and
KILN_C_LIBRARY=bazel-bin/python/libkiln_c.so. One JSON line per check:

  inference: each model of realmodels.model_list() (the 9 full-size models;
    weights torchvision leaves at zero get random values), eager vs
    torch.compile(backend="kiln"): relative L2 error against eager in full
    float32 (TF32 off; pass at most 1e-3) and against eager's default (TF32
    convolutions on CUDA), kiln's graphs that fell back to eager (with the
    op), the first call's time, and the median times of eager, kiln and
    torch.compile's default backend (and its first call).
  training: an MLP and a small CNN, 20 SGD steps with the backward compiled
    by kiln, the largest loss difference from eager (pass at most 1e-4).

Exit status 1 when a check fails.
"""
import argparse
import copy
import importlib.util
import json
import os
import statistics
import sys
import time
import warnings

import torch

import kiln  # registers the backend
import kiln.fx_compile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training  # noqa: E402 (next to this file)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def timed(fn, device, n=10, warm=2):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return round(statistics.median(ts) * 1e3, 3)


def first_tensor(y):
    if isinstance(y, torch.Tensor):
        return y
    if hasattr(y, "last_hidden_state"):
        return y.last_hidden_state
    return y[0]


def rel_l2(got, expected):
    got, expected = got.double().cpu(), expected.double().cpu()
    return (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected).clamp_min(1e-30)).item()


def fallbacks_of(caught):
    return [str(w.message)[:300] for w in caught if issubclass(w.category, kiln.fx_compile.KilnFallbackWarning)]


def randomize_zero_weights(m):
    """torchvision initializes some weights to zero (vit_b_16's head), which
    makes the output 0 whatever the rest computes and the comparison
    meaningless: those get small random values."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return m


def eager_fp32(m, x):
    """Eager's output in full float32: on CUDA, torch's default runs
    convolutions on TF32 tensor cores (as kiln's default does), which
    differ from each other by more than float32 rounding."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return first_tensor(m(*x))
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def check_inference(realmodels, devices, compare_default, models=()):
    ok = True
    for name, make, inp in realmodels.model_list():
        if models and name not in models:
            continue
        for device in devices:
            try:
                torch.manual_seed(0)
                m = randomize_zero_weights(make().eval()).to(device)
                x = [t.to(device) for t in inp()]
                with torch.no_grad():
                    expected = first_tensor(m(*x))
                    reference = eager_fp32(m, x) if device == "cuda" else expected
                    torch._dynamo.reset()
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        c = torch.compile(m, backend="kiln", dynamic=False)
                        t0 = time.time()
                        got = first_tensor(c(*x))
                        compile_s = round(time.time() - t0, 1)
                    err = rel_l2(got, reference)
                    r = dict(check="inference", model=name, device=device, rel_l2=err, passed=err <= 1e-3,
                             rel_l2_vs_default_eager=rel_l2(got, expected),
                             eager_default_vs_fp32=rel_l2(expected, reference),
                             compile_s=compile_s, fallbacks=fallbacks_of(caught),
                             eager_ms=timed(lambda: m(*x), device), kiln_ms=timed(lambda: c(*x), device))
                    if compare_default:
                        # torch's own backend failing is reported, not kiln's failure.
                        try:
                            torch._dynamo.reset()
                            d = torch.compile(m, dynamic=False)
                            t0 = time.time()
                            d(*x)
                            r["torch_compile_default_first_s"] = round(time.time() - t0, 1)
                            r["torch_compile_default_ms"] = timed(lambda: d(*x), device)
                        except Exception as e:  # noqa
                            r["torch_compile_default_error"] = repr(e)[:300]
                ok &= r["passed"]
                emit(**r)
            except Exception as e:  # noqa: one model's failure is reported, the rest still run
                ok = False
                emit(check="inference", model=name, device=device, passed=False, error=repr(e)[:500])
    return ok


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 32, 3, stride=2)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.relu(self.c2(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def check_training(devices):
    ok = True
    for name, make, shape in [("mlp", MLP, (32, 64)), ("small_cnn", SmallCNN, (8, 3, 32, 32))]:
        for device in devices:
            try:
                torch.manual_seed(0)
                m = make().to(device)
                ref = copy.deepcopy(m)
                x = torch.randn(*shape, device=device)
                target = torch.randn(shape[0], 10, device=device)
                torch._dynamo.reset()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    c = torch.compile(m, backend="kiln", dynamic=False)
                    losses = training.sgd_losses(c, m, ref, x, target, steps=20)
                    worst = max(abs(a - b) for a, b in losses)
                r = dict(check="training", model=name, device=device, steps=20, max_loss_diff=worst,
                         passed=worst <= 1e-4, fallbacks=fallbacks_of(caught))
                ok &= r["passed"]
                emit(**r)
            except Exception as e:  # noqa
                ok = False
                emit(check="training", model=name, device=device, passed=False, error=repr(e)[:500])
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--realmodels", help="path of realmodels.py (its model_list()); omit to skip inference")
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--no-default-backend", action="store_true", help="skip torch.compile's default backend times")
    ap.add_argument("--models", default="", help="comma list: only these of model_list() (default: all)")
    ap.add_argument("--no-training", action="store_true", help="skip the training checks")
    args = ap.parse_args()
    if not hasattr(torch, "compile"):
        print("torch %s has no torch.compile (torch 2.x needed)" % torch.__version__, file=sys.stderr)
        return 2
    devices = [d for d in args.devices.split(",") if d != "cuda" or torch.cuda.is_available()]
    emit(check="env", torch=torch.__version__, kiln=kiln.version(), devices=devices,
         library=kiln._capi.library_path())
    ok = True if args.no_training else check_training(devices)
    if args.realmodels:
        spec = importlib.util.spec_from_file_location("realmodels", args.realmodels)
        realmodels = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(realmodels)
        models = [m for m in args.models.split(",") if m]
        ok &= check_inference(realmodels, devices, not args.no_default_backend, models)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
