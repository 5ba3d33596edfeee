// oneDNN convolution algorithms on resnet50's 3x3 stride-1 shapes, batch 1,
// as kiln's CPU backend runs them (backends/cpu/library_conv.cc): source
// and result channels-last, weights packed once into the primitive's
// layout (not timed), bias and ReLU as post-ops. For each shape it times
// `convolution_direct`, `convolution_winograd` (oneDNN's first choice,
// F(2x2, 3x3), and its second, F(4x4, 3x3), by `next_impl`) and `convolution_auto`,
// including the source/result reorders a primitive that does not take
// channels-last needs (as kiln would run them), rounds alternating between
// the algorithms so that a shared machine's load falls on all of them.
//
//   ./bazelw run -c opt //benchmarks:conv_algorithm_bench -- --threads=2 --rounds=5 --iterations=20
//
// Prints per shape and algorithm the implementation oneDNN chose (or why
// it made none), the median and minimum ms of one call, and the largest
// absolute difference of the result from the direct algorithm's.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Shape {
  int64_t c, hw;  // [1, c, hw, hw] * [c, c, 3, 3], padding 1
};

struct Algo {
  const char* name;
  dnnl::algorithm algorithm;
  const char* impl = nullptr;  // the first implementation whose name has this
};

// One prepared convolution: the primitive, its buffers in its own layouts
// and the reorders between kiln's channels-last buffers and them.
struct Prepared {
  std::string impl;
  dnnl::convolution_forward prim;
  memory src_user, src, weights, bias, dst, dst_user, scratch;
  std::optional<dnnl::reorder> src_in, dst_out;
};

std::optional<Prepared> Prepare(const Shape& s, const Algo& a, dnnl::engine& eng, dnnl::stream& strm,
                                const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& b, std::string* why) {
  const memory::dims xd = {1, s.c, s.hw, s.hw}, wd = {s.c, s.c, 3, 3}, bd = {s.c};
  const memory::desc x_nhwc(xd, memory::data_type::f32, Tag::nhwc);
  const memory::desc w_any(wd, memory::data_type::f32, Tag::any);
  const memory::desc b_desc(bd, memory::data_type::f32, Tag::a);
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // kiln asks for channels-last; a primitive that does not take it (the
  // Winograd kernels want nChw16c) is asked again with `any` and reorders.
  dnnl::convolution_forward::primitive_desc pd;
  for (Tag t : {Tag::nhwc, Tag::any}) {
    const memory::desc xt(xd, memory::data_type::f32, t);
    try {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, a.algorithm, xt, w_any, b_desc, xt,
                                        {1, 1}, {1, 1}, {1, 1});
      pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
      while (a.impl != nullptr && std::string(pd.impl_info_str()).find(a.impl) == std::string::npos) {
        if (!pd.next_impl()) throw dnnl::error(dnnl_unimplemented, "no such implementation");
      }
      break;
    } catch (const dnnl::error& e) {
      *why = e.what();
      if (t == Tag::any) return std::nullopt;
    }
  }
  Prepared p;
  p.impl = pd.impl_info_str();
  p.prim = dnnl::convolution_forward(pd);
  p.src_user = memory(x_nhwc, eng, const_cast<float*>(x.data()));
  p.src = pd.src_desc() == x_nhwc ? p.src_user : memory(pd.src_desc(), eng);
  if (p.src != p.src_user) p.src_in = dnnl::reorder(p.src_user, p.src);
  p.dst_user = memory(x_nhwc, eng);
  p.dst = pd.dst_desc() == x_nhwc ? p.dst_user : memory(pd.dst_desc(), eng);
  if (p.dst != p.dst_user) p.dst_out = dnnl::reorder(p.dst, p.dst_user);
  memory w_user(memory::desc(wd, memory::data_type::f32, Tag::oihw), eng, const_cast<float*>(w.data()));
  p.weights = memory(pd.weights_desc(), eng);
  dnnl::reorder(w_user, p.weights).execute(strm, w_user, p.weights);
  p.bias = memory(b_desc, eng, const_cast<float*>(b.data()));
  p.scratch = memory(pd.scratchpad_desc(), eng);
  strm.wait();
  return p;
}

void RunOnce(Prepared& p, dnnl::stream& strm, bool reorders = true) {
  if (p.src_in && reorders) p.src_in->execute(strm, p.src_user, p.src);
  p.prim.execute(strm, {{DNNL_ARG_SRC, p.src},
                        {DNNL_ARG_WEIGHTS, p.weights},
                        {DNNL_ARG_BIAS, p.bias},
                        {DNNL_ARG_DST, p.dst},
                        {DNNL_ARG_SCRATCHPAD, p.scratch}});
  if (p.dst_out && reorders) p.dst_out->execute(strm, p.dst, p.dst_user);
  strm.wait();
}

int IntFlag(int argc, char** argv, const char* name, int dflt) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return std::atoi(argv[i] + n + 1);
  }
  return dflt;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = IntFlag(argc, argv, "--threads", 2);
  const int rounds = IntFlag(argc, argv, "--rounds", 5);
  const int iterations = IntFlag(argc, argv, "--iterations", 20);
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  // resnet50's four (13 of its convolutions), then others that bound the
  // rule library_conv.cc takes from these figures.
  const std::vector<Shape> shapes = {{64, 56},  {128, 28}, {256, 14}, {512, 7}, {32, 56},
                                     {64, 28},  {64, 14},  {128, 14}, {256, 7}, {128, 7},
                                     {512, 14}, {16, 112}, {32, 112}, {48, 28}};
  const std::vector<Algo> algos = {{"direct", dnnl::algorithm::convolution_direct},
                                   {"winograd", dnnl::algorithm::convolution_winograd},
                                   {"wino4x3", dnnl::algorithm::convolution_winograd, "4x3"},
                                   {"auto", dnnl::algorithm::convolution_auto}};
  std::printf("threads %d, rounds %d x %d iterations; ms per call (reorders included)\n", threads, rounds,
              iterations);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Shape& s : shapes) {
    // resnet-like magnitudes: unit input, He-scaled weights.
    std::vector<float> x(static_cast<size_t>(s.c * s.hw * s.hw)), w(static_cast<size_t>(s.c * s.c * 9)),
        b(static_cast<size_t>(s.c));
    const float scale = std::sqrt(2.0f / static_cast<float>(s.c * 9));
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng) * scale;
    for (float& v : b) v = 0.1f * normal(rng);
    std::vector<std::optional<Prepared>> prepared;
    std::vector<std::string> why(algos.size());
    for (size_t i = 0; i < algos.size(); ++i) prepared.push_back(Prepare(s, algos[i], eng, strm, x, w, b, &why[i]));
    // ms: the call as kiln runs it; alone: the primitive without the
    // reorders (what a plan that kept nChw16c between calls would pay).
    std::vector<std::vector<double>> ms(algos.size()), alone(algos.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < algos.size(); ++i) {
        if (!prepared[i]) continue;
        RunOnce(*prepared[i], strm);  // warm
        for (int it = 0; it < iterations; ++it) {
          const auto t0 = std::chrono::steady_clock::now();
          RunOnce(*prepared[i], strm);
          ms[i].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        for (int it = 0; prepared[i]->src_in && it < iterations; ++it) {
          const auto t0 = std::chrono::steady_clock::now();
          RunOnce(*prepared[i], strm, false);
          alone[i].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      }
    }
    const double gflop = 2.0 * s.c * s.c * 9 * s.hw * s.hw * 1e-9;
    std::printf("[1,%ld,%ld,%ld] x [%ld,%ld,3,3] (%.3f GFLOP direct)\n", static_cast<long>(s.c),
                static_cast<long>(s.hw), static_cast<long>(s.hw), static_cast<long>(s.c), static_cast<long>(s.c),
                gflop);
    const float* ref = prepared[0] ? static_cast<const float*>(prepared[0]->dst_user.get_data_handle()) : nullptr;
    for (size_t i = 0; i < algos.size(); ++i) {
      if (!prepared[i]) {
        std::printf("  %-8s  not available: %s\n", algos[i].name, why[i].c_str());
        continue;
      }
      std::vector<double>& v = ms[i];
      std::sort(v.begin(), v.end());
      double err = 0;
      const float* out = static_cast<const float*>(prepared[i]->dst_user.get_data_handle());
      for (size_t k = 0; ref != nullptr && k < x.size(); ++k) err = std::max(err, std::fabs(double(out[k]) - ref[k]));
      std::printf("  %-8s  median %7.3f  min %7.3f  (%5.1f GFLOP/s at min)  max|diff vs direct| %.2e  %s%s%s",
                  algos[i].name, v[v.size() / 2], v.front(), gflop / (v.front() * 1e-3), err,
                  prepared[i]->impl.c_str(), prepared[i]->src_in ? " +reorder in" : "",
                  prepared[i]->dst_out ? " +reorder out" : "");
      std::vector<double>& a = alone[i];
      std::sort(a.begin(), a.end());
      if (!a.empty()) std::printf("; without the reorders: median %.3f min %.3f", a[a.size() / 2], a.front());
      std::printf("\n");
    }
  }
  return 0;
}
