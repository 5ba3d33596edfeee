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


if __name__ == "__main__":
    main()
