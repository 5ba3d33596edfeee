#!/usr/bin/env python3
"""kiln on CUDA against PyTorch on real models, in one table (issue 15).

Runs on the GPU machine (torch 2.x with CUDA, torchvision, transformers,
onnx); benchmarks/cuda_realmodels.sh sets up the carried kiln binary and
calls this. For each model, batch size and precision ("cell"):

  1. the model (random weights, seeded) exported to ONNX (opset 17, the
     TorchScript-based exporter, static shapes) with its inputs, once per
     model and batch; the reference output is PyTorch's float32 eager result
     with TF32 off (torch.backends.cuda.matmul/cudnn.allow_tf32 = False);
  2. kiln: `kiln run --device cuda --precision P` twice, first on empty
     caches (cold compile: import, passes, lowering, codegen, NVRTC with
     CUDA_CACHE_DISABLE=1; and the cold first call, which compiles the
     runtime kernels the program uses and searches algorithms), then warm (the timed run: --warmup W
     --iterations N, CUDA events, a CUDA graph replayed per call when the
     program has no host fallback); relative L2 of its outputs against the
     reference;
  3. PyTorch with its defaults (TF32 for convolutions only): eager,
     torch.compile default, mode="reduce-overhead" (CUDA graphs) and
     mode="max-autotune-no-cudagraphs" (as --torch-modes asks), each with
     its first-call latency and median; bf16 cells run under
     torch.autocast(dtype=torch.bfloat16), as kiln's --precision=bf16
     rewrites the float32 model.

Every cell appends one JSON line to OUT/cells.jsonl; the table is printed
at the end (and the cells a --budget (seconds) left undone are listed).
A failing step is recorded in its cell and the run goes on.

  python3 benchmarks/cuda_realmodels.py --kiln /tmp/k/bin/kiln --out $OUT/realmodels \
      --models resnet50,bert_base --batches 1,32 --precisions fp32,bf16 \
      --torch-modes default,reduce-overhead --budget 520
"""
import argparse
import inspect
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

from cuda_torch_compile import time_ms  # CUDA events, median (the same protocol as the single-op figures)
from kiln_json import run_kiln_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
import realmodels as rm  # noqa: E402 (the generator of ../shared/corpus, copied into benchmarks/gen)

def make_model(name):
    """(module, inputs(batch) -> list of CPU tensors): the model of
    benchmarks/gen/realmodels.py's list (images 224x224, sequences of 128)."""
    for model_name, make, inputs in rm.model_list():
        if model_name == name:
            torch.manual_seed(0)
            return make().eval(), inputs
    raise ValueError(f"unknown model {name}")


def save_tensor(path, array, name):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def export(model, inputs, d):
    """ONNX (opset 17, static shapes) + test_data_set_0/input_K.pb."""
    os.makedirs(f"{d}/test_data_set_0", exist_ok=True)
    kw = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    names = [f"input_{i}" for i in range(len(inputs))]
    # Gradients on: under no_grad, torchvision's vit takes the fused
    # _native_multi_head_attention fast path on CUDA, which ONNX cannot export.
    with torch.enable_grad():
        torch.onnx.export(model, tuple(inputs), f"{d}/model.onnx", opset_version=17, input_names=names,
                          output_names=["output_0"], do_constant_folding=True, **kw)
    for i, t in enumerate(inputs):
        save_tensor(f"{d}/test_data_set_0/input_{i}.pb", t.cpu().numpy(), names[i])


def rel_l2(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    if np.isnan(got).any() != np.isnan(want).any():
        return float("inf")
    den = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (den if den > 0 else 1.0))


def first_tensor(y):
    if isinstance(y, torch.Tensor):
        return y
    if isinstance(y, (list, tuple)):
        return first_tensor(y[0])
    return y.last_hidden_state


def set_tf32(matmul, cudnn):
    torch.backends.cuda.matmul.allow_tf32 = matmul
    torch.backends.cudnn.allow_tf32 = cudnn


def run_kiln(args, d, precision, cache_dir, cold, log):
    """One `kiln run --json`; returns its record (plus wall_s) or raises."""
    out_dir = f"{d}/kiln_out_{precision}"
    cmd = [args.kiln, "run", f"{d}/model.onnx", "--inputs", f"{d}/test_data_set_0", "--backend", "compiled",
           "--device", args.device,
           "--check=false", "--json", "--precision", precision]
    if cold:
        cmd += ["--warmup", "0", "--iterations", "1"]
    else:
        cmd += ["--warmup", str(args.warmup), "--iterations", str(args.iterations), "--save_outputs", out_dir]
        if args.profile:
            cmd += ["--profile", str(args.profile)]
    env = dict(os.environ)
    env["KILN_CACHE_DIR"] = cache_dir
    if cold:
        env["CUDA_CACHE_DISABLE"] = "1"
    doc, _, wall = run_kiln_json(cmd, env, args.kiln_timeout, log)
    t, c = doc["times_ms"], doc["compiled"]
    r = dict(import_ms=t["import"], passes_ms=t["passes"], front_ms=0.0, device_compile_ms=t["compile"],
             median_ms=t["run"]["median"], first_call_ms=t.get("first_call", 0.0), islands=c["islands"],
             kernels=c["kernels"],
             externs=c["extern_calls"], notes=c["notes"], wall_s=wall)
    if not cold:
        r["rel_l2_outputs"] = [load_tensor(f"{out_dir}/output_{k}.pb")
                               for k in range(len([x for x in os.listdir(out_dir) if x.startswith("output_")]))]
    return r


def torch_cell(args, model, xs, precision, mode):
    """torch.compile (or eager for mode None): first-call seconds, median ms, output."""
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if precision == "bf16" else None
    torch._dynamo.reset() if hasattr(torch, "_dynamo") else None
    fn = model if mode is None else (torch.compile(model) if mode == "default" else torch.compile(model, mode=mode))

    def call():
        with torch.no_grad():
            if autocast is not None:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    return fn(*xs)
            return fn(*xs)

    t0 = time.time()
    y = call()
    torch.cuda.synchronize()
    first_s = time.time() - t0
    ms = time_ms(call, args.iterations, args.warmup)
    out = first_tensor(call()).float().cpu().numpy()
    return first_s, ms, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln binary")
    ap.add_argument("--out", required=True, help="results: cells.jsonl, log.txt (kiln's output)")
    ap.add_argument("--work", default="/tmp/kiln_realmodels_work", help="exported models, kiln's caches")
    ap.add_argument("--models", default=",".join(name for name, _, _ in rm.model_list()))
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--torch-modes", default="default,reduce-overhead",
                    help="comma list of default, reduce-overhead, max-autotune-no-cudagraphs (empty: none)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--profile", type=int, default=0, help="kiln --profile N in the warm run (log only)")
    ap.add_argument("--budget", type=float, default=520, help="seconds; no new cell starts after this")
    ap.add_argument("--kiln-timeout", type=float, default=240)
    args = ap.parse_args()
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    cells_path = f"{args.out}/cells.jsonl"
    log = f"{args.out}/log.txt"
    models = [m for m in args.models.split(",") if m]
    batches = [int(b) for b in args.batches.split(",") if b]
    precisions = [p for p in args.precisions.split(",") if p]
    modes = [m for m in args.torch_modes.split(",") if m]
    cuda = args.device.startswith("cuda") and torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    env = dict(torch=torch.__version__, cuda=torch.version.cuda if cuda else None,
               gpu=torch.cuda.get_device_name(0) if cuda else None, kiln=args.kiln)
    print(json.dumps(dict(step="env", **env)), flush=True)
    cells, skipped = [], []
    for name in models:
        if time.time() - start > args.budget:
            skipped += [f"{name} b{b} {p}" for b in batches for p in precisions]
            continue
        try:
            model, make_inputs = make_model(name)
        except Exception as e:  # noqa: BLE001
            for b in batches:
                for p in precisions:
                    cells.append(dict(model=name, batch=b, precision=p, error=f"model: {e!r}"[:300]))
            continue
        model = model.to(dev)
        for batch in batches:
            d = f"{args.work}/{name}_b{batch}"
            try:
                xs = [t.to(dev) for t in make_inputs(batch)]
                t0 = time.time()
                export(model, xs, d)
                export_s = time.time() - t0
                set_tf32(False, False)
                with torch.no_grad():
                    ref = first_tensor(model(*xs)).float().cpu().numpy()
                set_tf32(False, True)  # PyTorch's defaults from here on
            except Exception as e:  # noqa: BLE001
                for p in precisions:
                    cells.append(dict(model=name, batch=batch, precision=p, error=f"export: {e!r}"[:300]))
                continue
            for precision in precisions:
                if time.time() - start > args.budget:
                    skipped.append(f"{name} b{batch} {precision}")
                    continue
                cell = dict(model=name, batch=batch, precision=precision, export_s=round(export_s, 1))
                cache = tempfile.mkdtemp(prefix="kiln_cache_", dir=args.work)
                try:
                    cold = run_kiln(args, d, precision, cache, True, log)
                    cell["kiln_cold_compile_s"] = round(
                        (cold["import_ms"] + cold["passes_ms"] + cold["front_ms"] + cold["device_compile_ms"]) / 1e3, 3)
                    cell["kiln_cold_first_call_s"] = round(cold["first_call_ms"] / 1e3, 3)
                    warm = run_kiln(args, d, precision, cache, False, log)
                    cell["kiln_warm_compile_s"] = round(
                        (warm["import_ms"] + warm["passes_ms"] + warm["front_ms"] + warm["device_compile_ms"]) / 1e3, 3)
                    cell["kiln_ms"] = warm["median_ms"]
                    cell["kiln_islands"] = warm["islands"]
                    cell["kiln_kernels"] = warm["kernels"]
                    cell["kiln_externs"] = warm["externs"]
                    cell["kiln_notes"] = warm["notes"]
                    outs = warm.pop("rel_l2_outputs")
                    cell["kiln_rel_l2"] = rel_l2(outs[0], ref) if outs else float("inf")
                except Exception as e:  # noqa: BLE001
                    cell["kiln_error"] = str(e)[:300]
                if cuda:
                    for mode in [None] + modes:
                        key = "eager" if mode is None else mode
                        try:
                            first_s, ms, out = torch_cell(args, model, xs, precision, mode)
                            cell[f"torch_{key}_ms"] = ms
                            cell[f"torch_{key}_first_s"] = round(first_s, 2)
                            cell[f"torch_{key}_rel_l2"] = rel_l2(out, ref)
                        except Exception as e:  # noqa: BLE001
                            cell[f"torch_{key}_error"] = repr(e)[:300]
                            traceback.print_exc(file=sys.stderr)
                        torch.cuda.empty_cache()
                cells.append(cell)
                with open(cells_path, "a") as f:
                    f.write(json.dumps(cell) + "\n")
                print(json.dumps(dict(step="cell", **{k: v for k, v in cell.items() if k != "kiln_notes"})),
                      flush=True)
        del model
        if cuda:
            torch.cuda.empty_cache()
    print_table(cells, modes, skipped, env)


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def print_table(cells, modes, skipped, env):
    print(f"\n==== kiln vs PyTorch on {env.get('gpu')} (torch {env.get('torch')}); ms are medians "
          "(CUDA events); rel L2 against PyTorch float32 eager with TF32 off ====")
    head = ["model", "b", "prec", "kiln ms", "eager"] + [m.replace("max-autotune-no-cudagraphs", "max-autotune-nocg")
                                                          for m in modes]
    head += ["kiln/tc", "kiln relL2", "tc relL2", "cold s", "cold+1st s", "warm s", "tc 1st s", "islands", "graph"]
    print(" | ".join(head))
    for c in cells:
        if "error" in c:
            print(f"{c['model']} | {c['batch']} | {c['precision']} | ERROR {c['error']}")
            continue
        tc = c.get("torch_default_ms")
        row = [c["model"], str(c["batch"]), c["precision"], fmt(c.get("kiln_ms"), ".3f"),
               fmt(c.get("torch_eager_ms"), ".3f")]
        row += [fmt(c.get(f"torch_{m}_ms"), ".3f") for m in modes]
        ratio = c["kiln_ms"] / tc if isinstance(c.get("kiln_ms"), float) and isinstance(tc, float) else None
        graph = any("cuGraphLaunch" in n for n in c.get("kiln_notes", []))
        cold, first = c.get("kiln_cold_compile_s"), c.get("kiln_cold_first_call_s")
        cold_total = cold + first if isinstance(cold, float) and isinstance(first, float) else None
        row += [fmt(ratio, ".2f"), fmt(c.get("kiln_rel_l2"), ".2e"), fmt(c.get("torch_default_rel_l2"), ".2e"),
                fmt(cold, ".2f"), fmt(cold_total, ".2f"), fmt(c.get("kiln_warm_compile_s"), ".2f"),
                fmt(c.get("torch_default_first_s"), ".1f"), fmt(c.get("kiln_islands"), "d"), "yes" if graph else "no"]
        print(" | ".join(row))
        if "kiln_error" in c:
            print(f"    kiln error: {c['kiln_error']}")
        for m in ["eager"] + modes:
            if f"torch_{m}_error" in c:
                print(f"    torch {m} error: {c[f'torch_{m}_error']}")
    if skipped:
        print(f"not run (budget): {', '.join(skipped)}")
    print("kiln/tc: kiln's median over torch.compile default's (<= 1 meets issue 15); cold s / warm s: kiln's "
          "compile (import .. NVRTC) on empty caches / warm caches; cold+1st s: the cold compile plus the cold first "
          "call (runtime kernels compiled on first use, algorithm searches); tc 1st s: torch.compile's first call")


if __name__ == "__main__":
    main()
