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
from .freezing import FrozenVersion, freeze_inputs, static_tensors

_counter = itertools.count()


class _DeferredGraph:
    """One AOTAutograd graph, compiled by kiln at its first call.

    AOTAutograd calls its compilers with fake example inputs inside its fake
    tensor mode, where reading a real tensor constant of the graph fails
    (aten.detach on a real tensor); so the graph is kept and compiled when
    real tensors arrive, outside that mode. `static` ({id: tensor}, inference
    graphs only) names the tensors to freeze (kiln.freezing): the first
    call's arguments that are among them become constants, and a call where
    one was replaced or changed in place compiles again."""

    def __init__(self, gm, name, static):
        self.gm = gm
        self.name = name
        self.static = static
        self.frozen = None
        self.run = None

    def _compile(self, args):
        positions = []
        if self.static:
            positions = [i for i, x in enumerate(args) if self.static.get(id(x)) is x]
        self.frozen = FrozenVersion(args, positions)
        gm = freeze_inputs(self.gm, {i: args[i] for i in positions}) if positions else self.gm
        self.run = compile_aten_graph(gm, self.frozen.live(args), name=self.name)

    def __call__(self, args):
        # AOTAutograd's boxed calling convention: one list of arguments,
        # which the callee may clear (so saved activations free early).
        a = list(args)
        args.clear()
        if self.run is None or not self.frozen.holds_for(a):
            self._compile(a)
        return self.run(*self.frozen.live(a))


def _compiler(kind, static=None):
    def compile_graph(gm, example_inputs):
        graph = _DeferredGraph(gm, "%s graph %d" % (kind, next(_counter)), static)
        graph._boxed_call = True
        return graph
    return compile_graph


def kiln_backend(gm, example_inputs, **kwargs):
    """A TorchDynamo backend: (GraphModule, example inputs) -> callable.
    Training graphs (forward and backward) keep parameters as inputs;
    inference graphs freeze them (kiln.freezing)."""
    fw, bw = _compiler("forward"), _compiler("backward")
    try:
        from torch._dynamo.backends.common import aot_autograd
    except ImportError:
        aot_autograd = None
    if aot_autograd is not None:
        inference = _compiler("inference", static_tensors(gm, example_inputs))
        return aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=inference,
                            decompositions=decompositions())(gm, example_inputs)
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
