#!/usr/bin/env python3
"""ONNX TensorProto files (test_data_set_0/*.pb) <-> the example's raw files.

  onnx_tensors.py to-raw IN.pb OUT.bin        the tensor's bytes (little-endian)
  onnx_tensors.py compare ACTUAL.bin EXPECTED.pb [--atol A --rtol R]
      exit 0 when |actual - expected| <= atol + rtol * |expected| everywhere
      (NaN matches NaN), else 1 with the largest difference
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("to-raw")
    r.add_argument("pb")
    r.add_argument("out")
    c = sub.add_parser("compare")
    c.add_argument("actual")
    c.add_argument("expected")
    c.add_argument("--atol", type=float, default=1e-5)
    c.add_argument("--rtol", type=float, default=1e-3)
    a = ap.parse_args()
    if a.cmd == "to-raw":
        array = load(a.pb)
        np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tofile(a.out)
        return 0
    expected = load(a.expected)
    actual = np.fromfile(a.actual, dtype=expected.dtype.newbyteorder("<"))
    if actual.size != expected.size:
        print("compare: %s has %d elements, %s %d" % (a.actual, actual.size, a.expected, expected.size))
        return 1
    actual = actual.reshape(expected.shape)
    if expected.dtype.kind in "fc":
        both_nan = np.isnan(actual) & np.isnan(expected)
        diff = np.where(both_nan, 0, np.abs(actual.astype(np.float64) - expected.astype(np.float64)))
        bound = a.atol + a.rtol * np.abs(expected.astype(np.float64))
        ok = bool(np.all(diff <= bound))
        print("compare: %s max |diff| %.3g (%s)" % (a.actual, float(np.nanmax(diff)) if diff.size else 0.0,
                                                   "ok" if ok else "FAILED"))
        return 0 if ok else 1
    ok = bool(np.array_equal(actual, expected))
    print("compare: %s %s" % (a.actual, "equal" if ok else "DIFFERENT"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
