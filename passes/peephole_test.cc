#include "passes/peephole.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "passes/pass_registry.h"

namespace kiln::passes {
namespace {

// Printed IR with unnamed values renumbered by first appearance.
std::string Renumber(const std::string& text) {
  std::string out;
  std::vector<std::string> seen;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '%' && i + 1 < text.size() && isdigit(static_cast<unsigned char>(text[i + 1]))) {
      size_t j = i + 1;
      while (j < text.size() && (isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_' ||
                                 text[j] == '.')) {
        ++j;
      }
      const std::string name = text.substr(i, j - i);
      size_t id = 0;
      while (id < seen.size() && seen[id] != name) ++id;
      if (id == seen.size()) seen.push_back(name);
      absl::StrAppend(&out, "%", id);
      i = j;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::string Canonical(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? Renumber(ir::PrintGraph(**g)) : "";
}

struct Case {
  const char* rule;      // the counter that must fire ("" for must-not-change)
  const char* input;
  const char* expected;  // null: the graph must not change
};

void Check(const Case& c) {
  SCOPED_TRACE(c.rule);
  auto g = ir::ParseGraph(c.input);
  ASSERT_TRUE(g.ok()) << g.status();
  PassStatistics stats;
  absl::StatusOr<bool> changed = RunPeephole(**g, stats);
  ASSERT_TRUE(changed.ok()) << changed.status();
  absl::Status verified = ir::Verify(**g);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << ir::PrintGraph(**g);
  const std::string actual = Renumber(ir::PrintGraph(**g));
  if (c.expected == nullptr) {
    EXPECT_FALSE(*changed);
    EXPECT_EQ(actual, Canonical(c.input));
    return;
  }
  EXPECT_TRUE(*changed);
  EXPECT_GT(stats.Get(c.rule), 0) << "rule " << c.rule << " did not fire";
  EXPECT_EQ(actual, Canonical(c.expected));
}

// ------------------------------------------------------------ arith

TEST(PeepholeArithTest, IntIdentities) {
  Check({"add_zero", R"IR(graph(%n : int):
  %zero : int = prim::Constant[value=0]()
  %a : int = aten::add(%n, %zero)
  %b : int = aten::add(%zero, %a)
  return (%b)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
  Check({"sub_zero", R"IR(graph(%n : int):
  %zero : int = prim::Constant[value=0]()
  %a : int = aten::sub(%n, %zero)
  return (%a)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
  Check({"mul_one", R"IR(graph(%n : int):
  %one : int = prim::Constant[value=1]()
  %a : int = aten::mul(%one, %n)
  return (%a)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
  Check({"floordiv_one", R"IR(graph(%n : int):
  %one : int = prim::Constant[value=1]()
  %a : int = aten::floordiv(%n, %one)
  return (%a)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
}

TEST(PeepholeArithTest, TensorIdentitiesWithIntScalars) {
  // PyTorch parity: an int 0 / 1 keeps any non-bool dtype, known or not.
  Check({"add_zero", R"IR(graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zero, %one)
  %b : Tensor = aten::relu(%a)
  return (%b)
)IR",
         R"IR(graph(%x : Tensor):
  %b : Tensor = aten::relu(%x)
  return (%b)
)IR"});
  Check({"sub_zero", R"IR(graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::sub(%x, %zero, %one)
  return (%a)
)IR",
         R"IR(graph(%x : Tensor):
  return (%x)
)IR"});
  Check({"mul_one", R"IR(graph(%x : Long(2, 3)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %one)
  return (%a)
)IR",
         R"IR(graph(%x : Long(2, 3)):
  return (%x)
)IR"});
}

TEST(PeepholeArithTest, TensorIdentitiesWithFloatScalarsNeedAFloatingDtype) {
  Check({"add_zero", R"IR(graph(%x : Float(2)):
  %zero : float = prim::Constant[value=0.]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zero, %one)
  %m : float = prim::Constant[value=1.]()
  %b : Tensor = aten::mul(%a, %m)
  return (%b)
)IR",
         R"IR(graph(%x : Float(2)):
  return (%x)
)IR"});
  Check({"div_one", R"IR(graph(%x : Double(4)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::div(%x, %one)
  return (%a)
)IR",
         R"IR(graph(%x : Double(4)):
  return (%x)
)IR"});
}

TEST(PeepholeArithTest, IntChainsMerge) {
  Check({"int_add_sub_chain", R"IR(graph(%n : int):
  %c1 : int = prim::Constant[value=3]()
  %c2 : int = prim::Constant[value=4]()
  %c3 : int = prim::Constant[value=2]()
  %a : int = aten::add(%n, %c1)
  %b : int = aten::sub(%a, %c2)
  %c : int = aten::add(%c3, %b)
  return (%c)
)IR",
         R"IR(graph(%n : int):
  %0 : int = prim::Constant[value=1]()
  %c : int = aten::add(%n, %0)
  return (%c)
)IR"});
  // The constants cancel: n + 3 - 3 is n.
  Check({"int_add_sub_chain", R"IR(graph(%n : int):
  %c1 : int = prim::Constant[value=3]()
  %a : int = aten::add(%n, %c1)
  %b : int = aten::sub(%a, %c1)
  return (%b)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
}

TEST(PeepholeArithTest, ConversionsThatUndoEachOther) {
  Check({"convert_to_same_type", R"IR(graph(%n : int):
  %a : int = aten::Int(%n)
  return (%a)
)IR",
         R"IR(graph(%n : int):
  return (%n)
)IR"});
  Check({"scalar_of_num_to_tensor", R"IR(graph(%f : float):
  %t : Tensor = prim::NumToTensor(%f)
  %a : float = aten::Float(%t)
  return (%a, %t)
)IR",
         R"IR(graph(%f : float):
  %t : Tensor = prim::NumToTensor(%f)
  return (%f, %t)
)IR"});
}

TEST(PeepholeArithTest, MustNotChange) {
  // x * 0 on floats (NaN, inf, -0 make it not 0).
  Check({"", R"IR(graph(%x : Float(2)):
  %zero : float = prim::Constant[value=0.]()
  %a : Tensor = aten::mul(%x, %zero)
  return (%a)
)IR",
         nullptr});
  // x + 0. on a tensor of unknown dtype (an int tensor would become float).
  Check({"", R"IR(graph(%x : Tensor):
  %zero : float = prim::Constant[value=0.]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zero, %one)
  %m : float = prim::Constant[value=1.]()
  %b : Tensor = aten::mul(%a, %m)
  return (%b)
)IR",
         nullptr});
  // x + 0. on a known int tensor; x + 0 on a bool tensor (both promote).
  Check({"", R"IR(graph(%x : Long(2), %y : Bool(2)):
  %zf : float = prim::Constant[value=0.]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zf, %one)
  %b : Tensor = aten::add(%y, %zero, %one)
  return (%a, %b)
)IR",
         nullptr});
  // x / 1 on an unknown or integral dtype is a float division.
  Check({"", R"IR(graph(%x : Tensor, %n : int):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::div(%x, %one)
  %b : float = aten::div(%n, %one)
  return (%a, %b)
)IR",
         nullptr});
  // alpha != 1; x + 1.
  Check({"", R"IR(graph(%x : Tensor, %y : Tensor):
  %zero : int = prim::Constant[value=0]()
  %two : int = prim::Constant[value=2]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zero, %two)
  %b : Tensor = aten::add(%y, %one, %one)
  return (%a, %b)
)IR",
         nullptr});
}

// ------------------------------------------------------------ shape

TEST(PeepholeShapeTest, QueriesOnKnownShapes) {
  Check({"size_of_known_shape", R"IR(graph(%x : Float(2, 3), %y : Tensor):
  %s : int[] = aten::size(%x)
  %v : Tensor = aten::view(%y, %s)
  %m : int = prim::Constant[value=-1]()
  %d : int = aten::size(%x, %m)
  return (%v, %d)
)IR",
         R"IR(graph(%x : Float(2, 3), %y : Tensor):
  %0 : int[] = prim::Constant[value=[2, 3]]()
  %v : Tensor = aten::view(%y, %0)
  %1 : int = prim::Constant[value=3]()
  return (%v, %1)
)IR"});
  Check({"dim_of_known_rank", R"IR(graph(%x : Float(*, 3)):
  %d : int = aten::dim(%x)
  return (%d)
)IR",
         R"IR(graph(%x : Float(*, 3)):
  %0 : int = prim::Constant[value=2]()
  return (%0)
)IR"});
  Check({"len_of_shape", R"IR(graph(%x : Float(*, *, 4), %y : Float(5, *)):
  %s : int[] = aten::size(%x)
  %n : int = aten::len(%s)
  %m : int = aten::len(%y)
  return (%n, %m)
)IR",
         R"IR(graph(%x : Float(*, *, 4), %y : Float(5, *)):
  %0 : int = prim::Constant[value=3]()
  %1 : int = prim::Constant[value=5]()
  return (%0, %1)
)IR"});
  Check({"numel_of_known_shape", R"IR(graph(%x : Float(2, 3, 4)):
  %n : int = aten::numel(%x)
  return (%n)
)IR",
         R"IR(graph(%x : Float(2, 3, 4)):
  %0 : int = prim::Constant[value=24]()
  return (%0)
)IR"});
  Check({"dtype_of_known", R"IR(graph(%x : Float(2)):
  %d : int = prim::dtype(%x)
  return (%d)
)IR",
         R"IR(graph(%x : Float(2)):
  %0 : int = prim::Constant[value=6]()
  return (%0)
)IR"});
  Check({"device_of_known", R"IR(graph(%x : Float(2, device=cpu)):
  %d : Device = prim::device(%x)
  return (%d)
)IR",
         R"IR(graph(%x : Float(2, device=cpu)):
  %0 : Device = prim::Constant[value="cpu"]()
  return (%0)
)IR"});
  Check({"is_floating_point_of_known", R"IR(graph(%x : Long(2)):
  %d : bool = aten::is_floating_point(%x)
  return (%d)
)IR",
         R"IR(graph(%x : Long(2)):
  %0 : bool = prim::Constant[value=0]()
  return (%0)
)IR"});
  Check({"is_cuda_of_known", R"IR(graph(%x : Float(2, device=cpu)):
  %d : bool = prim::is_cuda(%x)
  return (%d)
)IR",
         R"IR(graph(%x : Float(2, device=cpu)):
  %0 : bool = prim::Constant[value=0]()
  return (%0)
)IR"});
}

TEST(PeepholeShapeTest, ConversionsToTheSameType) {
  Check({"to_same_type", R"IR(graph(%x : Float(2)):
  %dt : int = prim::Constant[value=6]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::to(%x, %dt, %f, %f, %none)
  return (%a)
)IR",
         R"IR(graph(%x : Float(2)):
  return (%x)
)IR"});
  Check({"type_as_same", R"IR(graph(%x : Float(2, device=cpu), %y : Float(3, device=cpu)):
  %a : Tensor = aten::type_as(%x, %y)
  return (%a)
)IR",
         R"IR(graph(%x : Float(2, device=cpu), %y : Float(3, device=cpu)):
  return (%x)
)IR"});
  // Other dtype, copy=True, unknown dtype, unknown device: all kept.
  Check({"", R"IR(graph(%x : Float(2), %y : Tensor, %z : Double(2, device=cpu), %w : Float(2)):
  %half : int = prim::Constant[value=5]()
  %dt : int = prim::Constant[value=6]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::to(%x, %half, %f, %f, %none)
  %b : Tensor = aten::to(%x, %dt, %f, %t, %none)
  %c : Tensor = aten::to(%y, %dt, %f, %f, %none)
  %d : Tensor = aten::type_as(%w, %x)
  %e : Tensor = aten::type_as(%x, %x)
  return (%a, %b, %c, %d, %e)
)IR",
         nullptr});
}

TEST(PeepholeShapeTest, ViewsThatChangeNothing) {
  Check({"t_of_t", R"IR(graph(%x : Tensor):
  %a : Tensor = aten::t(%x)
  %b : Tensor = aten::t(%a)
  return (%b)
)IR",
         R"IR(graph(%x : Tensor):
  return (%x)
)IR"});
  Check({"transpose_of_transpose", R"IR(graph(%x : Float(2, 3, 4)):
  %i : int = prim::Constant[value=0]()
  %j : int = prim::Constant[value=-1]()
  %k : int = prim::Constant[value=2]()
  %a : Tensor = aten::transpose(%x, %i, %j)
  %b : Tensor = aten::transpose(%a, %k, %i)
  return (%b)
)IR",
         R"IR(graph(%x : Float(2, 3, 4)):
  return (%x)
)IR"});
  Check({"reshape_to_same_shape", R"IR(graph(%x : Float(2, 3)):
  %s : int[] = prim::Constant[value=[2, -1]]()
  %a : Tensor = aten::reshape(%x, %s)
  return (%a)
)IR",
         R"IR(graph(%x : Float(2, 3)):
  return (%x)
)IR"});
  Check({"view_to_same_shape", R"IR(graph(%x : Float(2, 3)):
  %s : int[] = prim::Constant[value=[2, 3]]()
  %a : Tensor = aten::view(%x, %s)
  return (%a)
)IR",
         R"IR(graph(%x : Float(2, 3)):
  return (%x)
)IR"});
  Check({"expand_to_same_shape", R"IR(graph(%x : Float(2, 3)):
  %s : int[] = prim::Constant[value=[-1, 3]]()
  %f : bool = prim::Constant[value=0]()
  %a : Tensor = aten::expand(%x, %s, %f)
  return (%a)
)IR",
         R"IR(graph(%x : Float(2, 3)):
  return (%x)
)IR"});
}

TEST(PeepholeShapeTest, MustNotChange) {
  Check({"", R"IR(graph(%x : Float(2, 3), %y : Tensor):
  %s : int[] = prim::Constant[value=[3, 2]]()
  %a : Tensor = aten::reshape(%x, %s)
  %s2 : int[] = prim::Constant[value=[2, 3]]()
  %b : Tensor = aten::view(%y, %s2)
  %e : int[] = prim::Constant[value=[4, 2, 3]]()
  %f : bool = prim::Constant[value=0]()
  %c : Tensor = aten::expand(%x, %e, %f)
  %i : int = prim::Constant[value=0]()
  %j : int = prim::Constant[value=1]()
  %k : int = prim::Constant[value=2]()
  %t1 : Tensor = aten::transpose(%y, %i, %j)
  %t2 : Tensor = aten::transpose(%t1, %i, %k)
  %d : int = aten::dim(%y)
  %sz : int[] = aten::size(%y)
  return (%a, %b, %c, %t2, %d, %sz)
)IR",
         nullptr});
  // A size list that is appended to is not a shared constant.
  Check({"", R"IR(graph(%x : Float(2, 3)):
  %s : int[] = aten::size(%x)
  %one : int = prim::Constant[value=1]()
  %r : int[] = aten::append(%s, %one)
  return (%s)
)IR",
         nullptr});
}

// ------------------------------------------------------------ control

TEST(PeepholeControlTest, IsNoneFromTypes) {
  Check({"is_none", R"IR(graph(%x : Tensor, %o : int?):
  %none : NoneType = prim::Constant()
  %a : bool = aten::__is__(%x, %none)
  %b : bool = aten::__isnot__(%none, %x)
  %c : bool = aten::__is__(%none, %none)
  %d : bool = aten::__is__(%o, %none)
  return (%a, %b, %c, %d)
)IR",
         R"IR(graph(%x : Tensor, %o : int?):
  %none : NoneType = prim::Constant()
  %0 : bool = prim::Constant[value=0]()
  %1 : bool = prim::Constant[value=1]()
  %2 : bool = prim::Constant[value=1]()
  %d : bool = aten::__is__(%o, %none)
  return (%0, %1, %2, %d)
)IR"});
}

TEST(PeepholeControlTest, IfWithIdenticalBranchesDisappears) {
  Check({"empty_if", R"IR(graph(%c : bool, %x : Tensor, %y : Tensor):
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      -> (%x, %y)
    block1():
      -> (%x, %y)
  %r : Tensor = aten::add(%a, %b, %c)
  return (%r)
)IR",
         R"IR(graph(%c : bool, %x : Tensor, %y : Tensor):
  %r : Tensor = aten::add(%x, %y, %c)
  return (%r)
)IR"});
}

TEST(PeepholeControlTest, IfOutputsThatDoNotDependOnTheBranch) {
  Check({"if_same_outputs", R"IR(graph(%c : bool, %x : Tensor):
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      %y : Tensor = aten::relu(%x)
      -> (%x, %y)
    block1():
      -> (%x, %x)
  return (%a, %b)
)IR",
         R"IR(graph(%c : bool, %x : Tensor):
  %b : Tensor = prim::If(%c)
    block0():
      %y : Tensor = aten::relu(%x)
      -> (%y)
    block1():
      -> (%x)
  return (%x, %b)
)IR"});
  Check({"if_yields_condition", R"IR(graph(%c : bool):
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %a : bool = prim::If(%c)
    block0():
      -> (%t)
    block1():
      -> (%f)
  return (%a)
)IR",
         R"IR(graph(%c : bool):
  return (%c)
)IR"});
}

TEST(PeepholeControlTest, MustNotChange) {
  // A branch with a side effect; different outputs; False/True is `not c`.
  Check({"", R"IR(graph(%c : bool, %x : Tensor, %y : Tensor):
  %s : str = prim::Constant[value="hi"]()
   = prim::If(%c)
    block0():
       = prim::Print(%s)
      -> ()
    block1():
      -> ()
  %a : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      -> (%y)
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %b : bool = prim::If(%c)
    block0():
      -> (%f)
    block1():
      -> (%t)
  return (%a, %b)
)IR",
         nullptr});
}

// ------------------------------------------------------------ lists

TEST(PeepholeListTest, ReadsOfAListConstruct) {
  Check({"list_unpack_of_construct", R"IR(graph(%a : int, %b : int):
  %l : int[] = prim::ListConstruct(%a, %b)
  %x : int, %y : int = prim::ListUnpack(%l)
  return (%y, %x)
)IR",
         R"IR(graph(%a : int, %b : int):
  return (%b, %a)
)IR"});
  Check({"getitem_of_construct", R"IR(graph(%a : Tensor, %b : Tensor):
  %l : Tensor[] = prim::ListConstruct(%a, %b)
  %i : int = prim::Constant[value=-1]()
  %x : Tensor = aten::__getitem__(%l, %i)
  return (%x)
)IR",
         R"IR(graph(%a : Tensor, %b : Tensor):
  return (%b)
)IR"});
  Check({"len_of_construct", R"IR(graph(%a : int, %x : Tensor):
  %l : int[] = prim::ListConstruct(%a, %a, %a)
  %n : int = aten::len(%l)
  %v : Tensor = aten::view(%x, %l)
  return (%n, %v)
)IR",
         R"IR(graph(%a : int, %x : Tensor):
  %l : int[] = prim::ListConstruct(%a, %a, %a)
  %0 : int = prim::Constant[value=3]()
  %v : Tensor = aten::view(%x, %l)
  return (%0, %v)
)IR"});
}

TEST(PeepholeListTest, ReadsOfATupleConstruct) {
  Check({"tuple_index_of_construct", R"IR(graph(%a : int, %b : str):
  %t : (int, str) = prim::TupleConstruct(%a, %b)
  %i : int = prim::Constant[value=1]()
  %x : str = prim::TupleIndex(%t, %i)
  return (%x)
)IR",
         R"IR(graph(%a : int, %b : str):
  return (%b)
)IR"});
  Check({"tuple_unpack_of_construct", R"IR(graph(%a : int, %b : str):
  %t : (int, str) = prim::TupleConstruct(%a, %b)
  %x : int, %y : str = prim::TupleUnpack(%t)
  return (%y, %x, %t)
)IR",
         R"IR(graph(%a : int, %b : str):
  %t : (int, str) = prim::TupleConstruct(%a, %b)
  return (%b, %a, %t)
)IR"});
}

TEST(PeepholeListTest, MutatedListsAreLeftAlone) {
  Check({"", R"IR(graph(%a : int, %b : int):
  %l : int[] = prim::ListConstruct(%a, %b)
  %r : int[] = aten::append(%l, %a)
  %n : int = aten::len(%l)
  %z : int = prim::Constant[value=0]()
  %e : int = aten::__getitem__(%l, %z)
  %x : int, %y : int, %w : int = prim::ListUnpack(%l)
  return (%n, %e, %x)
)IR",
         nullptr});
  // A list that escapes into a block output or a tuple may be written later.
  Check({"", R"IR(graph(%a : int, %c : bool):
  %l : int[] = prim::ListConstruct(%a)
  %t : (int[]) = prim::TupleConstruct(%l)
  %n : int = aten::len(%l)
  %z : int = prim::Constant[value=5]()
  %e : int = aten::__getitem__(%l, %z)
  return (%n, %t, %e)
)IR",
         nullptr});
}

// ------------------------------------------------------------ the driver

TEST(PeepholeDriverTest, ChainsCollapseInOneRun) {
  Check({"mul_one", R"IR(graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = aten::mul(%x, %one)
  %b : Tensor = aten::add(%a, %zero, %one)
  %c : Tensor = aten::mul(%b, %one)
  %d : Tensor = aten::sub(%c, %zero, %one)
  return (%d)
)IR",
         R"IR(graph(%x : Tensor):
  return (%x)
)IR"});
}

TEST(PeepholeDriverTest, NestedBlocksAreVisited) {
  Check({"add_zero", R"IR(graph(%c : bool, %n : int):
  %zero : int = prim::Constant[value=0]()
  %r : int = prim::If(%c)
    block0():
      %a : int = aten::add(%n, %zero)
      -> (%a)
    block1():
      -> (%n)
  return (%r)
)IR",
         R"IR(graph(%c : bool, %n : int):
  return (%n)
)IR"});
}

TEST(PeepholeDriverTest, SecondRunChangesNothing) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3), %n : int):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %zero, %one)
  %s : int[] = aten::size(%a)
  %k : int = aten::add(%n, %one)
  %k2 : int = aten::add(%k, %one)
  return (%s, %k2)
)IR");
  ASSERT_TRUE(g.ok());
  PassStatistics stats;
  EXPECT_TRUE(*RunPeephole(**g, stats));
  EXPECT_FALSE(*RunPeephole(**g, stats));
}

TEST(PeepholeDriverTest, EveryRuleIsNamedAndRooted) {
  for (const PeepholeRule& r : AllPeepholeRules()) {
    EXPECT_TRUE(r.root.valid()) << r.name;
    EXPECT_NE(r.apply, nullptr) << r.name;
  }
  PassRegistry registry;
  ASSERT_TRUE(RegisterPeepholePass(registry).ok());
  EXPECT_TRUE(registry.Contains("peephole"));
}

}  // namespace
}  // namespace kiln::passes
