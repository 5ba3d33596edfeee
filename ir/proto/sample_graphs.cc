#include "ir/proto/sample_graphs.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/tensor.h"

namespace kiln::ir::testing {
namespace {

double DoubleFromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

template <typename T>
Tensor TensorOf(DType dtype, std::vector<int64_t> sizes, const std::vector<T>& data) {
  return *Tensor::FromBytes(dtype, std::move(sizes), data.data(), data.size() * sizeof(T));
}

Node* Constant(Graph* g, AttributeValue value, TypePtr type, const char* name) {
  Node* n = g->insertNode(g->create(sym::kConstant));
  n->setAttribute(sym::kValue, std::move(value));
  n->output()->setType(std::move(type));
  if (name != nullptr) n->output()->setDebugName(name);
  return n;
}

TypePtr RefinedTensor() {
  TensorInfo info;
  info.dtype = DType::kFloat32;
  info.sizes = std::vector<std::optional<int64_t>>{2, std::nullopt, 3};
  info.device = Device{"cuda", 0};
  info.requires_grad = false;
  return Type::TensorWith(std::move(info));
}

TypePtr StridedTensor() {
  TensorInfo info;
  info.dtype = DType::kFloat16;
  info.sizes = std::vector<std::optional<int64_t>>{4, 5};
  info.strides = std::vector<int64_t>{5, 1};
  info.device = Device{"cpu", -1};
  return Type::TensorWith(std::move(info));
}

}  // namespace

std::unique_ptr<Graph> MakeFeatureGraph() {
  auto g = std::make_unique<Graph>();
  const Symbol add = Symbol::FromQualString("aten::add");
  const Symbol mul = Symbol::FromQualString("aten::mul");
  const Symbol gt = Symbol::FromQualString("aten::gt");

  Value* x = g->addInput("x");
  x->setType(RefinedTensor());
  Value* self = g->addInput("self");
  self->setType(Type::Class("__torch__.models.MLP"));
  Value* unnamed_in = g->addInput();
  unnamed_in->setType(Type::Int());

  // A value that is deleted again, leaving a gap in the unique numbers.
  g->create(add, 3)->destroy();

  // Numeric names, exactly as PyTorch printed them.
  Node* c42 = Constant(g.get(), int64_t{7}, Type::Int(), nullptr);
  GraphInternals::SetNameUnchecked(c42->output(), "42");

  Constant(g.get(), DoubleFromBits(0x7ff8dead0000beefULL), Type::Float(), "nan_payload");
  Constant(g.get(), DoubleFromBits(0xfff0000000000001ULL), Type::Float(), "signaling_nan");
  Constant(g.get(), -0.0, Type::Float(), "neg_zero");
  Constant(g.get(), std::numeric_limits<double>::infinity(), Type::Float(), "inf");
  Constant(g.get(), std::numeric_limits<double>::denorm_min(), Type::Float(), "denorm");
  Constant(g.get(), std::string("caf\xc3\xa9 \xff\xfe bytes\n\"q\"", 18), Type::Str(), "str");
  Constant(g.get(), std::string(), Type::Str(), "empty_str");
  Constant(g.get(), std::vector<double>{1.5, -0.0, DoubleFromBits(0x7ff0000000000abcULL)},
           Type::List(Type::Float()), "fs");
  Constant(g.get(), std::vector<double>{}, Type::List(Type::Float()), "fs_empty");
  Constant(g.get(), std::vector<int64_t>{1, -2, std::numeric_limits<int64_t>::min()},
           Type::List(Type::Int()), "is");
  Constant(g.get(), std::vector<std::string>{"a", "", std::string("\0b", 2)},
           Type::List(Type::Str()), "ss");
  Constant(g.get(), std::complex<double>(-0.0, DoubleFromBits(0xfff8000000000001ULL)),
           Type::Complex(), "c");
  Constant(g.get(),
           std::vector<std::complex<double>>{{1, 2}, {DoubleFromBits(0x7ff8000000000002ULL), 3}},
           Type::List(Type::Complex()), "cs");

  // Tensors with data.
  Constant(g.get(),
           TensorOf<float>(DType::kFloat32, {2, 3}, {1.f, -0.f, 2.5f, 1e-30f, -7.f, 3.25f}),
           Type::Tensor(), "t_float");
  Constant(g.get(), TensorOf<int64_t>(DType::kInt64, {3}, {1, -1, int64_t{1} << 50}),
           Type::Tensor(), "t_long");
  Constant(g.get(), TensorOf<uint8_t>(DType::kBool, {2, 2}, {1, 0, 0, 1}), Type::Tensor(),
           "t_bool");
  Constant(g.get(), TensorOf<uint16_t>(DType::kFloat16, {2}, {0x3c00, 0x7e01}), Type::Tensor(),
           "t_half");
  Constant(g.get(), TensorOf<double>(DType::kFloat64, {}, {DoubleFromBits(0x7ff8000000000123ULL)}),
           Type::Tensor(), "t_scalar");
  Constant(g.get(), TensorOf<float>(DType::kFloat32, {0, 4}, {}), Type::Tensor(), "t_empty");
  {
    // A non-contiguous view: saved as its contiguous values.
    Tensor base = TensorOf<int32_t>(DType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
    Constant(g.get(), Tensor::View(base, {3, 2}, {1, 3}, 0), Type::Tensor(), "t_view");
  }
  Constant(g.get(), Tensor::Placeholder(DType::kFloat32, {64, 3, 7, 7}), Type::Tensor(),
           "t_placeholder");
  Constant(g.get(), Tensor::Placeholder(DType::kBFloat16, {3, 4}, {1, 3}), Type::Tensor(),
           "t_placeholder_strided");

  Node* attrs = g->insertNode(g->create(Symbol::FromQualString("kiln::attrs"), 0));
  attrs->setAttribute(Symbol::Attr("undefined"), Tensor());
  attrs->setAttribute(Symbol::Attr("ts"),
                      std::vector<Tensor>{TensorOf<int8_t>(DType::kInt8, {2}, {-1, 127}),
                                          Tensor::Placeholder(DType::kInt16, {5}), Tensor()});
  attrs->setAttribute(Symbol::Attr("ts_empty"), std::vector<Tensor>{});
  attrs->setAttribute(Symbol::Attr("ty"), Type::Dict(Type::Str(), Type::Optional(StridedTensor())));
  attrs->setAttribute(
      Symbol::Attr("tys"),
      std::vector<TypePtr>{Type::Tuple({Type::Int(), Type::Tuple({}), Type::Any()}),
                           Type::Number(), Type::None(), Type::DeviceType(), Type::Layout(),
                           Type::ScalarType(), Type::MemoryFormat(), Type::Generator(),
                           Type::Bool(), Type::List(Type::List(Type::Int()))});
  attrs->setAttribute(Symbol::FromQualString("custom::name"), int64_t{-5});
  attrs->setSourceLocation("torch/nn/functional.py:1506:17");
  attrs->setScope("__module.features/__module.features.0");

  Node* sum = g->insertNode(g->create(add, {x, x, c42->output()}));
  sum->output()->setType(StridedTensor());
  sum->setSourceLocation("model.py:3:9");
  sum->setScope("__module.fc1");

  // Unnamed values, one of them used inside the blocks.
  Node* cond_node = g->insertNode(g->create(gt, {unnamed_in, c42->output()}));
  cond_node->output()->setType(Type::Bool());

  // prim::If with a prim::Loop nested in its then-block.
  Node* if_node = g->insertNode(g->create(sym::kIf, {cond_node->output()}, 2));
  if_node->output(0)->setDebugName("if_out");
  if_node->output(1)->setType(Type::Optional(Type::Int()));
  {
    Block* then_block = if_node->addBlock();
    WithInsertPoint guard(then_block);
    Node* loop = g->insertNode(g->create(sym::kLoop, {unnamed_in, cond_node->output(), x}, 1));
    loop->output()->setDebugName("loop_out");
    Block* body = loop->addBlock();
    Value* trip = body->addInput("i");
    trip->setType(Type::Int());
    Value* carried = body->addInput();
    {
      WithInsertPoint body_guard(body);
      Node* m = g->insertNode(g->create(mul, {carried, sum->output()}));
      Node* c = g->insertNode(g->create(gt, {trip, c42->output()}));
      c->output()->setType(Type::Bool());
      body->registerOutput(c->output());
      body->registerOutput(m->output());
    }
    then_block->registerOutput(loop->output());
    then_block->registerOutput(unnamed_in);
  }
  {
    Block* else_block = if_node->addBlock();
    WithInsertPoint guard(else_block);
    Node* none = g->insertNode(g->create(sym::kConstant));
    none->output()->setType(Type::None());
    else_block->registerOutput(x);
    else_block->registerOutput(none->output());
  }
  g->registerOutput(if_node->output(0));
  g->registerOutput(if_node->output(1));
  g->registerOutput(x);  // a graph input returned directly
  GraphInternals::FinishNaming(g.get());
  return g;
}

std::unique_ptr<Graph> MakeChainGraph(size_t num_nodes) {
  auto g = std::make_unique<Graph>();
  const Symbol ops[] = {Symbol::FromQualString("aten::add"), Symbol::FromQualString("aten::mul"),
                        Symbol::FromQualString("aten::relu"), Symbol::FromQualString("aten::tanh")};
  std::vector<Value*> live;
  for (int i = 0; i < 8; ++i) live.push_back(g->addInput("x" + std::to_string(i)));
  Node* one = g->insertNode(g->create(sym::kConstant));
  one->i_(sym::kValue, 1);
  one->output()->setType(Type::Int())->setDebugName("one");
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (size_t i = 1; i < num_nodes; ++i) {
    const uint64_t r = next();
    const Symbol op = ops[r % 4];
    Value* a = live[live.size() - 1 - (r >> 8) % std::min<size_t>(live.size(), 16)];
    Node* n;
    if (op == ops[2] || op == ops[3]) {
      n = g->create(op, {a});
    } else {
      Value* b = live[live.size() - 1 - (r >> 16) % std::min<size_t>(live.size(), 16)];
      n = op == ops[0] ? g->create(op, {a, b, one->output()}) : g->create(op, {a, b});
    }
    g->insertNode(n);
    n->output()->setDebugName("t" + std::to_string(i));
    live.push_back(n->output());
  }
  g->registerOutput(live.back());
  return g;
}

std::unique_ptr<Graph> MakeControlFlowGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput();
  Value* n = g->addInput();
  n->setType(Type::Int());
  Node* cond = g->insertNode(g->create(Symbol::FromQualString("aten::Bool"), {n}));
  cond->output()->setType(Type::Bool());
  Node* if_node = g->insertNode(g->create(sym::kIf, {cond->output()}, 1));
  for (int b = 0; b < 2; ++b) {
    Block* block = if_node->addBlock();
    WithInsertPoint guard(block);
    Node* op = g->insertNode(
        g->create(Symbol::FromQualString(b == 0 ? "aten::relu" : "aten::neg"), {x}));
    block->registerOutput(op->output());
  }
  Node* loop = g->insertNode(g->create(sym::kLoop, {n, cond->output(), if_node->output()}, 1));
  Block* body = loop->addBlock();
  body->addInput()->setType(Type::Int());
  Value* carried = body->addInput();
  {
    WithInsertPoint guard(body);
    Node* m = g->insertNode(g->create(Symbol::FromQualString("aten::mul"), {carried, x}));
    body->registerOutput(cond->output());
    body->registerOutput(m->output());
  }
  g->registerOutput(loop->output());
  return g;
}

}  // namespace kiln::ir::testing
