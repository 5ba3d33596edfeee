"""kiln from Python: compile FX graphs, ONNX models and torch.export
archives with the kiln compiler (libkiln_c.so through ctypes).

    import kiln
    f = kiln.compile(torch.fx.symbolic_trace(model), [x])   # a callable
    y = f(x)
    outs = kiln.run_onnx("model.onnx", [x])
    m = kiln.load_pt2("model.pt2"); outs = m(x)
    torch.compile(model, backend="kiln")    # torch 2.x (kiln.dynamo)
"""
from ._capi import KilnError, Model, has_operator

__all__ = ["KilnError", "Model", "compile", "run_onnx", "load_pt2", "load_onnx", "version", "has_operator"]


def version():
    """The kiln release the loaded library was built from."""
    from . import _capi
    return _capi.lib().kilnc_version().decode()


def compile(graph_module, example_inputs, device=None, pipeline=None, fallback=True):
    """See kiln.fx_compile.compile."""
    from . import fx_compile
    return fx_compile.compile(graph_module, example_inputs, device=device, pipeline=pipeline,
                              fallback=fallback)


def load_onnx(path, example_inputs=None, device="cpu", pipeline=None):
    """A compiled ONNX model (a kiln.Model: call it with its inputs)."""
    from . import _capi
    return _capi.compile_file(path, example_inputs, device=device, pipeline=pipeline)


def run_onnx(path, inputs, device="cpu"):
    """Compiles an ONNX model for `inputs`' shapes and runs it once: a list of
    outputs (torch tensors for torch inputs, else numpy arrays)."""
    return load_onnx(path, inputs, device=device).run(inputs)


def load_pt2(path, example_inputs=None, device="cpu", pipeline=None):
    """A compiled torch.export archive (.pt2) as a kiln.Model; symbolic sizes
    are compiled for `example_inputs` or the traced shapes, and recompiled
    for other shapes on call."""
    from . import _capi
    return _capi.compile_file(path, example_inputs, device=device, pipeline=pipeline)


def _register_dynamo_backend():
    try:
        from . import dynamo
        dynamo.register()
    except ImportError:  # no torch, or torch without torch._dynamo (1.x): no torch.compile backend
        pass
    except Exception as e:  # noqa: kiln itself stays usable
        import warnings
        warnings.warn("kiln: could not register the torch.compile backend: %r" % (e,))


_register_dynamo_backend()
