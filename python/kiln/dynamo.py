"""The torch.compile backend "kiln": torch.compile(model, backend="kiln").

TorchDynamo hands the backend an FX graph of torch calls; AOTAutograd turns
it into functional aten graphs, a forward and (when inputs require grad) a
backward, and kiln compiles each (kiln.fx_compile.compile_aten_graph). Ops
kiln's registry lacks are decomposed by torch first (torch._decomp); a graph
kiln still cannot compile runs eagerly after a warning naming the op.

The backend is registered with torch._dynamo when kiln is imported (torch
2.x) and found through the wheel's `torch_dynamo_backends` entry point
without an import. On torch 1.13 (no torch._dynamo) `kiln_backend` still
works on an FX GraphModule through functorch's AOTAutograd, which is how the
tests here check training.
"""
import itertools

from .fx_compile import compile_aten_graph, decompositions

_counter = itertools.count()


def _compiler(kind):
    def compile_graph(gm, example_inputs):
        name = "%s graph %d" % (kind, next(_counter))
        run = compile_aten_graph(gm, example_inputs, name=name)

        # AOTAutograd's boxed calling convention: one list of arguments,
        # which the callee may clear (so saved activations free early).
        def boxed(args):
            a = list(args)
            args.clear()
            return run(*a)
        boxed._boxed_call = True
        return boxed
    return compile_graph


def kiln_backend(gm, example_inputs, **kwargs):
    """A TorchDynamo backend: (GraphModule, example inputs) -> callable."""
    fw, bw = _compiler("forward"), _compiler("backward")
    try:
        from torch._dynamo.backends.common import aot_autograd
    except ImportError:
        aot_autograd = None
    if aot_autograd is not None:
        return aot_autograd(fw_compiler=fw, bw_compiler=bw, decompositions=decompositions())(gm, example_inputs)
    # torch 1.13: functorch's AOTAutograd, which wants tuple outputs (what
    # TorchDynamo's graphs return); a traced module's single output is
    # wrapped and unwrapped around it.
    from functorch.compile import aot_module_simplified
    output = next(n for n in gm.graph.nodes if n.op == "output")
    single = not isinstance(output.args[0], (tuple, list))
    if single:
        output.args = ((output.args[0],),)
        gm.recompile()
    compiled = aot_module_simplified(gm, fw_compiler=fw, bw_compiler=bw, decompositions=decompositions())
    if not single:
        return compiled
    return lambda *args: compiled(*args)[0]


def register():
    """Registers "kiln" with torch._dynamo (ImportError without it)."""
    import torch._dynamo
    from torch._dynamo.backends import registry
    if "kiln" in registry.list_backends(exclude_tags=()):
        return
    torch._dynamo.register_backend(name="kiln")(kiln_backend)
