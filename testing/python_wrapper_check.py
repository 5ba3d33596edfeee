#!/usr/bin/env python3
"""Runs the Python wrappers that `kiln compile` writes and checks their outputs.

For each model NAME, imports WRAPPERS/NAME/wrapper.py (which loads its
constants from WRAPPERS/NAME/constants/ and compiles its kernels through
Inductor's AsyncCompile.cpp_pybinding), feeds it
MODELS/NAME/test_data_set_0/input_N.pb, calls call() and compares every
result with output_N.pb (rtol 1e-3, atol 1e-5). Prints one line per model:

  PASS mlp: 1 output(s), max abs err 2.4e-07; import+compile 1.93 s; call 0.041 ms (median of 50) [ort 0.030 ms]
  FAIL squeezenet1_1: <why>

and exits nonzero when any model fails. The bracketed figure, when present,
is onnxruntime's CPU time on the same input, for scale only (no eager
PyTorch version of the ONNX models exists to time).

  python3 testing/python_wrapper_check.py --models testdata/onnx_models \
      --wrappers DIR mlp small_cnn ...

--fake-inductor replaces the few torch._inductor / torch._C._dynamo names
the wrapper imports with small stand-ins (kernels compiled by g++ and called
through ctypes), so the wrapper logic can be checked with an old PyTorch
that has no Inductor (Debian's 1.13). It does not check Inductor's own
compile path; a run without it does.

ONNX TensorProto files are read by a small protobuf decoder (no onnx
package needed).
"""

import argparse
import importlib.util
import os
import statistics
import struct
import sys
import time
import traceback

import torch

RTOL = 1e-3
ATOL = 1e-5

# onnx.TensorProto.DataType -> torch dtype.
ONNX_DTYPES = {
    1: torch.float32,
    2: torch.uint8,
    3: torch.int8,
    5: torch.int16,
    6: torch.int32,
    7: torch.int64,
    9: torch.bool,
    11: torch.float64,
}


def _varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf):
    """Yields (field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield field, wire, value


def _signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def read_tensor_proto(path):
    """An onnx TensorProto file -> torch tensor (raw_data or typed fields)."""
    with open(path, "rb") as f:
        buf = f.read()
    dims, dtype_code, raw = [], None, None
    floats, doubles, ints = [], [], []
    for field, wire, value in _fields(buf):
        if field == 1:  # dims: packed or not
            if wire == 2:
                pos = 0
                while pos < len(value):
                    d, pos = _varint(value, pos)
                    dims.append(_signed64(d))
            else:
                dims.append(_signed64(value))
        elif field == 2:
            dtype_code = value
        elif field == 9:
            raw = bytes(value)
        elif field == 4:  # float_data
            floats.extend(struct.unpack(f"<{len(value) // 4}f", value) if wire == 2
                          else struct.unpack("<f", value))
        elif field == 10:  # double_data
            doubles.extend(struct.unpack(f"<{len(value) // 8}d", value) if wire == 2
                           else struct.unpack("<d", value))
        elif field in (5, 7):  # int32_data, int64_data
            if wire == 2:
                pos = 0
                while pos < len(value):
                    v, pos = _varint(value, pos)
                    ints.append(_signed64(v))
            else:
                ints.append(_signed64(value))
    if dtype_code not in ONNX_DTYPES:
        raise ValueError(f"{path}: unsupported ONNX data type {dtype_code}")
    dtype = ONNX_DTYPES[dtype_code]
    if raw is not None:
        t = torch.frombuffer(bytearray(raw), dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    elif floats:
        t = torch.tensor(floats, dtype=dtype)
    elif doubles:
        t = torch.tensor(doubles, dtype=dtype)
    else:
        t = torch.tensor(ints, dtype=torch.int64).to(dtype)
    return t.reshape(dims).clone()


def install_fake_inductor():
    """Stand-ins for the torch._inductor / torch._C._dynamo names the wrapper uses."""
    import ctypes
    import hashlib
    import subprocess
    import tempfile
    import types

    def empty_strided_cpu(size, stride, dtype):
        return torch.empty_strided(size, stride, dtype=dtype, device="cpu")

    def reinterpret_tensor(base, size, stride, offset_increment):
        return base.as_strided(size, stride, base.storage_offset() + offset_increment)

    def assert_size_stride(t, size, stride):
        if tuple(t.size()) != tuple(size) or tuple(t.stride()) != tuple(stride):
            raise AssertionError(f"expected size {size} stride {stride}, got {t.size()} {t.stride()}")

    import sysconfig

    build_dir = tempfile.mkdtemp(prefix="kiln_fake_inductor_")
    # What cpp_pybinding appends to the source (in outline): the Python
    # bindings, which include <Python.h> after the kernel's own code and
    # call kernel() with each argument's data pointer cast to its type.
    suffix = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sstream>
#include <cstdlib>
static void* (*fake_tensor_data_ptr)(PyObject* obj);
template <typename T> static inline T parse_arg(PyObject* args, size_t n) {
    static_assert(std::is_pointer_v<T>, "arg type must be pointer or long");
    return static_cast<T>(fake_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}
extern "C" PyObject* kernel_py(PyObject* self, PyObject* args) {
    kernel(%s);
    Py_RETURN_NONE;
}
"""

    class AsyncCompile:
        def cpp_pybinding(self, argtypes, source):
            parse = ", ".join(f"parse_arg<{t.replace('const ', '')}>(args, {i})"
                              for i, t in enumerate(argtypes))
            source = source + suffix % parse
            digest = hashlib.sha256(source.encode()).hexdigest()[:20]
            cpp = os.path.join(build_dir, digest + ".cpp")
            lib = os.path.join(build_dir, digest + ".so")
            if not os.path.exists(lib):
                with open(cpp, "w") as f:
                    f.write(source)
                subprocess.run(["g++", "-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared",
                                "-fPIC", "-Wall", "-Wno-unused-variable", "-Wno-unknown-pragmas",
                                "-I" + sysconfig.get_paths()["include"], cpp, "-o", lib], check=True)
            fn = ctypes.CDLL(lib).kernel
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p] * len(argtypes)

            def call(*tensors):
                if len(tensors) != len(argtypes):
                    raise RuntimeError(f"requires {len(argtypes)} args")
                fn(*[t.data_ptr() for t in tensors])
            return call

        def wait(self, scope):
            pass

    class ExternKernels:
        @staticmethod
        def mm(a, b, out):
            return torch.mm(a, b, out=out)

        @staticmethod
        def bmm(a, b, out):
            return torch.bmm(a, b, out=out)

        @staticmethod
        def addmm(c, a, b, beta=1, alpha=1, out=None):
            return torch.addmm(c, a, b, beta=beta, alpha=alpha, out=out)

        @staticmethod
        def convolution(x, w, bias=None, stride=1, padding=0, dilation=1, transposed=False,
                        output_padding=0, groups=1):
            return torch.convolution(x, w, bias, stride, padding, dilation, transposed,
                                     output_padding, groups)

    guards = types.SimpleNamespace(
        assert_size_stride=assert_size_stride,
        _empty_strided_cpu=empty_strided_cpu,
        _empty_strided_cuda=None,
        _reinterpret_tensor=reinterpret_tensor)
    if not hasattr(torch._C, "_dynamo"):
        torch._C._dynamo = types.SimpleNamespace(guards=guards)
    inductor = types.ModuleType("torch._inductor")
    async_compile = types.ModuleType("torch._inductor.async_compile")
    async_compile.AsyncCompile = AsyncCompile
    select_algorithm = types.ModuleType("torch._inductor.select_algorithm")
    select_algorithm.extern_kernels = ExternKernels
    sys.modules["torch._inductor"] = inductor
    sys.modules["torch._inductor.async_compile"] = async_compile
    sys.modules["torch._inductor.select_algorithm"] = select_algorithm


def load_wrapper(path, name):
    spec = importlib.util.spec_from_file_location(f"kiln_wrapper_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_call(fn, iterations):
    fn()  # warm-up
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_time(model_path, inputs, iterations):
    try:
        import onnxruntime
    except ImportError:
        return None
    try:
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
        return time_call(lambda: session.run(None, feeds), iterations)
    except Exception:  # for scale only: any failure just drops the figure
        return None


def check_model(name, models, wrappers, iterations):
    data_dir = os.path.join(models, name, "test_data_set_0")
    inputs, expected = [], []
    while os.path.exists(os.path.join(data_dir, f"input_{len(inputs)}.pb")):
        inputs.append(read_tensor_proto(os.path.join(data_dir, f"input_{len(inputs)}.pb")))
    while os.path.exists(os.path.join(data_dir, f"output_{len(expected)}.pb")):
        expected.append(read_tensor_proto(os.path.join(data_dir, f"output_{len(expected)}.pb")))
    t0 = time.perf_counter()
    module = load_wrapper(os.path.join(wrappers, name, "wrapper.py"), name)
    load_seconds = time.perf_counter() - t0
    results = module.call([t.clone() for t in inputs])
    if len(results) < len(expected):
        return False, f"{len(results)} results, expected {len(expected)}"
    worst = 0.0
    for i, want in enumerate(expected):
        got = results[i]
        if tuple(got.shape) != tuple(want.shape):
            return False, f"output {i}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        if want.is_floating_point():
            diff = (got.double() - want.double()).abs()
            worst = max(worst, diff.max().item() if diff.numel() else 0.0)
            if not torch.allclose(got.double(), want.double(), rtol=RTOL, atol=ATOL):
                return False, f"output {i}: max abs err {worst:.3g} (rtol {RTOL}, atol {ATOL})"
        elif not torch.equal(got, want):
            return False, f"output {i}: values differ"
    call_seconds = time_call(lambda: module.call([t.clone() for t in inputs]), iterations)
    ort = ort_time(os.path.join(models, name, "model.onnx"), inputs, iterations)
    text = (f"{len(expected)} output(s), max abs err {worst:.2g}; import+compile {load_seconds:.2f} s; "
            f"call {call_seconds * 1e3:.3f} ms (median of {iterations})")
    if ort is not None:
        text += f" [ort {ort * 1e3:.3f} ms]"
    return True, text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="testdata/onnx_models",
                        help="folder of MODEL/model.onnx + MODEL/test_data_set_0")
    parser.add_argument("--wrappers", required=True,
                        help="folder of MODEL/wrapper.py (+ MODEL/constants/) from `kiln compile -o`")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--fake-inductor", action="store_true",
                        help="stand-ins for torch._inductor (old PyTorch without it)")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    if args.fake_inductor:
        install_fake_inductor()
    failed = 0
    for name in args.names:
        try:
            ok, text = check_model(name, args.models, args.wrappers, args.iterations)
        except Exception as e:  # one model's failure must not hide the others'
            message = f"{type(e).__name__}: {e}"
            ok, text = False, message if len(message) <= 600 else message[:600] + " ..."
            # Compiler errors are long: the stack and the message's end.
            print("".join(traceback.format_tb(e.__traceback__, limit=-6)), file=sys.stderr)
            print(message[-4000:], file=sys.stderr, flush=True)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {text}", flush=True)
    print(f"{len(args.names) - failed}/{len(args.names)} passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
