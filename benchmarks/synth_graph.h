// Deterministic synthetic TorchScript graphs for the IR benchmarks.
//
// A C++ port of /work/shared/corpus/gen/synth_graph.py. It reproduces the
// script's random number stream (CPython's Mersenne Twister, seeded the way
// `random.Random(seed)` seeds it), so `SynthGraphText(n, seed)` is
// byte-identical to `synth_graph.py n --seed seed`, and the benchmark figures
// are directly comparable with the PyTorch baseline measured on that script's
// output (BASELINE.md). Node mix: ~30% plain tensor ops, ~20% exact
// duplicates, ~20% dead code, ~15% int constant-folding chains, ~15% peephole
// candidates; all of them single-block, straight-line code.
#ifndef KILN_BENCHMARKS_SYNTH_GRAPH_H_
#define KILN_BENCHMARKS_SYNTH_GRAPH_H_

#include <cstdint>
#include <string>

namespace kiln::bench {

// The text of a graph with `num_nodes` nodes (a few more when the last
// constant-folding chain overshoots, as in the script). `shared_frac` is the
// fraction of add/sub `alpha` operands that reuse the shared `%one`.
std::string SynthGraphText(int64_t num_nodes, uint32_t seed = 0, double shared_frac = 0.5);

}  // namespace kiln::bench

#endif  // KILN_BENCHMARKS_SYNTH_GRAPH_H_
