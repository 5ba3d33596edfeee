"""kiln.compile: an FX GraphModule -> a callable that runs it through kiln.

A graph that is not yet made of aten ops (torch.fx.symbolic_trace calls
modules and torch functions) is traced to aten ops with make_fx first. Ops
whose schema kiln's registry lacks are decomposed with torch's own
decompositions (torch._decomp) where torch has one. The aten graph is
written in torch.export's serialized form (fx_export) and compiled by
libkiln_c.so. A graph kiln cannot take falls back to eager, with a warning
that names the node and op.
"""
import collections
import functools
import operator
import warnings

import torch
import torch.fx

from . import _capi
from .fx_export import UnsupportedGraph, export_graph


class KilnFallbackWarning(UserWarning):
    """A graph runs eagerly because kiln could not compile it."""


def _qualified(op):
    schema = op._schema
    return schema.name + ("." + schema.overload_name if schema.overload_name else "")


@functools.lru_cache(maxsize=None)
def _decompositions_cached():
    from torch._decomp import decomposition_table
    from . import decompositions as kiln_decompositions
    table = {}
    for op, fn in decomposition_table.items():
        if not isinstance(op, torch._ops.OpOverload) or op._schema.overload_name == "out":
            continue
        if not _capi.has_operator(_qualified(op)):
            table[op] = fn
    for op, fn in kiln_decompositions.TABLE.items():
        if not _capi.has_operator(_qualified(op)):
            table[op] = fn
    return table


def decompositions():
    """torch's decompositions of the ops kiln's registry does not know, and
    kiln's own (kiln.decompositions) where torch has none."""
    return dict(_decompositions_cached())


def is_aten_graph(gm):
    for n in gm.graph.nodes:
        if n.op in ("call_module", "call_method"):
            return False
        if n.op == "call_function" and not (
                isinstance(n.target, torch._ops.OpOverload) or n.target is operator.getitem):
            return False
    return True


def to_aten(gm, example_inputs):
    """`gm` (any FX GraphModule or nn.Module) traced to aten ops."""
    from torch.fx.experimental.proxy_tensor import make_fx
    with torch.no_grad():
        traced = make_fx(gm, decomposition_table=decompositions())(*example_inputs)
    traced.graph.eliminate_dead_code()
    traced.recompile()
    return traced


def _device_of(inputs):
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            return x.device
    return torch.device("cpu")


def _signature(inputs):
    return tuple((tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else (type(x), x) for x in inputs)


def _check_ops(gm):
    for n in gm.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and \
                not _capi.has_operator(_qualified(n.target)):
            raise UnsupportedGraph("node '%s' (%s): kiln has no operator %s" % (
                n.name, n.target, _qualified(n.target)))


def _build(gm, example_inputs, device, pipeline, name, use_meta):
    """(kiln Model, OutputPlan); UnsupportedGraph / KilnError otherwise."""
    _check_ops(gm)
    program, constants, plan = export_graph(gm, example_inputs, use_meta=use_meta)
    model = _capi.compile_export_json(program, constants, origin="<fx %s>" % name, device=device,
                                      pipeline=pipeline)
    return model, plan


class CompiledGraph:
    """The callable kiln.compile returns: runs the kiln model, rebuilding the
    graph's output structure. The graph is compiled for its example inputs'
    shapes; a call with other shapes or dtypes compiles (once) a version for
    them (up to MAX_VERSIONS, least recently used out), or runs eagerly with
    a warning when kiln cannot. CUDA inputs run in place on a CUDA model
    (torch's current stream) and its outputs stay on the device; a model
    compiled for the CPU takes inputs from another device through host
    copies and returns its outputs to that device."""

    MAX_VERSIONS = 8

    def __init__(self, gm, key, model, plan, device, target, pipeline, name):
        self.graph_module = gm
        self.versions = collections.OrderedDict([(key, (model, plan))])
        self.device = device
        self._target = target
        self._pipeline = pipeline
        self._name = name
        # A CUDA model reads and returns CUDA tensors in place; any other
        # takes inputs from another device through the host.
        self._via_host = not _capi._is_cuda_device(target)

    @property
    def model(self):
        """The most recently used version's kiln.Model."""
        return next(reversed(self.versions.values()))[0]

    def _version(self, args):
        key = _signature(args)
        v = self.versions.get(key)
        if v is not None:
            self.versions.move_to_end(key)
            return v
        try:
            v = _build(self.graph_module, args, self._target, self._pipeline, self._name, use_meta=False)
        except (UnsupportedGraph, _capi.KilnError) as e:
            _warn_fallback("FX %s at new input shapes" % self._name, e)
            v = None
        self.versions[key] = v
        if len(self.versions) > self.MAX_VERSIONS:
            self.versions.popitem(last=False)
        return v

    def __call__(self, *args):
        v = self._version(args)
        if v is None:
            return self.graph_module(*args)
        model, plan = v
        host = self._via_host
        inputs = [a.detach().cpu() if host and a.device.type != "cpu" else a for a in args]
        results = model.run(inputs, as_torch=True)
        if host and self.device.type != "cpu":
            results = [r.to(self.device) for r in results]
        return plan.rebuild(results)


def _warn_fallback(what, err):
    warnings.warn("kiln: %s falls back to eager: %s" % (what, err), KilnFallbackWarning, stacklevel=3)


def compile_aten_graph(gm, example_inputs, device=None, pipeline=None, fallback=True, name="graph"):
    """Compiles an FX graph of aten ops; on failure (fallback=True) warns and
    returns `gm` itself."""
    example_inputs = list(example_inputs)
    target = device or ("cuda" if _device_of(example_inputs).type == "cuda" else "cpu")
    try:
        model, plan = _build(gm, example_inputs, target, pipeline, name, use_meta=True)
    except (UnsupportedGraph, _capi.KilnError) as e:
        if not fallback:
            raise
        _warn_fallback("FX %s" % name, e)
        return gm
    return CompiledGraph(gm, _signature(example_inputs), model, plan, _device_of(example_inputs), target,
                         pipeline, name)


def compile(gm, example_inputs, device=None, pipeline=None, fallback=True):
    """kiln.compile(graph_module, example_inputs) -> callable.

    `gm`: a torch.fx.GraphModule (of aten ops or not), an nn.Module, or a
    torch.export ExportedProgram;
    `example_inputs`: tensors in the graph's input order. Parameters and
    buffers are compiled in as constants read in place (do not change them
    afterwards: recompile instead). The callable returns what the graph
    returns, computed by kiln (no autograd; see kiln.dynamo for training).
    With fallback=True a graph kiln cannot compile runs eagerly after a
    KilnFallbackWarning naming the op; fallback=False raises instead.
    """
    example_inputs = list(example_inputs)
    if hasattr(gm, "graph_signature") and hasattr(gm, "module"):
        gm = gm.module()  # a torch.export ExportedProgram (torch 2.x)
    if not isinstance(gm, torch.fx.GraphModule) or not is_aten_graph(gm):
        try:
            gm = to_aten(gm, example_inputs)
        except Exception as e:  # tracing failures are torch's: keep the original
            if not fallback:
                raise
            _warn_fallback("tracing to aten ops", e)
            return gm
    return compile_aten_graph(gm, example_inputs, device=device, pipeline=pipeline, fallback=fallback)
