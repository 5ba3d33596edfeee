// TorchScript text of the single-op and chain graphs that the compiled-path
// benchmarks (benchmarks/compiled_bench.cc, cuda_bench.cc) and the CUDA GPU
// check measure: one definition, so the CPU and CUDA figures are of the
// same graphs.
#ifndef KILN_TESTING_GRAPH_TEXTS_H_
#define KILN_TESTING_GRAPH_TEXTS_H_

#include <cstdint>
#include <string>

namespace kiln::testing {

// x -> add/mul (or add/mul/tanh/sigmoid) chain of `k` ops over Float(n).
std::string ChainText(int k, int64_t n, bool transcendental);
// sum over `dim` of Float(m, n).
std::string SumText(int64_t m, int64_t n, int dim);
std::string SoftmaxText(int64_t m, int64_t n);
std::string LayerNormText(int64_t m, int64_t n);
// gelu(x + bias).
std::string GeluBiasText(int64_t m, int64_t n);
std::string MmText(int64_t m, int64_t k, int64_t n);

}  // namespace kiln::testing

#endif  // KILN_TESTING_GRAPH_TEXTS_H_
