"""An FX graph of aten ops -> torch.export's serialized program (JSON).

kiln reads torch.export programs (frontend/pt2: schema version 8, the
models/<name>.json of a .pt2 archive) and maps every aten op onto kiln IR
there. This module writes an FX GraphModule whose call_function nodes are
aten OpOverloads (make_fx, AOTAutograd, torch.export) in that same form, so
FX graphs go through the very same op mapping:

  placeholder            -> a user input (its example tensor gives the meta)
  get_attr (a tensor)    -> a parameter / buffer / tensor constant, by name
  torch.ops.<ns>.<op>    -> a node, arguments named after the op's schema
  operator.getitem       -> names one output of a multi-output node
  output                 -> user outputs (tensors; None and repeated outputs
                            are put back by the caller, see `OutputPlan`)

Values without a tensor meta (node.meta["val"] / ["tensor_meta"]) get one
from a run of the graph on the example inputs (torch.fx ShapeProp), so a
graph traced without metadata (torch 1.13's make_fx) still exports.
"""
import json
import math
import operator

import torch
import torch.fx
import torch.fx.passes.shape_prop

SCHEMA_VERSION = {"major": 8, "minor": 17}

# torch.export's serialized ScalarType / MemoryFormat / Layout codes.
_SCALAR_TYPES = {
    torch.uint8: 1, torch.int8: 2, torch.int16: 3, torch.int32: 4, torch.int64: 5,
    torch.float16: 6, torch.float32: 7, torch.float64: 8, torch.complex64: 10,
    torch.bool: 12, torch.bfloat16: 13,
}
_MEMORY_FORMATS = {
    torch.contiguous_format: 1, torch.channels_last: 2, torch.channels_last_3d: 3,
    torch.preserve_format: 4,
}
_STRIDED_LAYOUT = 7


class UnsupportedGraph(Exception):
    """The graph has something kiln's export form cannot carry; the message
    names the node and the op."""


def op_target(op):
    """"torch.ops.aten.add.Tensor" for aten.add.Tensor."""
    schema = op._schema
    ns, _, name = schema.name.partition("::")
    return "torch.ops.%s.%s.%s" % (ns, name, schema.overload_name or "default")


def _is_op_overload(target):
    return isinstance(target, torch._ops.OpOverload)


def _tensor_meta(t):
    sizes = [int(s) for s in t.shape]
    strides = [int(s) for s in t.stride()] if t.layout == torch.strided else []
    if t.dtype not in _SCALAR_TYPES:
        raise UnsupportedGraph("dtype %s" % t.dtype)
    return {
        "dtype": _SCALAR_TYPES[t.dtype],
        "sizes": [{"as_int": s} for s in sizes],
        "strides": [{"as_int": s} for s in strides],
        "storage_offset": {"as_int": 0},
        "requires_grad": False,
        "device": {"type": "cpu", "index": None},
        "layout": _STRIDED_LAYOUT,
    }


def _float(v):
    """A float as torch.export writes it: non-finite ones as strings (JSON
    has no infinities)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _static(t):
    """Whether every size and stride is a plain int (no SymInt)."""
    return all(isinstance(s, int) for s in t.shape) and all(isinstance(s, int) for s in t.stride())


# How a schema's Tensor[] prints: torch 1.13 "Tensor[]", torch 2.x "List[Tensor]".
_TENSOR_LIST_TYPES = ("Tensor[]", "List[Tensor]")


class _Exporter:
    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.values = {}  # FX node -> example value (tensor / tuple of tensors)
        self.tensor_values = {}  # name -> TensorMeta JSON
        self.constants = {}  # FQN -> tensor
        self.nodes = []
        self.multi = {}  # multi-output node -> [output names]

    # -- metadata ----------------------------------------------------------

    def collect_values(self, use_meta):
        nodes = list(self.gm.graph.nodes)
        missing = not use_meta
        for n in nodes if use_meta else ():
            v = n.meta.get("val", None)
            if v is None and "tensor_meta" in n.meta:
                v = n.meta["tensor_meta"]
            if v is None and n.op not in ("output",):
                missing = True
            self.values[n] = v
        if not missing:
            return
        # Run the graph to learn every value's shape.
        if any(getattr(x, "_is_fake", False) or type(x).__name__ == "FakeTensor" for x in self.example_inputs):
            raise UnsupportedGraph("fake example inputs and a graph without metadata")
        env = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(inner, n):
                r = super().run_node(n)
                env[n] = r
                return r

        with torch.no_grad():
            Recorder(self.gm).run(*self.example_inputs)
        for n in nodes:
            if n in env:
                self.values[n] = env[n]

    def meta_of(self, name, value, node):
        if isinstance(value, torch.fx.passes.shape_prop.TensorMetadata):
            sizes, strides, dtype = list(value.shape), list(value.stride), value.dtype
            if dtype not in _SCALAR_TYPES:
                raise UnsupportedGraph("node '%s': dtype %s" % (node.name, dtype))
            self.tensor_values[name] = {
                "dtype": _SCALAR_TYPES[dtype], "sizes": [{"as_int": int(s)} for s in sizes],
                "strides": [{"as_int": int(s)} for s in strides], "storage_offset": {"as_int": 0},
                "requires_grad": False, "device": {"type": "cpu", "index": None}, "layout": _STRIDED_LAYOUT}
            return
        if not isinstance(value, torch.Tensor):
            raise UnsupportedGraph("node '%s' (%s): value is a %s, not a tensor"
                                   % (node.name, node.target, type(value).__name__))
        if not _static(value):
            raise UnsupportedGraph("node '%s': symbolic shapes (compile with dynamic=False)" % node.name)
        try:
            self.tensor_values[name] = _tensor_meta(value)
        except UnsupportedGraph as e:
            raise UnsupportedGraph("node '%s': %s" % (node.name, e))

    # -- arguments ---------------------------------------------------------

    def arg(self, value, node, schema_type):
        t = str(schema_type)
        if isinstance(value, torch.fx.Node):
            if value in self.multi:
                raise UnsupportedGraph("node '%s' (%s): passes a tuple value" % (node.name, op_target(node.target)))
            if t.startswith("SymInt") or t.startswith("int") or t.startswith("Scalar"):
                raise UnsupportedGraph("node '%s' (%s): symbolic scalar argument '%s'"
                                       % (node.name, op_target(node.target), value.name))
            return {"as_tensor": {"name": value.name}}
        if value is None:
            return {"as_none": True}
        if isinstance(value, bool):
            return {"as_bool": value}
        if isinstance(value, int):
            return {"as_int": value}
        if isinstance(value, float):
            return {"as_float": _float(value)}
        if isinstance(value, str):
            return {"as_string": value}
        if isinstance(value, torch.dtype):
            if value not in _SCALAR_TYPES:
                raise UnsupportedGraph("node '%s': dtype %s" % (node.name, value))
            return {"as_scalar_type": _SCALAR_TYPES[value]}
        if isinstance(value, torch.memory_format):
            return {"as_memory_format": _MEMORY_FORMATS[value]}
        if isinstance(value, torch.layout):
            if value != torch.strided:
                raise UnsupportedGraph("node '%s': layout %s" % (node.name, value))
            return {"as_layout": _STRIDED_LAYOUT}
        if isinstance(value, torch.device):
            # kiln compiles for one device; the graph's own moves are no-ops.
            return {"as_device": {"type": "cpu", "index": None}}
        if isinstance(value, (list, tuple)):
            if any(isinstance(v, torch.fx.Node) for v in value) or "Tensor" in t:
                if "Optional[Tensor]" in t or "Tensor?" in t:
                    return {"as_optional_tensors": [
                        {"as_none": True} if v is None else {"as_tensor": {"name": v.name}} for v in value]}
                if any(not isinstance(v, torch.fx.Node) for v in value):
                    raise UnsupportedGraph("node '%s' (%s): a list mixing tensors and constants"
                                           % (node.name, op_target(node.target)))
                return {"as_tensors": [{"name": v.name} for v in value]}
            if all(isinstance(v, bool) for v in value) and value and "bool" in t:
                return {"as_bools": list(value)}
            if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                return {"as_ints": list(value)}
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                return {"as_floats": [_float(float(v)) for v in value]}
        raise UnsupportedGraph("node '%s' (%s): argument of type %s" % (
            node.name, op_target(node.target) if _is_op_overload(node.target) else node.target,
            type(value).__name__))

    # -- nodes -------------------------------------------------------------

    def call(self, node):
        op = node.target
        schema = op._schema
        inputs = []
        args = list(node.args)
        kwargs = dict(node.kwargs)
        for i, a in enumerate(schema.arguments):
            if i < len(args):
                value = args[i]
            elif a.name in kwargs:
                value = kwargs.pop(a.name)
            else:
                continue  # the schema's default
            inputs.append({"name": a.name, "arg": self.arg(value, node, a.type),
                           "kind": 2 if a.kwarg_only else 1})
        if len(args) > len(schema.arguments) or kwargs:
            raise UnsupportedGraph("node '%s' (%s): arguments do not match its schema"
                                   % (node.name, op_target(op)))
        outputs = []
        returns = schema.returns
        value = self.values.get(node)
        if len(returns) == 1 and str(returns[0].type) == "Tensor":
            self.meta_of(node.name, value, node)
            outputs.append({"as_tensor": {"name": node.name}})
        elif len(returns) == 1 and str(returns[0].type) in _TENSOR_LIST_TYPES:
            names = self.getitem_names(node, len(value))
            for name, v in zip(names, value):
                self.meta_of(name, v, node)
            outputs.append({"as_tensors": [{"name": n} for n in names]})
        elif all(str(r.type) == "Tensor" for r in returns) and returns:
            names = self.getitem_names(node, len(returns))
            for name, v in zip(names, value):
                self.meta_of(name, v, node)
            outputs = [{"as_tensor": {"name": n}} for n in names]
        else:
            raise UnsupportedGraph("node '%s' (%s): returns %s" % (
                node.name, op_target(op), ", ".join(str(r.type) for r in returns) or "nothing"))
        self.nodes.append({"target": op_target(op), "name": node.name, "inputs": inputs,
                           "outputs": outputs, "metadata": {}})

    def getitem_names(self, node, count):
        names = ["%s__%d" % (node.name, i) for i in range(count)]
        for user in node.users:
            if user.op == "call_function" and user.target is operator.getitem:
                names[user.args[1]] = user.name
            else:
                raise UnsupportedGraph("node '%s' uses the tuple of '%s' as a whole" % (user.name, node.name))
        self.multi[node] = names
        return names

    def export(self, use_meta):
        self.collect_values(use_meta)
        graph_inputs, input_specs = [], []
        user_inputs = []
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                v = self.values.get(n)
                if not isinstance(v, torch.Tensor) and not isinstance(
                        v, torch.fx.passes.shape_prop.TensorMetadata):
                    raise UnsupportedGraph("input '%s' is a %s, not a tensor" % (n.name, type(v).__name__))
                self.meta_of(n.name, v, n)
                user_inputs.append(n)
            elif n.op == "get_attr":
                value = _get_attr(self.gm, n.target)
                if not isinstance(value, torch.Tensor):
                    raise UnsupportedGraph("get_attr '%s' is a %s, not a tensor" % (n.target, type(value).__name__))
                self.meta_of(n.name, value, n)
                self.constants[n.target] = value.detach()
                kind = "parameter" if isinstance(value, torch.nn.Parameter) else "tensor_constant"
                field = {"parameter": "parameter_name", "tensor_constant": "tensor_constant_name"}[kind]
                graph_inputs.append({"as_tensor": {"name": n.name}})
                input_specs.append({kind: {"arg": {"name": n.name}, field: n.target}})
            elif n.op == "call_function":
                if n.target is operator.getitem:
                    if n.args[0] not in self.multi:
                        raise UnsupportedGraph("node '%s': getitem of '%s', which is not an op's tuple"
                                               % (n.name, n.args[0]))
                    continue
                if not _is_op_overload(n.target):
                    raise UnsupportedGraph("node '%s': %s is not an aten op (trace with make_fx or AOTAutograd)"
                                           % (n.name, getattr(n.target, "__name__", n.target)))
                self.call(n)
            elif n.op == "output":
                outputs = n.args[0]
            else:
                raise UnsupportedGraph("node '%s': %s nodes are not supported (trace to aten ops first)"
                                       % (n.name, n.op))
        for n in user_inputs:
            graph_inputs.append({"as_tensor": {"name": n.name}})
            input_specs.append({"user_input": {"arg": {"as_tensor": {"name": n.name}}}})
        plan = OutputPlan(outputs)
        graph_outputs = [{"as_tensor": {"name": name}} for name in plan.names]
        program = {
            "graph_module": {
                "graph": {"inputs": graph_inputs, "outputs": graph_outputs, "nodes": self.nodes,
                          "tensor_values": self.tensor_values, "sym_int_values": {}, "sym_bool_values": {},
                          "is_single_tensor_return": False},
                "signature": {"input_specs": input_specs,
                              "output_specs": [{"user_output": {"arg": o}} for o in graph_outputs]},
                "module_call_graph": [], "metadata": {}},
            "opset_version": {"aten": 10}, "range_constraints": {},
            "schema_version": SCHEMA_VERSION, "verifiers": [], "torch_version": torch.__version__,
        }
        return json.dumps(program, separators=(",", ":"), allow_nan=False), self.constants, plan


class OutputPlan:
    """The graph's output structure: kiln returns each distinct tensor once;
    `rebuild` puts them back (with Nones and repeats) as the FX graph
    returns them."""

    def __init__(self, outputs):
        self.single = isinstance(outputs, torch.fx.Node)
        items = [outputs] if self.single else list(outputs)
        self.names = []
        self.slots = []  # index into kiln's outputs, or None
        for o in items:
            if o is None:
                self.slots.append(None)
                continue
            if not isinstance(o, torch.fx.Node):
                raise UnsupportedGraph("output %r is not a tensor" % (o,))
            if o.name not in self.names:
                self.names.append(o.name)
            self.slots.append(self.names.index(o.name))

    def rebuild(self, results):
        out = [None if s is None else results[s] for s in self.slots]
        return out[0] if self.single else out


def _get_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def export_graph(gm, example_inputs, use_meta=True):
    """(program JSON, {FQN: tensor}, OutputPlan) for an FX GraphModule of
    aten ops; UnsupportedGraph names what cannot be exported. use_meta=False
    ignores the nodes' recorded metadata and runs the graph on
    `example_inputs` (real tensors) instead: a graph traced at other shapes."""
    return _Exporter(gm, example_inputs).export(use_meta)
