"""ONNX versions of compiled_bench's graphs (issue 12): the path users take
(an ONNX file -> import -> -O2 -> compile) next to the aten-built graphs.

Run: /usr/bin/python3 benchmarks/onnx/make_models.py   (Debian's python3-onnx 1.12)
Writes benchmarks/onnx/<name>.onnx; the files are checked in (they hold no
weights, a few hundred bytes each). compiled_bench's BM_Onnx* benchmarks
load them (run it from the repository root).

  row_sum            ReduceSum(x[4096, 4096], axes=[-1] as an input), opset 13
  softmax            Softmax(x[4096, 4096], axis=-1), opset 13
  layer_norm         LayerNormalization(x[8192, 1024], scale, bias, axis=-1), opset 17
  chain_addmul_8     x + 0.1, x * 0.9 alternating, 8 ops over 1.6e7 floats
  chain_trans_K      add 0.5, mul 1.1, tanh, sigmoid repeating, K = 4, 8, 16
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
CHAIN = 16_000_000


def save(name, nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="kiln benchmarks/onnx/make_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def scalar(name, value):
    return helper.make_tensor(name, TensorProto.FLOAT, [], [value])


def reduce_model(name, op, opset):
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
    save(name, [node], [f32("x", [4096, 4096])], [f32("y", [4096])], [axes], opset)


def softmax_model():
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
    save("softmax", [node], [f32("x", [4096, 4096])], [f32("y", [4096, 4096])], [], 13)


def layer_norm_model():
    node = helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=1e-5)
    save("layer_norm", [node], [f32("x", [8192, 1024]), f32("w", [1024]), f32("b", [1024])],
         [f32("y", [8192, 1024])], [], 17)


def chain_model(name, k, transcendental):
    consts = [scalar("ca", 0.5 if transcendental else 0.1), scalar("cm", 1.1 if transcendental else 0.9)]
    nodes, prev = [], "x"
    for i in range(k):
        out = "y" if i == k - 1 else f"t{i}"
        kind = i % 4 if transcendental else i % 2
        if kind == 0:
            nodes.append(helper.make_node("Add", [prev, "ca"], [out]))
        elif kind == 1:
            nodes.append(helper.make_node("Mul", [prev, "cm"], [out]))
        elif kind == 2:
            nodes.append(helper.make_node("Tanh", [prev], [out]))
        else:
            nodes.append(helper.make_node("Sigmoid", [prev], [out]))
        prev = out
    save(name, nodes, [f32("x", [CHAIN])], [f32("y", [CHAIN])], consts, 13)


def main():
    reduce_model("row_sum", "ReduceSum", 13)
    softmax_model()
    layer_norm_model()
    chain_model("chain_addmul_8", 8, False)
    for k in (4, 8, 16):
        chain_model(f"chain_trans_{k}", k, True)


if __name__ == "__main__":
    main()
