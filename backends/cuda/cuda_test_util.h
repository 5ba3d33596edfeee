// What the CUDA program tests (cuda_program_test.cc, cuda_device_run_test.cc)
// share: registering ops, shape functions and the backend, compiling a
// graph's text for "cuda", and seeded random inputs.
#ifndef KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_
#define KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "absl/strings/str_cat.h"
#include "driver/compile_graph.h"
#include "gtest/gtest.h"
#include "ir/constants.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "passes/shape_functions.h"
#include "runtime/register_kernels.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::backends::cuda::test {

inline void RegisterAll() {
  ASSERT_TRUE(passes::RegisterShapeFunctions().ok());
  ASSERT_TRUE(runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok());
  ASSERT_TRUE(RegisterCudaBackend().ok());
}

// Parses `text` and compiles it for cuda (up to the Wrapper IR when
// `generate_only`); the parsed graph (shape-propagated: the interpreter's
// input too) goes to *graph when given.
inline absl::StatusOr<driver::CompiledGraph> CompileForCuda(const std::string& text,
                                                            std::unique_ptr<ir::Graph>* graph = nullptr,
                                                            bool generate_only = false) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> parsed, ir::ParseGraph(text));
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = generate_only;
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*parsed, options);
  if (graph != nullptr) *graph = std::move(parsed);
  return compiled;
}

// Parses `text` and turns its inputs named in `constants` (in order of
// the map) into tensor constants (weights a layout plan may permute).
// Sets an environment variable for a scope (the CUDA backend's switches,
// e.g. KILN_CUDA_CHANNELS_LAST=1 to compile small test graphs the way the
// policy compiles large ones); restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline absl::StatusOr<std::unique_ptr<ir::Graph>> ParseWithConstants(const std::string& text,
                                                                      const std::map<std::string, Tensor>& constants) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  for (size_t i = g->inputs().size(); i-- > 0;) {
    ir::Value* in = g->inputs()[i];
    auto it = constants.find(in->debugName());
    if (it == constants.end()) continue;
    ir::WithInsertPoint guard(*g->nodes().begin());
    ASSIGN_OR_RETURN(ir::Value * c, ir::InsertConstant(*g, ir::IValue::FromTensor(it->second)));
    in->replaceAllUsesWith(c);
    g->eraseInput(i);
  }
  return g;
}

// Compiles an already parsed graph for cuda (see CompileForCuda).
inline absl::StatusOr<driver::CompiledGraph> CompileGraphForCuda(ir::Graph& graph, bool generate_only = false) {
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = generate_only;
  return driver::CompileGraph(graph, options);
}

// float32, uniform in [-1, 1), the same values for the same seed.
inline Tensor Random(std::vector<int64_t> sizes, uint32_t seed) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// A resnet-like chain over `type` ("Float", "BFloat16"): conv -> relu ->
// conv -> add(the first result) -> relu -> 1x1 conv -> `activation`
// (an aten op name), weights w1..w3 and biases b1..b3 as inputs (make them
// constants with ParseWithConstants), x [2, 8, 10, 10].
inline std::string ConvChainText(const std::string& type, const std::string& activation) {
  return absl::StrCat(
      "graph(%x : ", type, "(2, 8, 10, 10), %w1 : ", type, "(8, 8, 3, 3), %b1 : ", type, "(8), %w2 : ", type,
      "(8, 8, 3, 3), %b2 : ", type, "(8), %w3 : ", type, "(16, 8, 1, 1), %b3 : ", type, "(16)):\n"
      "  %s : int[] = prim::Constant[value=[1, 1]]()\n"
      "  %p1 : int[] = prim::Constant[value=[1, 1]]()\n"
      "  %p0 : int[] = prim::Constant[value=[0, 0]]()\n"
      "  %g : int = prim::Constant[value=1]()\n"
      "  %y1 : ", type, "(2, 8, 10, 10) = aten::conv2d(%x, %w1, %b1, %s, %p1, %s, %g)\n"
      "  %r1 : ", type, "(2, 8, 10, 10) = aten::relu(%y1)\n"
      "  %y2 : ", type, "(2, 8, 10, 10) = aten::conv2d(%r1, %w2, %b2, %s, %p1, %s, %g)\n"
      "  %a2 : ", type, "(2, 8, 10, 10) = aten::add(%y2, %r1, %g)\n"
      "  %r2 : ", type, "(2, 8, 10, 10) = aten::relu(%a2)\n"
      "  %y3 : ", type, "(2, 16, 10, 10) = aten::conv2d(%r2, %w3, %b3, %s, %p0, %s, %g)\n"
      "  %o : ", type, "(2, 16, 10, 10) = aten::", activation, "(%y3)\n"
      "  return (%o)\n");
}

// ConvChainText with a 3x3/1 max pool (padding 1) between the first
// relu and the second convolution (resnet's stem: pool between convolutions).
inline std::string ConvPoolChainText(const std::string& type, const std::string& activation) {
  std::string text = ConvChainText(type, activation);
  const std::string conv2 = "aten::conv2d(%r1, %w2";
  text.replace(text.find(conv2), conv2.size(), "aten::conv2d(%mp, %w2");
  const std::string before = "  %y2 : ";
  text.insert(text.find(before), absl::StrCat("  %k3 : int[] = prim::Constant[value=[3, 3]]()\n"
                                              "  %fl : bool = prim::Constant[value=0]()\n"
                                              "  %mp : ", type, "(2, 8, 10, 10) = aten::max_pool2d(%r1, %k3, %s, %p1, %s, %fl)\n"));
  return text;
}

// ConvChainText whose residual goes through a 1x1 convolution with a bias
// (resnet's downsample: weight %w4 [8, 8, 1, 1], bias %b4 [8], appended
// inputs), which fuse_conv_post_ops turns into a fused op with an empty chain.
inline std::string ConvDownsampleChainText(const std::string& type, const std::string& activation) {
  std::string text = ConvChainText(type, activation);
  const std::string header_end = "(16)):\n";
  text.replace(text.find(header_end), header_end.size(),
               absl::StrCat("(16), %w4 : ", type, "(8, 8, 1, 1), %b4 : ", type, "(8)):\n"));
  const std::string add = "aten::add(%y2, %r1, %g)";
  text.replace(text.find(add), add.size(), "aten::add(%y2, %dn, %g)");
  const std::string before = "  %a2 : ";
  text.insert(text.find(before), absl::StrCat("  %dn : ", type,
                                              "(2, 8, 10, 10) = aten::conv2d(%r1, %w4, %b4, %s, %p0, %s, %g)\n"));
  return text;
}

}  // namespace kiln::backends::cuda::test

#endif  // KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_
