#!/usr/bin/env python3
"""CUDA tensors through kiln without copies through the host (issue 17): a
check the lead runs by hand on the GPU machine (torch 2.x), after building
libkiln_c.so here:

    PYTHONPATH=python KILN_C_LIBRARY=/tmp/k/bin/libkiln_c.so \\
        python3 python/tests/cuda_zero_copy_check.py [--iterations 20]

For an MLP and a small CNN (torch.fx.symbolic_trace, eval mode) compiled by
kiln.compile on CUDA inputs, it checks, one JSON line per check:

  accuracy     outputs are CUDA tensors on the inputs' device, relative L2
               against eager float32 (TF32 off) at most 1e-3;
  no_host_copy torch.profiler (CUPTI sees kiln's driver-API copies too)
               records no host<->device memcpy in a steady-state call, while
               it does record them in the old copy path (inputs .cpu(),
               outputs .to(device)), which proves the profiler would see them;
  no_sync      the call returns while the stream is still busy (a long
               torch.cuda._sleep queued first): kiln queued its work on the
               stream without synchronizing;
  streams      on torch's current stream and on a non-default torch.cuda.Stream:
               the input is written on that stream after a long sleep and the
               output read on it right after the call; a kiln that ran on
               another stream would read the input before it is written;
  lifetime     an output stays valid after its kiln model is freed (and
               other allocations);
  timing       ms per call (median): kiln zero-copy, the old copy path,
               eager (informational; "speedup_vs_copy_path").

Exit status 1 when a check fails. On a machine without CUDA the CUDA checks
are skipped with a message and the same models run through kiln on the CPU
(accuracy only), so the script itself is exercised anywhere.
"""
import argparse
import gc
import json
import statistics
import sys
import time
import weakref

import torch
import torch.fx

import kiln

REL_L2_BAR = 1e-3
SLEEP_CYCLES = 200_000_000  # ~0.1 s on an H100's clock: far longer than a call

failures = []


def emit(check, ok, **fields):
    line = {"check": check, "ok": bool(ok)}
    line.update(fields)
    print(json.dumps(line), flush=True)
    if not ok:
        failures.append(check)


def rel_l2(got, want):
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    denom = want.norm().item()
    return (got - want).norm().item() / (denom if denom > 0 else 1.0)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 128)
        self.fc3 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.head(torch.flatten(x, 1))


def models(device):
    torch.manual_seed(0)
    cnn = SmallCNN()
    with torch.no_grad():  # non-trivial batch-norm statistics
        cnn.bn1.running_mean.uniform_(-0.5, 0.5)
        cnn.bn1.running_var.uniform_(0.5, 1.5)
    return [
        ("mlp", MLP().eval().to(device), torch.randn(32, 64, device=device)),
        ("small_cnn", cnn.eval().to(device), torch.randn(8, 3, 32, 32, device=device)),
    ]


def compile_with_kiln(model, x):
    gm = torch.fx.symbolic_trace(model)
    return kiln.compile(gm, [x], fallback=False)  # an eager fallback raises: a failure here


def first(out):
    return out[0] if isinstance(out, (list, tuple)) else out


def median_ms(fn, iterations, sync):
    times = []
    for _ in range(iterations):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def copy_path(f, x):
    """The old path: inputs through the host, kiln uploads, outputs back."""
    outs = f.model.run([x.cpu()], as_torch=True)
    return [o.cpu().to(x.device) for o in outs]


def host_memcpys(fn):
    """(HtoD + DtoH memcpy events, all event names) seen by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    copies = [n for n in names if "memcpy" in n.lower() and ("htod" in n.lower() or "dtoh" in n.lower())]
    return len(copies), names


def check_cuda(name, model, x, iterations):
    device = x.device
    with torch.no_grad():
        want = model(x)
    f = compile_with_kiln(model, x)
    emit("compile", f.model.device.startswith("cuda"), model=name, kiln_device=f.model.device,
         summary=f.model.summary)

    # accuracy, output placement
    y = first(f(x))
    emit("accuracy", y.is_cuda and y.device == device and rel_l2(y, want) <= REL_L2_BAR, model=name,
         device=str(y.device), rel_l2=rel_l2(y, want), bar=REL_L2_BAR)
    y_copy = copy_path(f, x)[0]
    emit("same_as_copy_path", rel_l2(y, y_copy) <= 1e-6, model=name, rel_l2=rel_l2(y, y_copy))

    # no host copies in a steady-state call
    for _ in range(3):
        f(x)
    zero_copies, _ = host_memcpys(lambda: f(x))
    old_copies, _ = host_memcpys(lambda: copy_path(f, x))
    seen = old_copies > 0
    emit("no_host_copy", zero_copies == 0, model=name, memcpy_htod_dtoh=zero_copies,
         copy_path_memcpys=old_copies, profiler_sees_copies=seen,
         note=None if seen else "the profiler recorded no memcpy even in the copy path: inconclusive")

    # no synchronize: the call returns while the stream still sleeps
    stream = torch.cuda.current_stream(device)
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    y_busy = first(f(x))
    busy_after_call = not stream.query()
    torch.cuda.synchronize()
    emit("no_sync", busy_after_call and rel_l2(y_busy, want) <= REL_L2_BAR, model=name,
         stream_busy_after_call=busy_after_call, rel_l2=rel_l2(y_busy, want))

    # streams: the input is produced on the stream after a sleep, the output
    # consumed on it right after the call
    for label, s in (("current", torch.cuda.current_stream(device)), ("side", torch.cuda.Stream(device))):
        x_late = torch.zeros_like(x)
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(SLEEP_CYCLES)
            x_late.copy_(x)
            y_s = first(f(x_late))
            z = y_s * 2.0
        torch.cuda.synchronize()
        err = rel_l2(z, want * 2.0)
        emit("streams", err <= REL_L2_BAR and y_s.is_cuda, model=name, stream=label,
             cuda_stream=int(s.cuda_stream), rel_l2=err)

    # lifetime: outputs outlive the model
    y_keep = first(f(x)).clone()
    y_owned = first(f(x))
    model_ref = weakref.ref(f.model)
    del f
    gc.collect()
    torch.cuda.synchronize()
    freed = model_ref() is None
    junk = [torch.randn_like(y_owned) for _ in range(4)]  # would land on freed memory
    emit("lifetime", freed and torch.equal(y_owned, y_keep), model=name, model_freed=freed)
    del junk

    # timing (informational)
    f = compile_with_kiln(model, x)
    sync = torch.cuda.synchronize
    for _ in range(3):
        f(x), copy_path(f, x)
    with torch.no_grad():
        eager_ms = median_ms(lambda: model(x), iterations, sync)
    zero_ms = median_ms(lambda: f(x), iterations, sync)
    copy_ms = median_ms(lambda: copy_path(f, x), iterations, sync)
    emit("timing", True, model=name, kiln_zero_copy_ms=round(zero_ms, 3), kiln_copy_path_ms=round(copy_ms, 3),
         eager_ms=round(eager_ms, 3), speedup_vs_copy_path=round(copy_ms / zero_ms, 2) if zero_ms else None,
         device_name=torch.cuda.get_device_name(device))


def check_cpu(name, model, x):
    with torch.no_grad():
        want = model(x)
    f = compile_with_kiln(model, x)
    y = first(f(x))
    emit("cpu_accuracy", (not y.is_cuda) and rel_l2(y, want) <= REL_L2_BAR, model=name, rel_l2=rel_l2(y, want))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps({"check": "environment", "torch": torch.__version__, "python": sys.version.split()[0],
                      "kiln": kiln.version(), "cuda_available": torch.cuda.is_available()}), flush=True)
    if not torch.cuda.is_available():
        print(json.dumps({"check": "cuda", "skipped": True,
                          "reason": "no CUDA device visible to torch: CUDA checks skipped, CPU path only"}),
              flush=True)
        for name, model, x in models("cpu"):
            check_cpu(name, model, x)
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        for name, model, x in models("cuda"):
            try:
                check_cuda(name, model, x, args.iterations)
            except Exception as e:  # a crash in one model is a failure, not the end
                emit("exception", False, model=name, error="%s: %s" % (type(e).__name__, e))
    print(json.dumps({"check": "summary", "ok": not failures, "failed": failures}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
