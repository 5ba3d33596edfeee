#include "passes/library_channel_ops.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/canonicalize.h"
#include "passes/fingerprint.h"
#include "passes/fuse_post_ops.h"
#include "passes/pass.h"

namespace kiln::passes {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

absl::StatusOr<bool> RunPass(ir::Graph& g, PassStatistics& stats) {
  const uint64_t before = GraphFingerprint(g);
  absl::StatusOr<bool> changed = LibraryChannelOps(g, stats);
  if (changed.ok()) {
    EXPECT_EQ(*changed, before != GraphFingerprint(g));
  }
  return changed;
}

// Runs fuse_post_ops when `post_ops`, then the pass; the canonical text, or
// "<unchanged>".
std::string Rewritten(const std::string& text, bool post_ops = false) {
  auto g = Parse(text);
  if (!g) return "<parse error>";
  PassStatistics stats;
  if (post_ops) {
    EXPECT_TRUE(FusePostOps(*g, stats).ok());
  }
  absl::StatusOr<bool> changed = RunPass(*g, stats);
  if (!changed.ok()) return std::string(changed.status().message());
  if (!*changed) return "<unchanged>";
  EXPECT_TRUE(Canonicalize(*g, stats).ok());
  // Idempotent: a second run finds nothing more.
  absl::StatusOr<bool> again = RunPass(*g, stats);
  EXPECT_TRUE(again.ok() && !*again) << "second run changed the graph";
  return ir::PrintGraph(*g);
}

// The node kinds of the result (constants and lists left out).
std::string Kinds(const std::string& text) {
  auto g = Parse(text);
  if (!g) return "<parse error>";
  PassStatistics stats;
  absl::StatusOr<bool> changed = RunPass(*g, stats);
  if (!changed.ok()) return std::string(changed.status().message());
  std::string out;
  for (const ir::Node* n : g->nodes()) {
    const std::string k(n->kind().qualString());
    if (k == "prim::Constant" || k == "prim::ListConstruct") continue;
    out += (out.empty() ? "" : " ") + k;
  }
  return out;
}

// A depthwise convolution of 72 channels (odd for a vector width), its
// output [N, 72, 5, 5]; then `tail`.
std::string Block(const std::string& tail, int n = 1) {
  const std::string x = "Float(" + std::to_string(n) + ", 72, 5, 5)";
  return "graph(%x : " + x + R"IR(, %w : Float(72, 1, 3, 3), %b : Float(72), %s : Float(1, 72, 1, 1)):
  %one : int[] = prim::Constant[value=[1, 1]]()
  %pad : int[] = prim::Constant[value=[1, 1, 1, 1]]()
  %g : int = prim::Constant[value=72]()
  %names : str[] = prim::Constant[value=["relu"]]()
  %scalars : float[] = prim::Constant[value=[]]()
  %ops : Tensor[] = prim::ListConstruct()
  %y : )IR" + x + R"IR( = kiln::conv_post_ops(%x, %w, %b, %one, %pad, %one, %g, %names, %scalars, %ops)
)IR" + tail;
}

TEST(LibraryChannelOpsTest, MeanAndGateOfASqueezeExciteBlock) {
  // ONNX's GlobalAveragePool (a keepdim mean) and the gate, scale first.
  EXPECT_EQ(Rewritten(Block(R"IR(  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(1, 72, 1, 1) = aten::mean(%y, %dims, %t)
  %z : Float(1, 72, 5, 5) = aten::mul(%s, %y)
  return (%m, %z))IR")),
            R"IR(graph(%x : Float(1, 72, 5, 5),
      %w : Float(72, 1, 3, 3),
      %b : Float(72),
      %s : Float(1, 72, 1, 1)):
  %one : int[] = prim::Constant[value=[1, 1]]()
  %pad : int[] = prim::Constant[value=[1, 1, 1, 1]]()
  %g : int = prim::Constant[value=72]()
  %names : str[] = prim::Constant[value=["relu"]]()
  %scalars : float[] = prim::Constant[value=[]]()
  %ops : Tensor[] = prim::ListConstruct()
  %y : Float(1, 72, 5, 5) = kiln::conv_post_ops(%x, %w, %b, %one, %pad, %one, %g, %names, %scalars, %ops)
  %m : Float(1, 72, 1, 1) = kiln::global_avg_pool(%y)
  %z : Float(1, 72, 5, 5) = kiln::channel_mul(%y, %s)
  return (%m, %z)
)IR");
}

TEST(LibraryChannelOpsTest, MeanForms) {
  const char* kPooled = "kiln::conv_post_ops kiln::global_avg_pool";
  // Negative dims in either order (ReduceMean with axes [-1, -2]).
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[-1, -2]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(1, 72, 1, 1) = aten::mean(%y, %dims, %t)
  return (%m))IR")),
            kPooled);
  // torch's mean.dim with its dtype argument None.
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %m : Float(1, 72, 1, 1) = aten::mean(%y, %dims, %t, %none)
  return (%m))IR")),
            kPooled);
  // adaptive_avg_pool2d(1).
  EXPECT_EQ(Kinds(Block(R"IR(  %o : int[] = prim::Constant[value=[1, 1]]()
  %m : Float(1, 72, 1, 1) = aten::adaptive_avg_pool2d(%y, %o)
  return (%m))IR")),
            kPooled);
}

TEST(LibraryChannelOpsTest, MeanWithoutKeepdimIsAPoolThenAReshape) {
  EXPECT_EQ(Rewritten(Block(R"IR(  %dims : int[] = prim::Constant[value=[3, 2]]()
  %f : bool = prim::Constant[value=0]()
  %m : Float(2, 72) = aten::mean(%y, %dims, %f)
  return (%m))IR",
                            2)),
            R"IR(graph(%x : Float(2, 72, 5, 5),
      %w : Float(72, 1, 3, 3),
      %b : Float(72),
      %s : Float(1, 72, 1, 1)):
  %one : int[] = prim::Constant[value=[1, 1]]()
  %pad : int[] = prim::Constant[value=[1, 1, 1, 1]]()
  %g : int = prim::Constant[value=72]()
  %names : str[] = prim::Constant[value=["relu"]]()
  %scalars : float[] = prim::Constant[value=[]]()
  %ops : Tensor[] = prim::ListConstruct()
  %y : Float(2, 72, 5, 5) = kiln::conv_post_ops(%x, %w, %b, %one, %pad, %one, %g, %names, %scalars, %ops)
  %0 : Float(2, 72, 1, 1) = kiln::global_avg_pool(%y)
  %1 : int[] = prim::Constant[value=[2, 72]]()
  %m : Float(2, 72) = aten::reshape(%0, %1)
  return (%m)
)IR");
}

TEST(LibraryChannelOpsTest, OtherMeansStay) {
  // Not only the spatial dims.
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[1, 2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(1, 1, 1, 1) = aten::mean(%y, %dims, %t)
  return (%m))IR")),
            "kiln::conv_post_ops aten::mean");
  // One spatial dim only.
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[3]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(1, 72, 5, 1) = aten::mean(%y, %dims, %t)
  return (%m))IR")),
            "kiln::conv_post_ops aten::mean");
  // An accumulation dtype.
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %dt : int = prim::Constant[value=6]()
  %m : Float(1, 72, 1, 1) = aten::mean(%y, %dims, %t, %dt)
  return (%m))IR")),
            "kiln::conv_post_ops aten::mean");
  // adaptive pooling to more than one value.
  EXPECT_EQ(Kinds(Block(R"IR(  %o : int[] = prim::Constant[value=[2, 2]]()
  %m : Float(1, 72, 2, 2) = aten::adaptive_avg_pool2d(%y, %o)
  return (%m))IR")),
            "kiln::conv_post_ops aten::adaptive_avg_pool2d");
  // A value a generated kernel computes (not channels-last in the library).
  EXPECT_EQ(Kinds(Block(R"IR(  %r : Float(1, 72, 5, 5) = aten::relu(%y)
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(1, 72, 1, 1) = aten::mean(%r, %dims, %t)
  return (%m))IR")),
            "kiln::conv_post_ops aten::relu aten::mean");
}

TEST(LibraryChannelOpsTest, GateForms) {
  // Batch 2, one gate per image; and a gate shared by the batch.
  EXPECT_EQ(Kinds(Block(R"IR(  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %m : Float(2, 72, 1, 1) = aten::mean(%y, %dims, %t)
  %z : Float(2, 72, 5, 5) = aten::mul(%y, %m)
  %z2 : Float(2, 72, 5, 5) = aten::mul(%z, %s)
  return (%z2))IR",
                        2)),
            "kiln::conv_post_ops kiln::global_avg_pool kiln::channel_mul kiln::channel_mul");
}

TEST(LibraryChannelOpsTest, OtherMultipliesStay) {
  // Same shapes (no broadcast), a scale with spatial extent, another
  // channel count, and a value a generated kernel computes.
  EXPECT_EQ(Kinds(R"IR(graph(%x : Float(1, 8, 5, 5), %w : Float(8, 8, 1, 1), %a : Float(1, 8, 5, 5), %r : Float(1, 8, 1, 5), %c : Float(1, 1, 1, 1)):
  %none : NoneType = prim::Constant()
  %one : int[] = prim::Constant[value=[1, 1]]()
  %zero : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %y : Float(1, 8, 5, 5) = aten::convolution(%x, %w, %none, %one, %zero, %one, %f, %zero, %g)
  %p : Float(1, 8, 5, 5) = aten::mul(%y, %a)
  %q : Float(1, 8, 5, 5) = aten::mul(%y, %r)
  %u : Float(1, 8, 5, 5) = aten::mul(%y, %c)
  %e : Float(1, 8, 5, 5) = aten::exp(%y)
  %v : Float(1, 8, 1, 1) = aten::mean(%x, %one, %f)
  %k : Float(1, 8, 5, 5) = aten::mul(%e, %v)
  return (%p, %q, %u, %k))IR"),
            "aten::convolution aten::mul aten::mul aten::mul aten::exp aten::mean aten::mul");
}

TEST(LibraryChannelOpsTest, AfterFusePostOpsAsTheCpuRunsThem) {
  // mobilenet_v3's block as the ONNX exporter writes it: the depthwise
  // convolution's hardswish and the gate's HardSigmoid fuse into their
  // convolutions; the mean and the gate multiply, which fuse_post_ops
  // leaves (the depthwise result has two uses), become library ops.
  EXPECT_EQ(Rewritten(R"IR(graph(%x : Float(1, 40, 6, 6), %w : Float(40, 1, 3, 3), %w1 : Float(8, 40, 1, 1), %w2 : Float(40, 8, 1, 1)):
  %none : NoneType = prim::Constant()
  %one : int[] = prim::Constant[value=[1, 1]]()
  %zero : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %g1 : int = prim::Constant[value=1]()
  %g : int = prim::Constant[value=40]()
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %c : Float(1, 40, 6, 6) = aten::convolution(%x, %w, %none, %one, %one, %one, %f, %zero, %g)
  %y : Float(1, 40, 6, 6) = aten::hardswish(%c)
  %m : Float(1, 40, 1, 1) = aten::mean(%y, %dims, %t)
  %h : Float(1, 8, 1, 1) = aten::convolution(%m, %w1, %none, %one, %zero, %one, %f, %zero, %g1)
  %r : Float(1, 8, 1, 1) = aten::relu(%h)
  %s0 : Float(1, 40, 1, 1) = aten::convolution(%r, %w2, %none, %one, %zero, %one, %f, %zero, %g1)
  %s : Float(1, 40, 1, 1) = aten::hardsigmoid(%s0)
  %z : Float(1, 40, 6, 6) = aten::mul(%s, %y)
  return (%z))IR",
                      /*post_ops=*/true),
            R"IR(graph(%x : Float(1, 40, 6, 6),
      %w : Float(40, 1, 3, 3),
      %w1 : Float(8, 40, 1, 1),
      %w2 : Float(40, 8, 1, 1)):
  %0 : NoneType = prim::Constant()
  %1 : int[] = prim::Constant[value=[1, 1]]()
  %2 : int[] = prim::Constant[value=[1, 1, 1, 1]]()
  %3 : int[] = prim::Constant[value=[1, 1]]()
  %4 : int = prim::Constant[value=40]()
  %5 : str[] = prim::Constant[value=["hardswish"]]()
  %6 : float[] = prim::Constant[value=[]]()
  %7 : Tensor[] = prim::ListConstruct()
  %y : Float(1, 40, 6, 6) = kiln::conv_post_ops(%x, %w, %0, %1, %2, %3, %4, %5, %6, %7)
  %m : Float(1, 40, 1, 1) = kiln::global_avg_pool(%y)
  %8 : NoneType = prim::Constant()
  %9 : int[] = prim::Constant[value=[1, 1]]()
  %10 : int[] = prim::Constant[value=[0, 0, 0, 0]]()
  %11 : int[] = prim::Constant[value=[1, 1]]()
  %12 : int = prim::Constant[value=1]()
  %13 : str[] = prim::Constant[value=["relu"]]()
  %14 : float[] = prim::Constant[value=[]]()
  %15 : Tensor[] = prim::ListConstruct()
  %r : Float(1, 8, 1, 1) = kiln::conv_post_ops(%m, %w1, %8, %9, %10, %11, %12, %13, %14, %15)
  %16 : NoneType = prim::Constant()
  %17 : int[] = prim::Constant[value=[1, 1]]()
  %18 : int[] = prim::Constant[value=[0, 0, 0, 0]]()
  %19 : int[] = prim::Constant[value=[1, 1]]()
  %20 : int = prim::Constant[value=1]()
  %21 : str[] = prim::Constant[value=["hardsigmoid"]]()
  %22 : float[] = prim::Constant[value=[]]()
  %23 : Tensor[] = prim::ListConstruct()
  %s : Float(1, 40, 1, 1) = kiln::conv_post_ops(%r, %w2, %16, %17, %18, %19, %20, %21, %22, %23)
  %z : Float(1, 40, 6, 6) = kiln::channel_mul(%y, %s)
  return (%z)
)IR");
}

}  // namespace
}  // namespace kiln::passes
