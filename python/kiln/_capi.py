"""ctypes bindings of libkiln_c.so (python/kiln_c.h) and DLPack exchange.

The library is found at $KILN_C_LIBRARY, else next to this file (where the
wheel installs it). Inputs are passed as DLTensor structs over the caller's
memory (no copy); outputs come back as DLManagedTensors that torch (or
numpy) adopts without a copy. A model compiled for CUDA reads torch's CUDA
tensors in place (kDLCUDA) on torch's current stream and returns CUDA
tensors (torch.utils.dlpack), with no copy through the host.
"""
import ctypes
import json
import os
import threading

KILNC_OK = 0
KILNC_DL_BOOL = 6  # DLPack 0.8's bool code

_DL_CPU = 1
_DL_CUDA = 2
API_VERSION = 2  # kiln_c.h's KILNC_API_VERSION
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX = 0, 1, 2, 4, 5


class KilnError(RuntimeError):
    """A failed kiln call: `code` is the kilnc_status (absl status code)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _Deleter),
]


class CompileOptions(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_char_p),
        ("pipeline", ctypes.c_char_p),
        ("max_specializations", ctypes.c_int),
    ]


_lib = None
_lib_lock = threading.Lock()


def library_path():
    env = os.environ.get("KILN_C_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libkiln_c.so")


def lib():
    """The loaded library (loaded once; KilnError when it cannot be)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        try:
            l = ctypes.CDLL(path)
        except OSError as e:
            raise KilnError(5, "cannot load kiln's C library %s (%s); build it with "
                               "./bazelw build //python:libkiln_c.so or set KILN_C_LIBRARY" % (path, e))
        P = ctypes.POINTER
        l.kilnc_api_version.restype = ctypes.c_int
        l.kilnc_version.restype = ctypes.c_char_p
        l.kilnc_last_error.restype = ctypes.c_char_p
        l.kilnc_has_operator.argtypes = [ctypes.c_char_p]
        l.kilnc_has_operator.restype = ctypes.c_int
        l.kilnc_compile_file.argtypes = [ctypes.c_char_p, P(CompileOptions), P(P(DLTensor)), ctypes.c_int,
                                        P(ctypes.c_void_p)]
        l.kilnc_compile_file.restype = ctypes.c_int
        l.kilnc_compile_export_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                               P(ctypes.c_char_p), P(P(DLTensor)), ctypes.c_int,
                                               P(CompileOptions), P(ctypes.c_void_p)]
        l.kilnc_compile_export_json.restype = ctypes.c_int
        l.kilnc_model_num_inputs.argtypes = [ctypes.c_void_p]
        l.kilnc_model_num_inputs.restype = ctypes.c_int
        l.kilnc_model_num_outputs.argtypes = [ctypes.c_void_p]
        l.kilnc_model_num_outputs.restype = ctypes.c_int
        l.kilnc_model_run.argtypes = [ctypes.c_void_p, P(P(DLTensor)), ctypes.c_int, P(P(DLManagedTensor)),
                                     ctypes.c_int]
        l.kilnc_model_run.restype = ctypes.c_int
        l.kilnc_model_run_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, P(P(DLTensor)), ctypes.c_int,
                                            P(P(DLManagedTensor)), ctypes.c_int]
        l.kilnc_model_run_stream.restype = ctypes.c_int
        l.kilnc_model_summary.argtypes = [ctypes.c_void_p]
        l.kilnc_model_summary.restype = ctypes.c_char_p
        l.kilnc_model_free.argtypes = [ctypes.c_void_p]
        l.kilnc_model_free.restype = None
        if l.kilnc_api_version() != API_VERSION:
            raise KilnError(9, "%s has C API version %d; this package speaks version %d"
                            % (path, l.kilnc_api_version(), API_VERSION))
        _lib = l
        return l


def check(code):
    if code != KILNC_OK:
        raise KilnError(code, lib().kilnc_last_error().decode("utf-8", "replace"))


def has_operator(qualified_name):
    return bool(lib().kilnc_has_operator(qualified_name.encode()))


# ---------------------------------------------------------------------------
# Tensors in: DLTensor structs over torch tensors / numpy arrays.

def _torch_dtypes():
    import torch
    return {
        torch.float32: (_DL_FLOAT, 32), torch.float64: (_DL_FLOAT, 64), torch.float16: (_DL_FLOAT, 16),
        torch.bfloat16: (_DL_BFLOAT, 16), torch.int64: (_DL_INT, 64), torch.int32: (_DL_INT, 32),
        torch.int16: (_DL_INT, 16), torch.int8: (_DL_INT, 8), torch.uint8: (_DL_UINT, 8),
        torch.bool: (KILNC_DL_BOOL, 8), torch.complex64: (_DL_COMPLEX, 64),
    }


_NUMPY_KINDS = {"f": _DL_FLOAT, "i": _DL_INT, "u": _DL_UINT, "b": KILNC_DL_BOOL, "c": _DL_COMPLEX}


class _Borrowed:
    """A DLTensor over an array plus what keeps its memory and arrays alive."""

    def __init__(self, data, code, bits, shape, strides, keep, device_type=_DL_CPU, device_id=0):
        n = len(shape)
        self.shape = (ctypes.c_int64 * max(n, 1))(*shape)
        self.strides = (ctypes.c_int64 * max(n, 1))(*strides)
        self.keep = keep
        self.dl = DLTensor()
        self.dl.data = data
        self.dl.device = DLDevice(device_type, device_id)
        self.dl.ndim = n
        self.dl.dtype = DLDataType(code, bits, 1)
        self.dl.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        self.dl.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        self.dl.byte_offset = 0


def borrow(x):
    """A _Borrowed DLTensor over a CPU or CUDA torch tensor or a numpy array
    (no copy: a CUDA tensor's DLTensor holds its device address, kDLCUDA)."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch
        if x.device.type not in ("cpu", "cuda"):
            raise KilnError(12, "kiln's C API reads CPU and CUDA tensors; got a %s tensor" % x.device.type)
        if x.layout != torch.strided:
            raise KilnError(3, "only strided tensors are supported, got %s" % x.layout)
        x = x.detach()
        if x.is_conj() or x.is_neg():
            x = x.resolve_conj().resolve_neg()
        code_bits = _torch_dtypes().get(x.dtype)
        if code_bits is None:
            raise KilnError(3, "unsupported dtype %s" % x.dtype)
        device = (_DL_CUDA, x.device.index or 0) if x.device.type == "cuda" else (_DL_CPU, 0)
        return _Borrowed(x.data_ptr() if x.numel() else None, code_bits[0], code_bits[1],
                         list(x.shape), list(x.stride()), x, device[0], device[1])
    import numpy as np
    a = np.asarray(x)
    if a.dtype.kind not in _NUMPY_KINDS or a.dtype.byteorder == ">":
        raise KilnError(3, "unsupported dtype %s" % a.dtype)
    if any(s % a.itemsize for s in a.strides):
        a = np.ascontiguousarray(a)
    return _Borrowed(a.ctypes.data if a.size else None, _NUMPY_KINDS[a.dtype.kind], a.itemsize * 8,
                     list(a.shape), [s // a.itemsize for s in a.strides], a)


def pointer_array(borrowed):
    arr = (ctypes.POINTER(DLTensor) * max(len(borrowed), 1))()
    for i, b in enumerate(borrowed):
        arr[i] = ctypes.pointer(b.dl)
    return arr


# ---------------------------------------------------------------------------
# Tensors out: DLManagedTensors adopted by torch or numpy.

_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _release(managed):
    if managed and managed.contents.deleter:
        managed.contents.deleter(managed)


def to_torch(managed):
    """A torch tensor sharing the output's memory (the deleter runs when the
    tensor dies). torch 1.x reads no bool code: those come back as uint8 and
    are converted (a copy)."""
    import torch
    from torch.utils import dlpack
    dt = managed.contents.dl_tensor.dtype
    as_bool = dt.code == KILNC_DL_BOOL
    if as_bool and int(torch.__version__.split(".")[0]) < 2:
        dt.code = _DL_UINT
    else:
        as_bool = False
    try:
        t = dlpack.from_dlpack(_PyCapsule_New(ctypes.cast(managed, ctypes.c_void_p), b"dltensor", None))
    except Exception:
        _release(managed)
        raise
    return t.to(torch.bool) if as_bool else t


class _DLPackHolder:
    """What numpy.from_dlpack wants: __dlpack__ and __dlpack_device__."""

    def __init__(self, managed):
        self.managed = managed

    def __dlpack__(self, stream=None):
        m, self.managed = self.managed, None
        return _PyCapsule_New(ctypes.cast(m, ctypes.c_void_p), b"dltensor", None)

    def __dlpack_device__(self):
        return (_DL_CPU, 0)


def to_numpy(managed):
    import numpy as np
    dt = managed.contents.dl_tensor.dtype
    as_bool = dt.code == KILNC_DL_BOOL
    if as_bool:
        dt.code = _DL_UINT  # numpy before 1.25 reads no bool code
    try:
        a = np.from_dlpack(_DLPackHolder(managed))
    except Exception:
        _release(managed)
        raise
    return a.astype(bool) if as_bool else a


# ---------------------------------------------------------------------------


def _is_cuda_device(device):
    return bool(device) and (device == "cuda" or device.startswith("cuda:"))


class Model:
    """A compiled kiln model: model(x, y) or model.run([x, y]), tensors in the
    graph's input order; a list of outputs comes back, torch tensors when the
    inputs were torch tensors, else numpy arrays. A model compiled for CUDA
    (`device` "cuda" or "cuda:i") takes CUDA tensors of that device (read in
    place; CPU tensors are copied up) and returns CUDA torch tensors, its
    work queued on torch's current stream of the device (or `stream`: a
    torch.cuda.Stream or a raw CUstream handle)."""

    def __init__(self, handle, keep_alive=(), device="cpu"):
        self._handle = handle
        self._keep = list(keep_alive)  # constants the model reads in place
        self.device = device or "cpu"
        l = lib()
        self.num_inputs = l.kilnc_model_num_inputs(handle)
        self.num_outputs = l.kilnc_model_num_outputs(handle)
        self.summary = json.loads(l.kilnc_model_summary(handle).decode())
        self._free = l.kilnc_model_free

    def __del__(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            self._free(h)

    def _stream(self, stream):
        """The CUstream handle to run on: `stream` as given, else torch's
        current stream of the model's device (0: the legacy default)."""
        if stream is not None:
            return int(getattr(stream, "cuda_stream", stream) or 0)
        import torch
        index = int(self.device.split(":")[1]) if ":" in self.device else 0
        return int(torch.cuda.current_stream(index).cuda_stream or 0)

    def run(self, inputs, as_torch=None, stream=None):
        inputs = list(inputs)
        on_cuda = _is_cuda_device(self.device)
        if as_torch is None:
            as_torch = on_cuda or any(type(x).__module__.startswith("torch") for x in inputs)
        if on_cuda and not as_torch:
            raise KilnError(3, "a model compiled for %s returns CUDA tensors: run it with as_torch=True"
                            % self.device)
        borrowed = [borrow(x) for x in inputs]
        outs = (ctypes.POINTER(DLManagedTensor) * max(self.num_outputs, 1))()
        if on_cuda:
            raw_stream = self._stream(stream)
        else:  # a CPU model takes no stream: the C API says so
            raw_stream = int(getattr(stream, "cuda_stream", stream) or 0) if stream is not None else 0
        check(lib().kilnc_model_run_stream(self._handle, raw_stream or None, pointer_array(borrowed),
                                          len(borrowed), outs, self.num_outputs))
        managed = [outs[i] for i in range(self.num_outputs)]
        convert = to_torch if as_torch else to_numpy
        result = []
        try:
            for m in managed:
                result.append(convert(m))
        finally:
            for m in managed[len(result) + 1:]:
                _release(m)
        return result

    def __call__(self, *inputs):
        return self.run(inputs)


def _options(device, pipeline, max_specializations):
    return CompileOptions(device.encode() if device else None, pipeline.encode() if pipeline else None,
                          int(max_specializations or 0))


def compile_file(path, example_inputs=None, device="cpu", pipeline=None, max_specializations=0):
    borrowed = []
    for x in example_inputs or ():
        borrowed.append(borrow(x))
    handle = ctypes.c_void_p()
    opts = _options(device, pipeline, max_specializations)
    check(lib().kilnc_compile_file(os.fsencode(path), ctypes.byref(opts), pointer_array(borrowed),
                                  len(borrowed), ctypes.byref(handle)))
    return Model(handle, device=device)


def compile_export_json(program_json, constants, origin="<fx graph>", device="cpu", pipeline=None,
                        max_specializations=0):
    """`constants`: {FQN: tensor}; they stay referenced by the Model. The C
    API reads constants on the host: CUDA ones (a CUDA module's parameters)
    are copied to the CPU once, here; a CUDA model uploads them at compile."""
    data = program_json.encode() if isinstance(program_json, str) else program_json
    names = list(constants)
    host = [_on_host(constants[n]) for n in names]
    borrowed = [borrow(c) for c in host]
    name_arr = (ctypes.c_char_p * max(len(names), 1))(*[n.encode() for n in names])
    handle = ctypes.c_void_p()
    opts = _options(device, pipeline, max_specializations)
    check(lib().kilnc_compile_export_json(data, len(data), origin.encode(), name_arr, pointer_array(borrowed),
                                         len(borrowed), ctypes.byref(opts), ctypes.byref(handle)))
    return Model(handle, keep_alive=[b.keep for b in borrowed], device=device)


def _on_host(x):
    if type(x).__module__.startswith("torch") and x.device.type != "cpu":
        return x.detach().cpu()
    return x
