"""Tests of the `kiln` Python package with Debian's torch 1.13 (CPU only).

Run by //python:kiln_python_test (PYTHONPATH has the package, KILN_C_LIBRARY
the library, KILN_TESTDATA the repository's testdata/). Every compiled
result is compared with eager PyTorch or with PyTorch's recorded outputs.
"""
import copy
import math
import os
import sys
import unittest
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.fx
import torchvision

import kiln
import kiln.decompositions
import kiln.dynamo
import kiln.freezing
import kiln.fx_compile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training  # noqa: E402 (next to this file)

TESTDATA = os.environ.get("KILN_TESTDATA", "testdata")
RTOL, ATOL = 1e-4, 1e-5


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 64)
        self.l2 = torch.nn.Linear(64, 32)
        self.l3 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.l3(torch.nn.functional.gelu(self.l2(torch.relu(self.l1(x)))))


class SmallCNN(torch.nn.Module):
    def __init__(self, batch_norm=True):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = torch.nn.BatchNorm2d(8) if batch_norm else torch.nn.Identity()
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.b1(self.c1(x))), 2)
        x = torch.relu(self.c2(x))
        x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return torch.log_softmax(self.fc(x), -1)


def randomize_batch_norm(m):
    """Non-trivial running statistics, so that eval-mode batch norm matters."""
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
    return m


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(t).copy()


class FxCompileTest(unittest.TestCase):
    def check_module(self, m, x):
        gm = torch.fx.symbolic_trace(m)
        with warnings.catch_warnings():
            warnings.simplefilter("error", kiln.fx_compile.KilnFallbackWarning)
            f = kiln.compile(gm, [x], fallback=False)
        self.assertIsInstance(f, kiln.fx_compile.CompiledGraph)
        self.assertFalse(f.model.summary["whole_graph_interpreted"])
        # Compiled: generated kernels and library calls, no interpreter islands.
        self.assertGreater(f.model.summary["kernels"] + f.model.summary["externs"], 0)
        self.assertEqual(f.model.summary["island_nodes"], 0)
        # Every op compiled or a library call. aten::max_pool2d runs through
        # oneDNN on the CPU (backends/cpu/library_pool.cc), which the
        # driver's not-compiled list still counts as a reference extern.
        uncompiled = [op for op in f.model.summary["not_compiled_ops"] if not op.startswith("aten::max_pool2d ")]
        self.assertEqual(uncompiled, [])
        with torch.no_grad():
            expected = m(x)
        got = f(x)
        self.assertEqual(got.shape, expected.shape)
        self.assertEqual(got.dtype, expected.dtype)
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
        # A second call, other values of the same shape.
        x2 = torch.randn_like(x)
        with torch.no_grad():
            torch.testing.assert_close(f(x2), m(x2), rtol=RTOL, atol=ATOL)
        return f

    def test_mlp(self):
        torch.manual_seed(0)
        self.check_module(MLP().eval(), torch.randn(8, 16))

    def test_small_cnn(self):
        torch.manual_seed(0)
        self.check_module(randomize_batch_norm(SmallCNN()).eval(), torch.randn(2, 3, 32, 32))

    def test_resnet18(self):
        torch.manual_seed(0)
        m = randomize_batch_norm(torchvision.models.resnet18()).eval()
        self.check_module(m, torch.randn(1, 3, 64, 64))

    def test_new_shape_recompiles(self):
        torch.manual_seed(0)
        m = MLP().eval()
        f = kiln.compile(torch.fx.symbolic_trace(m), [torch.randn(8, 16)], fallback=False)
        x = torch.randn(3, 16)
        with torch.no_grad():
            torch.testing.assert_close(f(x), m(x), rtol=RTOL, atol=ATOL)

    def test_strided_input(self):
        torch.manual_seed(0)
        m = MLP().eval()
        f = kiln.compile(torch.fx.symbolic_trace(m), [torch.randn(8, 16)], fallback=False)
        x = torch.randn(16, 8).t()  # not contiguous: read in place through its strides
        with torch.no_grad():
            torch.testing.assert_close(f(x), m(x), rtol=RTOL, atol=ATOL)

    def test_multiple_outputs_and_aliases(self):
        def fn(x, y):
            s = x + y
            return s, torch.relu(s), s, x

        x, y = torch.randn(4, 5), torch.randn(4, 5)
        f = kiln.compile(torch.fx.symbolic_trace(fn), [x, y], fallback=False)
        got = f(x, y)
        self.assertEqual(len(got), 4)
        torch.testing.assert_close(got[0], x + y)
        torch.testing.assert_close(got[1], torch.relu(x + y))
        torch.testing.assert_close(got[2], x + y)
        torch.testing.assert_close(got[3], x)

    def test_indexing_with_optional_tensor_lists(self):
        def fn(x, i):
            return x[:, i] * 2

        x, i = torch.randn(4, 6), torch.tensor([0, 5, 2])
        f = kiln.compile(torch.fx.symbolic_trace(fn), [x, i], fallback=False)
        torch.testing.assert_close(f(x, i), x[:, i] * 2)

    def test_non_finite_constants(self):
        def fn(x):
            return torch.softmax(x.masked_fill(x < 0, float("-inf")), -1)

        x = torch.randn(4, 6)
        x[:, 0] = 1.0  # every row keeps one element
        f = kiln.compile(torch.fx.symbolic_trace(fn), [x], fallback=False)
        torch.testing.assert_close(f(x), fn(x), rtol=RTOL, atol=ATOL)

    def test_unsupported_op_falls_back_with_warning(self):
        def fn(x):
            return torch.lgamma(x) + 1

        x = torch.rand(3, 4) + 0.5
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = kiln.compile(torch.fx.symbolic_trace(fn), [x])
        messages = [str(w.message) for w in caught if issubclass(w.category, kiln.fx_compile.KilnFallbackWarning)]
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("lgamma", messages[0])  # (torch decomposes it to prims.lgamma)
        torch.testing.assert_close(f(x), torch.lgamma(x) + 1)
        with self.assertRaises(kiln.fx_compile.UnsupportedGraph):
            kiln.compile(torch.fx.symbolic_trace(fn), [x], fallback=False)


class TrainingTest(unittest.TestCase):
    """kiln.dynamo.kiln_backend (AOTAutograd; functorch's on torch 1.13):
    forward and backward graphs compiled by kiln, 20 SGD steps against
    eager."""

    def train(self, make, x, target, expect_all_compiled):
        torch.manual_seed(0)
        m = make()
        ref = copy.deepcopy(m)
        compiled_graphs = []
        original_call = kiln.fx_compile.CompiledGraph.__call__

        def spy(self_, *args):
            compiled_graphs.append(id(self_))
            return original_call(self_, *args)

        kiln.fx_compile.CompiledGraph.__call__ = spy
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn = kiln.dynamo.kiln_backend(torch.fx.symbolic_trace(m), [x])
                for loss, ref_loss in training.sgd_losses(fn, m, ref, x, target, steps=20):
                    self.assertLess(abs(loss - ref_loss), 1e-4)
        finally:
            kiln.fx_compile.CompiledGraph.__call__ = original_call
        fallbacks = [str(w.message) for w in caught if issubclass(w.category, kiln.fx_compile.KilnFallbackWarning)]
        # Forward and backward each ran compiled 20 times.
        if expect_all_compiled:
            self.assertEqual(fallbacks, [])
            self.assertEqual(len(compiled_graphs), 40)
            self.assertEqual(len(set(compiled_graphs)), 2)
        for p, q in zip(m.parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
        return fallbacks

    def test_mlp_training(self):
        self.train(MLP, torch.randn(8, 16), torch.randn(8, 10), expect_all_compiled=True)

    def test_cnn_training(self):
        # convolution_backward and max_pool2d_with_indices_backward through
        # kiln.decompositions.
        self.train(lambda: SmallCNN(batch_norm=False), torch.randn(4, 3, 17, 17), torch.randn(4, 10),
                   expect_all_compiled=True)

    def test_batch_norm_training_matches(self):
        # Whatever falls back says which op; the losses match regardless.
        fallbacks = self.train(SmallCNN, torch.randn(4, 3, 16, 16), torch.randn(4, 10), expect_all_compiled=False)
        for f in fallbacks:
            self.assertRegex(f, r"node '.*' \(")


class FreezingTest(unittest.TestCase):
    """An inference graph whose parameters and buffers are inputs (as
    AOTAutograd hands it to torch.compile's backend) compiled with them
    frozen to constants, and compiled again when one changes."""

    def setUp(self):
        from torch.fx.experimental.proxy_tensor import make_fx
        torch.manual_seed(0)
        self.m = randomize_batch_norm(SmallCNN()).eval()
        state = dict(self.m.named_parameters())
        state.update(self.m.named_buffers())
        self.names = list(state)
        self.weights = list(state.values())
        self.x = torch.randn(2, 3, 16, 16)

        def functional(*args):
            values = dict(zip(self.names, args[:len(self.names)]))
            return torch.nn.utils.stateless.functional_call(self.m, values, (args[-1],))

        with torch.no_grad():
            # The decompositions AOTAutograd applies for kiln.
            self.gm = make_fx(functional, decomposition_table=kiln.fx_compile.decompositions())(
                *self.weights, self.x)

    def compile(self):
        static = {id(t): t for t in self.weights}
        return kiln.dynamo._compiler("inference", static)(self.gm, self.weights + [self.x])

    def call(self, compiled, weights=None):
        with warnings.catch_warnings():
            warnings.simplefilter("error", kiln.fx_compile.KilnFallbackWarning)
            with torch.no_grad():
                return compiled(list(weights or self.weights) + [self.x])

    def expected(self):
        with torch.no_grad():
            return self.m(self.x)

    def test_static_inputs_become_constants(self):
        compiled = self.compile()
        self.assertIsNone(compiled.run)  # compiled at the first (real) call
        torch.testing.assert_close(self.call(compiled), self.expected(), rtol=RTOL, atol=ATOL)
        self.assertEqual(compiled.frozen.positions, list(range(len(self.weights))))
        self.assertEqual(compiled.run.model.num_inputs, 1)
        first = compiled.run
        self.call(compiled)
        self.assertIs(compiled.run, first)

    def test_changed_weight_recompiles(self):
        compiled = self.compile()
        self.call(compiled)
        first = compiled.run
        with torch.no_grad():
            self.m.c1.weight.mul_(-2.0)  # in place: its version counter moves
        torch.testing.assert_close(self.call(compiled), self.expected(), rtol=RTOL, atol=ATOL)
        self.assertIsNot(compiled.run, first)

    def test_other_tensor_at_a_frozen_position_recompiles(self):
        compiled = self.compile()
        self.call(compiled)
        other = [w.clone() for w in self.weights]
        other[0].mul_(0.5)
        got = self.call(compiled, other)
        with torch.no_grad():
            values = dict(zip(self.names, other))
            expected = torch.nn.utils.stateless.functional_call(self.m, values, (self.x,))
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
        # Not static (not among the tensors Dynamo named): inputs again.
        self.assertEqual(compiled.frozen.positions, [])

    def test_static_tensors_of_a_module_graph(self):
        gm = torch.fx.symbolic_trace(self.m)
        found = kiln.freezing.static_tensors(gm, [self.x])
        self.assertEqual(len(found), len(list(gm.parameters())) + len(list(gm.buffers())))
        self.assertNotIn(id(self.x), found)


class DecompositionsTest(unittest.TestCase):
    """kiln.decompositions against torch's own kernels."""

    def test_convolution_backward(self):
        aten = torch.ops.aten
        g = torch.Generator().manual_seed(0)
        for shape, w_shape, stride, padding, dilation in [
                ((2, 3, 9, 9), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1]),
                ((2, 3, 10, 11), (5, 3, 3, 2), [2, 3], [1, 0], [1, 1]),
                ((1, 2, 12, 12), (3, 2, 3, 3), [2, 2], [2, 2], [2, 2]),
                ((2, 4, 15), (6, 4, 4), [3], [1], [1])]:
            x = torch.randn(shape, generator=g, dtype=torch.float64)
            w = torch.randn(w_shape, generator=g, dtype=torch.float64)
            y = aten.convolution(x, w, None, stride, padding, dilation, False, [0] * len(stride), 1)
            go = torch.randn(y.shape, generator=g, dtype=torch.float64)
            args = (go, x, w, [w_shape[0]], stride, padding, dilation, False, [0] * len(stride), 1,
                    [True, True, True])
            expected = aten.convolution_backward(*args)
            got = kiln.decompositions.convolution_backward(*args)
            for e, r in zip(expected, got):
                torch.testing.assert_close(r, e)

    def test_attention_kernels_as_math(self):
        # The CUDA kernels SDPA dispatches to (torch 2.x), as matmuls and a
        # softmax: against the formula, with a float bias, a bool mask and
        # causal masking.
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(2, 3, n, 8, generator=g, dtype=torch.float64) for n in (5, 7, 7))
        bias = torch.randn(5, 7, generator=g, dtype=torch.float64)
        keep = torch.rand(5, 7, generator=g) > 0.3
        causal = torch.ones(5, 7, dtype=torch.bool).tril()
        scores = q @ k.transpose(-2, -1) / math.sqrt(8)

        def expected(s):
            return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)

        for got, (want, lse) in [
                (kiln.decompositions.scaled_dot_product_efficient_attention(q, k, v, bias, True),
                 expected(scores + bias)),
                (kiln.decompositions.scaled_dot_product_cudnn_attention(q, k, v, keep, True),
                 expected(scores.masked_fill(~keep, float("-inf")))),
                (kiln.decompositions.scaled_dot_product_flash_attention(q, k, v, is_causal=True),
                 expected(scores.masked_fill(~causal, float("-inf"))))]:
            torch.testing.assert_close(got[0], want)
            torch.testing.assert_close(got[1], lse)
        self.assertIs(kiln.decompositions.scaled_dot_product_flash_attention(q, k, v, dropout_p=0.1),
                      NotImplemented)

    def test_max_pool2d_with_indices_backward(self):
        aten = torch.ops.aten
        x = torch.randn(2, 3, 9, 8, dtype=torch.float64)
        for k, s, p, ceil in [([2, 2], [2, 2], [0, 0], False), ([3, 3], [2, 2], [1, 1], True)]:
            y, idx = aten.max_pool2d_with_indices(x, k, s, p, [1, 1], ceil)
            go = torch.randn_like(y)
            expected = aten.max_pool2d_with_indices_backward(go, x, k, s, p, [1, 1], ceil, idx)
            got = kiln.decompositions.max_pool2d_with_indices_backward(go, x, k, s, p, [1, 1], ceil, idx)
            torch.testing.assert_close(got, expected)


class FileModelTest(unittest.TestCase):
    def test_run_onnx_torch_and_numpy(self):
        d = os.path.join(TESTDATA, "onnx_models", "small_cnn")
        x = read_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"))
        expected = read_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"))
        (out,) = kiln.run_onnx(os.path.join(d, "model.onnx"), [x])
        self.assertIsInstance(out, np.ndarray)
        np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)
        (out_t,) = kiln.run_onnx(os.path.join(d, "model.onnx"), [torch.from_numpy(x)])
        self.assertIsInstance(out_t, torch.Tensor)
        np.testing.assert_allclose(out_t.numpy(), expected, rtol=RTOL, atol=ATOL)

    def test_load_pt2_dynamic(self):
        d = os.path.join(TESTDATA, "pt2_models", "gpt2_dynamic")
        ids = read_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"))
        expected = read_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"))
        m = kiln.load_pt2(os.path.join(d, "model.pt2"))
        (out,) = m(torch.from_numpy(ids))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-3, atol=1e-4)

    def test_errors_are_kiln_errors(self):
        with self.assertRaises(kiln.KilnError) as e:
            kiln.load_onnx(os.path.join(TESTDATA, "no_such_model.onnx"))
        self.assertIn("no_such_model.onnx", str(e.exception))
        self.assertNotEqual(e.exception.code, 0)
        with self.assertRaises(kiln.KilnError) as e:
            kiln._capi.compile_export_json('{"schema_version": {"major": 8, "minor": 0}}', {})
        self.assertEqual(e.exception.code, 3)  # INVALID_ARGUMENT
        m = kiln.load_onnx(os.path.join(TESTDATA, "onnx_models", "small_cnn", "model.onnx"))
        with self.assertRaises(kiln.KilnError) as e:
            m.run([])
        self.assertIn("inputs", str(e.exception))

    def test_device_errors(self):
        """CUDA paths that a CPU-only machine can check: a CPU model refuses a
        stream; a CUDA model cannot be compiled without a GPU (a KilnError)."""
        m = kiln.load_onnx(os.path.join(TESTDATA, "onnx_models", "small_cnn", "model.onnx"))
        x = torch.zeros(1, 3, 32, 32)
        self.assertEqual(m.device, "cpu")
        with self.assertRaises(kiln.KilnError) as e:
            m.run([x], stream=1)
        self.assertIn("compiled for cpu", str(e.exception))
        self.assertEqual(len(m.run([x], stream=None)), 1)
        if not torch.cuda.is_available():
            with self.assertRaises(kiln.KilnError) as e:
                kiln.load_onnx(os.path.join(TESTDATA, "onnx_models", "small_cnn", "model.onnx"), device="cuda")
            self.assertIn("cuda", str(e.exception))

    def test_version(self):
        self.assertRegex(kiln.version(), r"^\d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
