#!/usr/bin/env python3
"""Writes the seeds of //frontend/pt2:reader_fuzz (run from this folder).

A seed's first byte picks the mode (see reader_fuzz.cc): odd, the rest is a
model JSON that the fuzz target packages into an archive with one float32[3]
parameter "w"; even, the rest is a whole archive. The programs are small
versions of what torch.export writes (schema 8.17).
"""
import io
import json
import struct
import zipfile


def meta(dtype, sizes):
    def sym(s):
        return {"as_int": s} if isinstance(s, int) else {"as_expr": {"expr_str": s, "hint": {"as_int": 4}}}
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.insert(0, acc if isinstance(s, int) else 1)
        acc *= s if isinstance(s, int) else 1
    return {"dtype": dtype, "sizes": [sym(s) for s in sizes], "requires_grad": False,
            "device": {"type": "cpu", "index": None}, "strides": [sym(s) for s in strides],
            "storage_offset": {"as_int": 0}, "layout": 7}


def t(name):
    return {"as_tensor": {"name": name}}


def arg(name, value):
    return {"name": name, "arg": value, "kind": 1}


def node(target, name, inputs, outputs):
    return {"target": target, "name": name, "inputs": inputs, "outputs": outputs, "metadata": {}}


def program(nodes, out, metas, params=(), sym_ints=None, ranges=None):
    specs = [{"parameter": {"arg": {"name": "p_" + p}, "parameter_name": p}} for p in params]
    specs.append({"user_input": {"arg": t("x")}})
    return {
        "graph_module": {
            "graph": {"inputs": [t("p_" + p) for p in params] + [t("x")], "outputs": [t(out)],
                      "nodes": nodes, "tensor_values": metas, "sym_int_values": sym_ints or {},
                      "sym_bool_values": {}, "is_single_tensor_return": False},
            "signature": {"input_specs": specs,
                          "output_specs": [{"user_output": {"arg": t(out)}}]},
            "module_call_graph": [], "metadata": {}},
        "opset_version": {"aten": 10}, "range_constraints": ranges or {},
        "schema_version": {"major": 8, "minor": 17}, "verifiers": ["TRAINING"],
        "torch_version": "2.11.0"}


F = 7
seeds = {}

seeds["json_add_param"] = program(
    [node("torch.ops.aten.add.Tensor", "add", [arg("self", t("x")), arg("other", t("p_w"))], [t("add")]),
     node("torch.ops.aten.gelu.default", "y", [arg("self", t("add"))], [t("y")])],
    "y", {"x": meta(F, [2, 3]), "p_w": meta(F, [3]), "add": meta(F, [2, 3]), "y": meta(F, [2, 3])},
    params=["w"])

seeds["json_inplace_slice"] = program(
    [node("torch.ops.aten.new_zeros.default", "z", [arg("self", t("x")), arg("size", {"as_ints": [4, 3]})], [t("z")]),
     node("torch.ops.aten.slice.Tensor", "s", [arg("self", t("z")), arg("dim", {"as_int": 0}),
                                               arg("start", {"as_int": 1}), arg("end", {"as_int": 3})], [t("s")]),
     node("torch.ops.aten.add_.Tensor", "a", [arg("self", t("s")), arg("other", t("x"))], [t("a")]),
     node("torch.ops.aten.mul.Tensor", "y", [arg("self", t("z")), arg("other", {"as_float": 0.5})], [t("y")])],
    "y", {"x": meta(F, [2, 3]), "z": meta(F, [4, 3]), "s": meta(F, [2, 3]), "a": meta(F, [2, 3]),
          "y": meta(F, [4, 3])})

seeds["json_dynamic"] = program(
    [node("torch.ops.aten.sym_size.int", "n", [arg("self", t("x")), arg("dim", {"as_int": 0})],
          [{"as_sym_int": {"as_name": "n"}}]),
     node("_operator.mul", "m", [arg("a", {"as_sym_int": {"as_name": "n"}}), arg("b", {"as_int": 3})],
          [{"as_sym_int": {"as_name": "m"}}]),
     node("torch.ops.aten.view.default", "y", [arg("self", t("x")), arg("size", {"as_sym_ints": [{"as_name": "m"}]})],
          [t("y")])],
    "y", {"x": meta(F, ["Symbol('s0', positive=True, integer=True)", 3]),
          "y": meta(F, ["Mul(Integer(3), Symbol('s0', positive=True, integer=True))"])},
    sym_ints={"n": {"as_expr": {"expr_str": "s0", "hint": {"as_int": 4}}},
              "m": {"as_expr": {"expr_str": "3*s0", "hint": {"as_int": 12}}}},
    ranges={"s0": {"min_val": 2, "max_val": 64}})

sub = {"inputs": [t("a")], "outputs": [t("r")],
       "nodes": [node("torch.ops.aten.relu.default", "r", [arg("self", t("a"))], [t("r")])],
       "tensor_values": {"a": meta(F, [2, 3]), "r": meta(F, [2, 3])}, "sym_int_values": {},
       "sym_bool_values": {}, "is_single_tensor_return": False}
seeds["json_cond"] = program(
    [node("torch.ops.aten.gt.Scalar", "p", [arg("self", t("x")), arg("other", {"as_int": 0})], [t("p")]),
     node("torch.ops.aten.any.default", "q", [arg("self", t("p"))], [t("q")]),
     node("torch.ops.higher_order.cond", "y",
          [arg("pred", t("q")), arg("true_fn", {"as_graph": {"name": "t", "graph": sub}}),
           arg("false_fn", {"as_graph": {"name": "f", "graph": sub}}),
           arg("operands", {"as_tensors": [{"name": "x"}]})], [t("y")])],
    "y", {"x": meta(F, [2, 3]), "p": meta(12, [2, 3]), "q": meta(12, []), "y": meta(F, [2, 3])})

seeds["json_sdpa_split"] = program(
    [node("torch.ops.aten.split.Tensor", "sp", [arg("self", t("x")), arg("split_size", {"as_int": 1}),
                                                arg("dim", {"as_int": 0})],
          [{"as_tensors": [{"name": "a"}, {"name": "b"}]}]),
     node("torch.ops.aten.scaled_dot_product_attention.default", "y",
          [arg("query", t("a")), arg("key", t("b")), arg("value", t("b")),
           arg("is_causal", {"as_bool": True})], [t("y")])],
    "y", {"x": meta(F, [2, 3]), "a": meta(F, [1, 3]), "b": meta(F, [1, 3]), "y": meta(F, [1, 3])})

loop_metas = {"i": meta(5, []), "acc": meta(F, [2, 3]), "xx": meta(F, [2, 3])}
cond_fn = {"inputs": [t("i"), t("acc"), t("xx")], "outputs": [t("c")],
           "nodes": [node("torch.ops.aten.lt.Scalar", "c", [arg("self", t("i")), arg("other", {"as_int": 3})], [t("c")])],
           "tensor_values": dict(loop_metas, c=meta(12, [])), "sym_int_values": {}, "sym_bool_values": {},
           "is_single_tensor_return": False}
body_fn = {"inputs": [t("i"), t("acc"), t("xx")], "outputs": [t("i2"), t("a2")],
           "nodes": [node("torch.ops.aten.add.Tensor", "i2", [arg("self", t("i")), arg("other", {"as_int": 1})], [t("i2")]),
                     node("torch.ops.aten.add.Tensor", "a2", [arg("self", t("acc")), arg("other", t("xx"))], [t("a2")])],
           "tensor_values": dict(loop_metas, i2=meta(5, []), a2=meta(F, [2, 3])), "sym_int_values": {},
           "sym_bool_values": {}, "is_single_tensor_return": False}
seeds["json_while_loop"] = program(
    [node("torch.ops.aten.scalar_tensor.default", "i0", [arg("s", {"as_int": 0}), arg("dtype", {"as_scalar_type": 5})], [t("i0")]),
     node("torch.ops.aten.zeros_like.default", "z", [arg("self", t("x"))], [t("z")]),
     node("torch.ops.higher_order.while_loop", "w",
          [arg("", {"as_graph": {"name": "cond", "graph": cond_fn}}),
           arg("", {"as_graph": {"name": "body", "graph": body_fn}}),
           arg("", {"as_tensors": [{"name": "i0"}, {"name": "z"}]}), arg("", {"as_tensors": [{"name": "x"}]})],
          [t("n"), t("y")])],
    "y", {"x": meta(F, [2, 3]), "i0": meta(5, []), "z": meta(F, [2, 3]), "n": meta(5, []), "y": meta(F, [2, 3])})

for name, p in seeds.items():
    with open(name, "wb") as f:
        f.write(b"\x01" + json.dumps(p, separators=(",", ":")).encode())

# One whole archive (stored entries, as torch writes them).
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
    cfg = {"config": {"w": {"path_name": "weight_0", "is_param": True, "use_pickle": False,
                            "tensor_meta": meta(F, [3])}}}
    z.writestr("model/data/weights/weight_0", struct.pack("<3f", 1, 2, 3))
    z.writestr("model/data/weights/model_weights_config.json", json.dumps(cfg))
    z.writestr("model/data/constants/model_constants_config.json", '{"config": {}}')
    z.writestr("model/models/model.json", json.dumps(seeds["json_add_param"], separators=(",", ":")))
    z.writestr("model/archive_format", "pt2")
    z.writestr("model/archive_version", "0")
    z.writestr("model/byteorder", "little")
with open("zip_add_param", "wb") as f:
    f.write(b"\x00" + buf.getvalue())
