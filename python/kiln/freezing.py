"""Freezing: the parameters and buffers of an inference graph compiled in as
constants, the way Inductor's freezing does.

Under torch.compile, AOTAutograd hands the backend graphs whose parameters
and buffers are inputs like any other. kiln compiled from such a graph must
re-read (and, for oneDNN and cuDNN, re-lay out) every weight on every call,
and cannot fold batch norms into convolutions. An inference graph (no
backward) instead gets those inputs replaced by constants, read in place,
packed once at compile time.

Freezing is guarded, not assumed: the frozen tensors are remembered with
their version counters, and a call that passes another tensor at a frozen
position, or a frozen tensor changed in place since (an optimizer step, a
load_state_dict), compiles the graph again for the new values.
"""
import torch
import torch.fx


def static_tensors(gm, example_inputs):
    """{id: tensor} of what torch.compile treats as static in Dynamo's graph
    `gm`: its own parameters and buffers (AOTAutograd lifts them to inputs),
    the inputs Dynamo marks static (a module's parameters and buffers when
    it inlines nn.Modules), and any nn.Parameter input."""
    found = list(gm.parameters()) + list(gm.buffers())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, x in zip(placeholders, example_inputs):
        if not isinstance(x, torch.Tensor):
            continue
        marked = node.meta.get("tensor_dict", {}).get("_dynamo_static_input_type")
        if marked or isinstance(x, torch.nn.Parameter):
            found.append(x)
    return {id(t): t for t in found if isinstance(t, torch.Tensor) and not _is_fake(t)}


def _is_fake(t):
    return type(t).__name__ == "FakeTensor" or getattr(t, "_is_fake", False)


def freeze_inputs(gm, values):
    """A copy of FX graph module `gm` whose placeholders at the positions of
    `values` ({position: tensor}) read those tensors as constants (get_attr
    of attributes `_kiln_frozen_<position>`). `gm` is left as it was."""
    graph = torch.fx.Graph()
    env = {}
    out = graph.graph_copy(gm.graph, env)
    graph.output(out)
    frozen = torch.fx.GraphModule(gm, graph)
    placeholders = [n for n in frozen.graph.nodes if n.op == "placeholder"]
    for position, tensor in values.items():
        node = placeholders[position]
        name = "_kiln_frozen_%d" % position
        frozen.register_buffer(name, tensor.detach(), persistent=False)  # shares the storage
        with frozen.graph.inserting_before(node):
            constant = frozen.graph.get_attr(name)
        constant.meta = dict(node.meta)
        node.replace_all_uses_with(constant)
        frozen.graph.erase_node(node)
    frozen.recompile()
    return frozen


class FrozenVersion:
    """The tensors one compiled version froze, with their versions."""

    def __init__(self, args, positions):
        self.positions = positions
        self.skip = frozenset(positions)
        self.tensors = [(args[i], args[i]._version) for i in positions]

    def holds_for(self, args):
        """True when `args` has the very frozen tensors, unchanged."""
        for i, (t, version) in zip(self.positions, self.tensors):
            if args[i] is not t or t._version != version:
                return False
        return True

    def live(self, args):
        """The arguments left as inputs of the frozen graph."""
        return [a for i, a in enumerate(args) if i not in self.skip]
