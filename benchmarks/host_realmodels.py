#!/usr/bin/env python3
"""kiln's CPU backend against onnxruntime's CPU provider on the full-size
real models (issue 14), on the GPU machine's host (torch 2.x, transformers,
torchvision, onnxruntime; no Bazel: carry the kiln binary built here with -c
opt through backends/cuda/make_gpu_carry.sh).

  python3 benchmarks/host_realmodels.py --kiln /tmp/kiln_carry/bin/kiln --out $OUT \
      [--models resnet50,bert_base] [--batch 1] [--threads 16] [--iterations 10] [--budget 500]

Per model (benchmarks/gen/realmodels.py's list: random weights, seeded;
exported with opset 17, the TorchScript-based exporter, as its `export`
does, or with --exporter dynamo the exporter torch 2.x users get by default),
on the same input:

  * onnxruntime CPU (intra-op threads = --threads): median of --iterations
    calls after 2 warm-up calls;
  * kiln: `kiln run --backend compiled --inputs test_data_set_0 --json`, once
    on an empty cache (the cold compile) and once warm (--warmup 2
    --iterations N); its outputs are compared with PyTorch's (output_K.pb)
    at --rtol/--atol, and the islands, kernels and externs reported.

One JSON line per model in OUT/host_cells.jsonl and a table at the end. No
new model starts after --budget seconds.
"""
import argparse, json, os, shutil, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
import torch
import realmodels as rm  # the generator of ../shared/corpus (copied into benchmarks/gen)
from kiln_json import run_kiln_json


def kiln_run(args, d, cache, warm):
    cmd = [args.kiln, "run", f"{d}/model.onnx", "--inputs", f"{d}/test_data_set_0", "--backend", "compiled",
           "--check=false", "--json", "--rtol", str(args.rtol), "--atol", str(args.atol)]
    cmd += ["--warmup", "2", "--iterations", str(args.iterations)] if warm else ["--iterations", "1"]
    env = dict(os.environ, KILN_CACHE_DIR=cache, OMP_NUM_THREADS=str(args.threads))
    # Exit 1: the outputs differ from PyTorch's (reported below).
    doc, rc, wall = run_kiln_json(cmd, env, args.kiln_timeout, f"{args.out}/host_log.txt", accept=(0, 1))
    t, c = doc["times_ms"], doc["compiled"]
    checks = doc.get("checks", [])
    diff = [o["difference"] for ch in checks for o in ch["outputs"] if not o["passed"]]
    return dict(rc=rc, wall_s=round(wall, 2), compile_s=round((t["import"] + t["passes"] + t["compile"]) / 1e3, 3),
                median_ms=t["run"]["median"], min_ms=t["run"]["min"], islands=c["islands"],
                island_nodes=c["island_nodes"], kernels=c["kernels"], externs=c["extern_calls"],
                reference_externs=c.get("reference_externs"), not_compiled=c.get("not_compiled_ops", []),
                matches_torch=bool(checks) and not diff, difference=diff[0][:200] if diff else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/kiln_host_work")
    ap.add_argument("--models", default="")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--budget", type=float, default=500)
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript",
                    help="torch.onnx.export's TorchScript-based exporter at opset 17, or the dynamo one "
                         "(torch 2.x's default, its own opset)")
    ap.add_argument("--kiln-timeout", type=float, default=240)
    args = ap.parse_args()
    import onnxruntime as ort
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(args.threads)
    print(json.dumps(dict(step="env", torch=torch.__version__, ort=ort.__version__, cpus=os.cpu_count(),
                          threads=args.threads, batch=args.batch, exporter=args.exporter)), flush=True)
    wanted = [m for m in args.models.split(",") if m]
    cells = []
    for name, make, inp in rm.model_list():
        if wanted and name not in wanted:
            continue
        if time.time() - start > args.budget:
            cells.append(dict(model=name, skipped="budget"))
            continue
        cell = dict(model=name, batch=args.batch)
        d = f"{args.work}/{name}_b{args.batch}" + ("_dynamo" if args.exporter == "dynamo" else "")
        try:
            torch.manual_seed(0)
            m = make().eval()
            x = inp(args.batch)
            if not os.path.exists(f"{d}/model.onnx"):
                t0 = time.time()
                with torch.no_grad():
                    y = m(*x)
                ys = [y] if isinstance(y, torch.Tensor) else list(y)
                os.makedirs(d, exist_ok=True)
                names_in = [f"input_{i}" for i in range(len(x))]
                names_out = [f"output_{i}" for i in range(len(ys))]
                if args.exporter == "dynamo":
                    prog = torch.onnx.export(m, tuple(x), dynamo=True, input_names=names_in,
                                             output_names=names_out)
                    prog.save(f"{d}/model.onnx")
                else:
                    torch.onnx.export(m, tuple(x), f"{d}/model.onnx", opset_version=17, dynamo=False,
                                      input_names=names_in, output_names=names_out)
                rm.save_case(d, x, ys)
                cell["export_s"] = round(time.time() - t0, 1)
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            s = ort.InferenceSession(f"{d}/model.onnx", so, providers=["CPUExecutionProvider"])
            from onnx import numpy_helper, TensorProto
            def load(p):
                t = TensorProto(); t.ParseFromString(open(p, "rb").read()); return numpy_helper.to_array(t)
            feed = {i.name: load(f"{d}/test_data_set_0/input_{k}.pb") for k, i in enumerate(s.get_inputs())}
            cell["ort_ms"] = round(rm.med(lambda: s.run(None, feed), args.iterations), 3)
            del s
        except Exception as e:  # noqa: BLE001
            cell["error"] = f"export/ort: {e!r}"[:300]
            cells.append(cell)
            print(json.dumps(cell), flush=True)
            continue
        cache = tempfile.mkdtemp(prefix="kiln_cache_", dir=args.work)
        try:
            cold = kiln_run(args, d, cache, False)
            warm = kiln_run(args, d, cache, True)
            cell.update(kiln_cold_compile_s=cold["compile_s"], kiln_warm_compile_s=warm["compile_s"],
                        kiln_ms=warm["median_ms"], kiln_min_ms=warm["min_ms"], islands=warm["islands"],
                        island_nodes=warm["island_nodes"], kernels=warm["kernels"], externs=warm["externs"],
                        reference_externs=warm["reference_externs"], not_compiled=warm["not_compiled"],
                        matches_torch=warm["matches_torch"], difference=warm["difference"], rc=warm["rc"])
            cell["speedup_vs_ort"] = round(cell["ort_ms"] / warm["median_ms"], 2) if warm["median_ms"] else None
        except Exception as e:  # noqa: BLE001
            cell["kiln_error"] = str(e)[:300]
        shutil.rmtree(cache, ignore_errors=True)
        cells.append(cell)
        print(json.dumps(cell), flush=True)
        with open(f"{args.out}/host_cells.jsonl", "a") as f:
            f.write(json.dumps(cell) + "\n")
    print(f"\n{'model':20s} {'batch':>5s} {'ort ms':>9s} {'kiln ms':>9s} {'ort/kiln':>8s} {'isl':>4s} "
          f"{'cold s':>7s} {'warm s':>7s} match")
    for c in cells:
        if "kiln_ms" not in c:
            print(f"{c['model']:20s} {c.get('batch', ''):>5} {c.get('ort_ms', ''):>9} "
                  f"{(c.get('kiln_error') or c.get('error') or c.get('skipped', ''))[:80]}")
            continue
        print(f"{c['model']:20s} {c['batch']:5d} {c['ort_ms']:9.2f} {c['kiln_ms']:9.2f} {c['speedup_vs_ort']:8.2f} "
              f"{c['islands']:4d} {c['kiln_cold_compile_s']:7.2f} {c['kiln_warm_compile_s']:7.3f} "
              f"{c['matches_torch']} {c['difference'][:60]}")


if __name__ == "__main__":
    main()
