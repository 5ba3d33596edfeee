#!/usr/bin/python3
"""Writes the small ONNX fixtures of tools/kiln_model_cli_test.sh.

Run from the repository root with Debian's python3 (python3-onnx):
    /usr/bin/python3 tools/testdata/make_models.py
Each fixture is a model that once crashed, hung or misled the CLI (issue 13),
or checks one promise of `kiln run` / `kiln conformance`.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14


def save(model, *path):
    full = os.path.join(HERE, *path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    onnx.save(model, full)


def save_tensor(array, *path):
    full = os.path.join(HERE, *path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


def model(nodes, inputs, outputs, initializers=(), opset=OPSET, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln tools/testdata/make_models.py")
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    # add_one: y = x + 1. Its test data's expected output is off by 0.01, so
    # the default tolerance (rtol 1e-3, atol 1e-7) fails and --atol 0.05
    # passes: `kiln conformance` and `kiln run --inputs` read the same files.
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    add_one = model([helper.make_node("Add", ["x", "one"], ["y"], name="add_node")],
                    [f32("x", [4])], [f32("y", [4])], [one])
    save(add_one, "tolerance", "test_add_one", "model.onnx")
    x = np.array([0.5, 1.0, 2.0, 3.5], dtype=np.float32)
    save_tensor(x, "tolerance", "test_add_one", "test_data_set_0", "input_0.pb")
    save_tensor(x + 1 + 0.01, "tolerance", "test_add_one", "test_data_set_0", "output_0.pb")

    # nan_expected: the same model, but its expected output holds a NaN
    # where the model computes a number: a NaN difference is a mismatch.
    save(add_one, "nan_expected", "model.onnx")
    save_tensor(x, "nan_expected", "test_data_set_0", "input_0.pb")
    expected = x + 1
    expected[2] = np.nan
    save_tensor(expected, "nan_expected", "test_data_set_0", "output_0.pb")

    # huge_input: an input declared [2^20, 2^20] (4 TiB of float32).
    big = 1 << 20
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
               [f32("x", [big, big])], [f32("y", [big, big])]), "huge_input.onnx")

    # expand_huge: a [1, 2^16] input expanded to [2^24, 2^16] (a stride-0
    # view of 2^40 elements) and returned.
    shape = numpy_helper.from_array(np.array([1 << 24, 1 << 16], dtype=np.int64), "shape")
    save(model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")],
               [f32("x", [1, 1 << 16])], [f32("y", [1 << 24, 1 << 16])], [shape]),
         "expand_huge.onnx")

    # opset_99: a Relu that claims an ai.onnx opset no one has written yet.
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
               [f32("x", [2])], [f32("y", [2])], opset=99), "opset_99.onnx")

    # gather_out_of_range: a Gather whose indices come from the input data;
    # its test data indexes past the end, so running it fails at node
    # "/encoder/Gather_7" (PyTorch's node-name style).
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [1])
    gather = model([helper.make_node("Gather", ["x", "idx"], ["y"], name="/encoder/Gather_7")],
                   [f32("x", [3]), idx], [f32("y", [1])])
    save(gather, "gather_out_of_range", "model.onnx")
    save_tensor(np.array([1, 2, 3], dtype=np.float32),
                "gather_out_of_range", "test_data_set_0", "input_0.pb")
    save_tensor(np.array([7], dtype=np.int64),
                "gather_out_of_range", "test_data_set_0", "input_1.pb")

    # control_bytes: value and node names holding terminal escapes (clear
    # screen, bell, a C1 CSI) that kiln must never print raw.
    evil = "y\x1b[2J\x07\xc2\x9b31m"
    save(model([helper.make_node("Relu", ["x"], [evil], name="relu\x1b]0;pwned\x07"),
                helper.make_node("Gather", ["x", "i"], ["g"], name="gather\x1b[5m")],
               [f32("x", [3]), helper.make_tensor_value_info("i", TensorProto.INT64, [1])],
               [f32(evil, [3]), f32("g", [1])]), "control_bytes", "model.onnx")
    save_tensor(np.array([1, 2, 3], dtype=np.float32),
                "control_bytes", "test_data_set_0", "input_0.pb")
    save_tensor(np.array([9], dtype=np.int64), "control_bytes", "test_data_set_0", "input_1.pb")


if __name__ == "__main__":
    main()
