#include "lazy/lazy_tensor.h"

#include <atomic>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lazy/backend_interface.h"
#include "lazy/eager.h"
#include "lazy/graph_executor.h"
#include "lazy/lazy_tensor_data.h"
#include "lazy/metrics.h"
#include "lazy/shape_inference.h"
#include "support/status.h"

namespace kiln::lazy {
namespace {

// --- the op kinds (name, what the lowering emits, the eager overload) ---
const OpKind kAdd{"add", "aten::add", "aten::add.Tensor"};
const OpKind kAddScalar{"add_scalar", "aten::add", "aten::add.Scalar"};
const OpKind kSub{"sub", "aten::sub", "aten::sub.Tensor"};
const OpKind kSubScalar{"sub_scalar", "aten::sub", "aten::sub.Scalar"};
const OpKind kRSubScalar{"rsub_scalar", "aten::rsub", "aten::rsub.Scalar"};
const OpKind kMul{"mul", "aten::mul", "aten::mul.Tensor"};
const OpKind kMulScalar{"mul_scalar", "aten::mul", "aten::mul.Scalar"};
const OpKind kDiv{"div", "aten::div", "aten::div.Tensor"};
const OpKind kDivScalar{"div_scalar", "aten::div", "aten::div.Scalar"};
const OpKind kMaximum{"maximum", "aten::maximum", "aten::maximum"};
const OpKind kMinimum{"minimum", "aten::minimum", "aten::minimum"};
const OpKind kPowScalar{"pow_scalar", "aten::pow", "aten::pow.Tensor_Scalar"};
const OpKind kSquare{"square", "aten::square", "aten::square"};
const OpKind kGtScalar{"gt_scalar", "aten::gt", "aten::gt.Scalar"};
const OpKind kLtScalar{"lt_scalar", "aten::lt", "aten::lt.Scalar"};
const OpKind kGt{"gt", "aten::gt", "aten::gt.Tensor"};
const OpKind kEq{"eq", "aten::eq", "aten::eq.Tensor"};
const OpKind kRelu{"relu", "aten::relu", "aten::relu"};
const OpKind kTanh{"tanh", "aten::tanh", "aten::tanh"};
const OpKind kSigmoid{"sigmoid", "aten::sigmoid", "aten::sigmoid"};
const OpKind kExp{"exp", "aten::exp", "aten::exp"};
const OpKind kLog{"log", "aten::log", "aten::log"};
const OpKind kNeg{"neg", "aten::neg", "aten::neg"};
const OpKind kSqrt{"sqrt", "aten::sqrt", "aten::sqrt"};
const OpKind kAbs{"abs", "aten::abs", "aten::abs"};
const OpKind kClamp{"clamp", "aten::clamp", "aten::clamp"};
const OpKind kTo{"to", "aten::to", "aten::to.dtype"};
const OpKind kMm{"mm", "aten::mm", "aten::mm"};
const OpKind kMatmul{"matmul", "aten::matmul", "aten::matmul"};
const OpKind kAddmm{"addmm", "aten::addmm", "aten::addmm"};
const OpKind kLinear{"linear", "aten::linear", "aten::linear"};
const OpKind kSum{"sum", "aten::sum", "aten::sum"};
const OpKind kSumDim{"sum_dim", "aten::sum", "aten::sum.dim_IntList"};
const OpKind kMean{"mean", "aten::mean", "aten::mean"};
const OpKind kMeanDim{"mean_dim", "aten::mean", "aten::mean.dim"};
const OpKind kSoftmax{"softmax", "aten::softmax", "aten::softmax.int"};
const OpKind kLogSoftmax{"log_softmax", "aten::log_softmax", "aten::log_softmax.int"};
const OpKind kTranspose{"transpose", "aten::transpose", "aten::transpose.int"};
const OpKind kT{"t", "aten::t", "aten::t"};
const OpKind kReshape{"reshape", "aten::reshape", "aten::reshape"};
const OpKind kView{"view", "aten::view", "aten::view"};
const OpKind kExpand{"expand", "aten::expand", "aten::expand"};
const OpKind kWhere{"where", "aten::where", "aten::where.self"};
// Deliberately without a lowering: exercises the eager fallback.
const OpKind kFlip{"flip", "aten::flip", "aten::flip", /*lowerable=*/false};

Arg Operand(int i) {
  Arg a;
  a.operand = i;
  return a;
}
Arg Const(Attr attr) {
  Arg a;
  a.attr = std::move(attr);
  return a;
}
Arg AlphaArg(double alpha) {
  // An integral alpha stays an int so that integer tensors accept it.
  if (std::floor(alpha) == alpha && std::fabs(alpha) < 9e15) {
    return Const(Attr::Int(static_cast<int64_t>(alpha)));
  }
  return Const(Attr::Double(alpha));
}

thread_local bool g_eager_mode = false;

int64_t NextTensorId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

const Shape& EmptyShape() {
  static const Shape* shape = new Shape();
  return *shape;
}

std::shared_ptr<LazyTensorData> MakeData(BackendDevice device, Shape shape) {
  return std::make_shared<LazyTensorData>(std::move(device), std::move(shape));
}

absl::StatusOr<BackendDevice> DefaultDevice(std::optional<BackendDevice> device) {
  if (device.has_value()) return *device;
  ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
  return backend->GetBackendDevice("");
}

// Records (or, eagerly, runs) one op application.
LazyTensor MakeOp(const OpKind& op, std::initializer_list<const LazyTensor*> operand_list,
                  std::vector<Arg> args, absl::StatusOr<Shape> shape) {
  absl::Span<const LazyTensor* const> operands(operand_list.begin(), operand_list.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const LazyTensor& t = *operands[i];
    if (!t.defined()) {
      return LazyTensor::Error(absl::FailedPreconditionError(
          absl::StrCat("lazy op ", op.name, ": operand ", i, " is an undefined tensor")));
    }
    if (!t.impl()->error.ok()) return LazyTensor::Error(t.impl()->error);
  }
  const BackendDevice& device = operands[0]->impl()->device;
  for (size_t i = 1; i < operands.size(); ++i) {
    if (operands[i]->impl()->device != device) {
      return LazyTensor::Error(absl::InvalidArgumentError(absl::StrCat(
          "lazy op ", op.name, ": operands on ", device.ToString(), " and ",
          operands[i]->impl()->device.ToString())));
    }
  }
  if (!shape.ok()) return LazyTensor::Error(shape.status());
  LazyGraphExecutor& executor = LazyGraphExecutor::Get();
  Metrics& m = GlobalMetrics();

  if (g_eager_mode || !op.lowerable) {
    const bool fallback = !g_eager_mode;
    std::vector<Tensor> hosts;
    hosts.reserve(operands.size());
    for (const LazyTensor* t : operands) {
      absl::StatusOr<Tensor> host = executor.ToHost(t->impl());
      if (!host.ok()) return LazyTensor::Error(host.status());
      hosts.push_back(*std::move(host));
    }
    absl::StatusOr<Tensor> out;
    {
      ScopedTimer timer(fallback ? &m.fallback_ns : &m.eager_ns);
      out = RunReferenceKernel(op, hosts, args, *shape);
    }
    if (!out.ok()) return LazyTensor::Error(out.status());
    (fallback ? m.fallbacks : m.eager_ops).fetch_add(1, std::memory_order_relaxed);
    auto result = MakeData(device, *std::move(shape));
    if (fallback) {
      // The result lives on the lazy device like every other value.
      absl::StatusOr<BackendImplInterface*> backend = GetBackend();
      if (!backend.ok()) return LazyTensor::Error(backend.status());
      absl::StatusOr<BackendDataPtr> data =
          (*backend)->MakeComputationDataFromTensor(*out, result->shape, device);
      if (!data.ok()) return LazyTensor::Error(data.status());
      m.uploads.fetch_add(1, std::memory_order_relaxed);
      absl::MutexLock lock(&result->mu);
      result->data = *std::move(data);
    } else {
      absl::MutexLock lock(&result->mu);
      result->host = *std::move(out);
    }
    return LazyTensor(std::move(result));
  }

  std::vector<NodePtr> nodes;
  nodes.reserve(operands.size());
  for (const LazyTensor* t : operands) {
    absl::StatusOr<NodePtr> node = executor.GetIrValue(*t->impl());
    if (!node.ok()) return LazyTensor::Error(node.status());
    nodes.push_back(*std::move(node));
  }
  auto result = MakeData(device, *shape);
  // The device context travels from operand to result (no registry lookup).
  result->context = operands[0]->impl()->context;
  executor.InitPendingTensor(
      result, std::make_shared<Node>(op, std::move(nodes), std::move(args), *std::move(shape)));
  m.traced_ops.fetch_add(1, std::memory_order_relaxed);
  return LazyTensor(std::move(result));
}

LazyTensor Binary(const OpKind& op, const LazyTensor& a, const LazyTensor& b,
                  std::vector<Arg> extra = {}) {
  std::vector<Arg> args = {Operand(0), Operand(1)};
  for (Arg& e : extra) args.push_back(std::move(e));
  return MakeOp(op, {&a, &b}, std::move(args),
                a.ok() && b.ok() ? BinaryShape(op.name, a.shape(), b.shape())
                                 : absl::StatusOr<Shape>(Shape()));
}

LazyTensor WithScalar(const OpKind& op, const LazyTensor& a, double v, std::vector<Arg> extra = {}) {
  std::vector<Arg> args = {Operand(0), Const(Attr::Double(v))};
  for (Arg& e : extra) args.push_back(std::move(e));
  return MakeOp(op, {&a}, std::move(args),
                a.ok() ? ScalarShape(op.name, a.shape()) : absl::StatusOr<Shape>(Shape()));
}

LazyTensor Unary(const OpKind& op, const LazyTensor& a, bool to_float) {
  absl::StatusOr<Shape> shape = Shape();
  if (a.ok()) shape = to_float ? FloatUnaryShape(a.shape()) : a.shape();
  return MakeOp(op, {&a}, {Operand(0)}, std::move(shape));
}

}  // namespace

// ------------------------------------------------------------ LazyTensorData

LazyTensorData::LazyTensorData(BackendDevice d, Shape s, absl::Status e)
    : id(NextTensorId()), device(std::move(d)), shape(std::move(s)), error(std::move(e)) {}

LazyTensorData::~LazyTensorData() {
  // The last owner: nobody else can reach `live_in` (the live map holds a
  // weak_ptr that can no longer be locked).
  DeviceContext* ctx = ReleaseLiveInForDestruction();
  if (ctx != nullptr) {
    absl::MutexLock lock(&ctx->live_mu);
    ctx->live.erase(id);
  }
}

// ------------------------------------------------------------ construction

LazyTensor LazyTensor::FromTensor(const Tensor& tensor, std::optional<BackendDevice> device) {
  if (!tensor.defined() || !tensor.has_data()) {
    return Error(absl::InvalidArgumentError("LazyTensor::FromTensor: the tensor has no data"));
  }
  absl::StatusOr<BackendDevice> d = DefaultDevice(std::move(device));
  if (!d.ok()) return Error(d.status());
  auto data = MakeData(*d, Shape(tensor.dtype(), tensor.sizes()));
  data->context = LazyGraphExecutor::Get().GetDeviceContext(*d);
  absl::MutexLock lock(&data->mu);
  data->host = tensor;
  return LazyTensor(std::move(data));
}

LazyTensor LazyTensor::Scalar(double value, DType dtype, std::optional<BackendDevice> device) {
  absl::StatusOr<BackendDevice> d = DefaultDevice(std::move(device));
  if (!d.ok()) return Error(d.status());
  absl::StatusOr<BackendDataPtr> uploaded = LazyGraphExecutor::Get().UploadScalar(value, dtype, *d);
  if (!uploaded.ok()) return Error(uploaded.status());
  auto data = MakeData(*d, Shape(dtype, {}));
  absl::MutexLock lock(&data->mu);
  data->data = *std::move(uploaded);
  return LazyTensor(std::move(data));
}

LazyTensor LazyTensor::Error(absl::Status status) {
  if (status.ok()) status = absl::InternalError("LazyTensor::Error with an OK status");
  return LazyTensor(std::make_shared<LazyTensorData>(BackendDevice(), Shape(), std::move(status)));
}

absl::Status LazyTensor::status() const {
  if (impl_ == nullptr) return absl::FailedPreconditionError("undefined lazy tensor");
  return impl_->error;
}

const Shape& LazyTensor::shape() const { return impl_ != nullptr ? impl_->shape : EmptyShape(); }
BackendDevice LazyTensor::device() const { return impl_ != nullptr ? impl_->device : BackendDevice(); }
int64_t LazyTensor::id() const { return impl_ != nullptr ? impl_->id : 0; }

bool LazyTensor::is_pending() const {
  if (impl_ == nullptr) return false;
  absl::MutexLock lock(&impl_->mu);
  return impl_->data == nullptr && impl_->ir != nullptr && !impl_->ir->is_device_data();
}

absl::StatusOr<NodePtr> LazyTensor::GetIrValue() const {
  RETURN_IF_ERROR(status());
  return LazyGraphExecutor::Get().GetIrValue(*impl_);
}

absl::StatusOr<Tensor> LazyTensor::ToTensor() const {
  RETURN_IF_ERROR(status());
  return LazyGraphExecutor::Get().ToHost(impl_);
}

// ------------------------------------------------------------ ops

LazyTensor LazyTensor::Add(const LazyTensor& o, double alpha) const {
  return Binary(kAdd, *this, o, {AlphaArg(alpha)});
}
LazyTensor LazyTensor::Sub(const LazyTensor& o, double alpha) const {
  return Binary(kSub, *this, o, {AlphaArg(alpha)});
}
LazyTensor LazyTensor::Mul(const LazyTensor& o) const { return Binary(kMul, *this, o); }
LazyTensor LazyTensor::Div(const LazyTensor& o) const {
  // True division: integer operands give float32.
  if (ok() && o.ok() && !IsFloatingPoint(dtype()) && !IsFloatingPoint(o.dtype())) {
    return To(DType::kFloat32).Div(o.To(DType::kFloat32));
  }
  return Binary(kDiv, *this, o);
}
LazyTensor LazyTensor::Maximum(const LazyTensor& o) const { return Binary(kMaximum, *this, o); }
LazyTensor LazyTensor::Minimum(const LazyTensor& o) const { return Binary(kMinimum, *this, o); }
LazyTensor LazyTensor::Add(double v) const { return WithScalar(kAddScalar, *this, v, {AlphaArg(1)}); }
LazyTensor LazyTensor::Sub(double v) const { return WithScalar(kSubScalar, *this, v, {AlphaArg(1)}); }
LazyTensor LazyTensor::Mul(double v) const { return WithScalar(kMulScalar, *this, v); }
LazyTensor LazyTensor::Div(double v) const { return WithScalar(kDivScalar, *this, v); }
LazyTensor LazyTensor::RSub(double v) const {
  return WithScalar(kRSubScalar, *this, v, {AlphaArg(1)});
}
LazyTensor LazyTensor::Pow(double e) const { return WithScalar(kPowScalar, *this, e); }
LazyTensor LazyTensor::Square() const { return Unary(kSquare, *this, /*to_float=*/false); }

LazyTensor LazyTensor::Gt(double v) const {
  return MakeOp(kGtScalar, {this}, {Operand(0), Const(Attr::Double(v))},
                ok() ? absl::StatusOr<Shape>(Shape(DType::kBool, sizes())) : Shape());
}
LazyTensor LazyTensor::Lt(double v) const {
  return MakeOp(kLtScalar, {this}, {Operand(0), Const(Attr::Double(v))},
                ok() ? absl::StatusOr<Shape>(Shape(DType::kBool, sizes())) : Shape());
}
LazyTensor LazyTensor::Gt(const LazyTensor& o) const {
  return MakeOp(kGt, {this, &o}, {Operand(0), Operand(1)},
                ok() && o.ok() ? CompareShape("gt", shape(), o.shape()) : Shape());
}
LazyTensor LazyTensor::Eq(const LazyTensor& o) const {
  return MakeOp(kEq, {this, &o}, {Operand(0), Operand(1)},
                ok() && o.ok() ? CompareShape("eq", shape(), o.shape()) : Shape());
}

LazyTensor LazyTensor::Relu() const { return Unary(kRelu, *this, false); }
LazyTensor LazyTensor::Tanh() const { return Unary(kTanh, *this, true); }
LazyTensor LazyTensor::Sigmoid() const { return Unary(kSigmoid, *this, true); }
LazyTensor LazyTensor::Exp() const { return Unary(kExp, *this, true); }
LazyTensor LazyTensor::Log() const { return Unary(kLog, *this, true); }
LazyTensor LazyTensor::Neg() const { return Unary(kNeg, *this, false); }
LazyTensor LazyTensor::Sqrt() const { return Unary(kSqrt, *this, true); }
LazyTensor LazyTensor::Abs() const { return Unary(kAbs, *this, false); }

LazyTensor LazyTensor::Clamp(std::optional<double> min, std::optional<double> max) const {
  if (!min.has_value() && !max.has_value()) {
    return Error(absl::InvalidArgumentError("clamp: at least one of min and max is needed"));
  }
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ScalarShape("clamp", this->shape());
  return MakeOp(kClamp, {this},
                {Operand(0), Const(min ? Attr::Double(*min) : Attr::None()),
                 Const(max ? Attr::Double(*max) : Attr::None())},
                std::move(shape));
}

LazyTensor LazyTensor::To(DType dtype) const {
  return MakeOp(kTo, {this},
                {Operand(0), Const(Attr::Int(DTypeCode(dtype))), Const(Attr::Bool(false)),
                 Const(Attr::Bool(false)), Const(Attr::None())},
                ok() ? absl::StatusOr<Shape>(Shape(dtype, sizes())) : Shape());
}

LazyTensor LazyTensor::Mm(const LazyTensor& o) const {
  return MakeOp(kMm, {this, &o}, {Operand(0), Operand(1)},
                ok() && o.ok() ? MmShape(shape(), o.shape()) : Shape());
}
LazyTensor LazyTensor::Matmul(const LazyTensor& o) const {
  return MakeOp(kMatmul, {this, &o}, {Operand(0), Operand(1)},
                ok() && o.ok() ? MatmulShape(shape(), o.shape()) : Shape());
}

LazyTensor LazyTensor::Sum() const {
  return MakeOp(kSum, {this}, {Operand(0), Const(Attr::None())},
                ok() ? ReduceShape("sum", shape(), {}, false, std::nullopt) : Shape());
}
LazyTensor LazyTensor::Sum(std::vector<int64_t> dims, bool keepdim) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ReduceShape("sum", this->shape(), dims, keepdim, std::nullopt);
  return MakeOp(kSumDim, {this},
                {Operand(0), Const(Attr::IntList(std::move(dims))), Const(Attr::Bool(keepdim)),
                 Const(Attr::None())},
                std::move(shape));
}
LazyTensor LazyTensor::Mean() const {
  return MakeOp(kMean, {this}, {Operand(0), Const(Attr::None())},
                ok() ? ReduceShape("mean", shape(), {}, false, std::nullopt) : Shape());
}
LazyTensor LazyTensor::Mean(std::vector<int64_t> dims, bool keepdim) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ReduceShape("mean", this->shape(), dims, keepdim, std::nullopt);
  return MakeOp(kMeanDim, {this},
                {Operand(0), Const(Attr::IntList(std::move(dims))), Const(Attr::Bool(keepdim)),
                 Const(Attr::None())},
                std::move(shape));
}

LazyTensor LazyTensor::Softmax(int64_t dim) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) {
    absl::StatusOr<int64_t> d = WrapDim("softmax", dim, this->dim());
    shape = d.ok() ? absl::StatusOr<Shape>(FloatUnaryShape(this->shape())) : d.status();
  }
  return MakeOp(kSoftmax, {this}, {Operand(0), Const(Attr::Int(dim)), Const(Attr::None())},
                std::move(shape));
}
LazyTensor LazyTensor::LogSoftmax(int64_t dim) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) {
    absl::StatusOr<int64_t> d = WrapDim("log_softmax", dim, this->dim());
    shape = d.ok() ? absl::StatusOr<Shape>(FloatUnaryShape(this->shape())) : d.status();
  }
  return MakeOp(kLogSoftmax, {this}, {Operand(0), Const(Attr::Int(dim)), Const(Attr::None())},
                std::move(shape));
}

LazyTensor LazyTensor::Transpose(int64_t dim0, int64_t dim1) const {
  return MakeOp(kTranspose, {this}, {Operand(0), Const(Attr::Int(dim0)), Const(Attr::Int(dim1))},
                ok() ? TransposeShape(shape(), dim0, dim1) : Shape());
}
LazyTensor LazyTensor::T() const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) {
    if (dim() > 2) {
      shape = absl::InvalidArgumentError(absl::StrCat("t: expects at most 2 dims, got ", dim()));
    } else {
      shape = dim() == 2 ? TransposeShape(this->shape(), 0, 1) : this->shape();
    }
  }
  return MakeOp(kT, {this}, {Operand(0)}, std::move(shape));
}
LazyTensor LazyTensor::Reshape(std::vector<int64_t> sizes) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ReshapeShape("reshape", this->shape(), sizes);
  return MakeOp(kReshape, {this}, {Operand(0), Const(Attr::IntList(std::move(sizes)))},
                std::move(shape));
}
LazyTensor LazyTensor::View(std::vector<int64_t> sizes) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ReshapeShape("view", this->shape(), sizes);
  return MakeOp(kView, {this}, {Operand(0), Const(Attr::IntList(std::move(sizes)))},
                std::move(shape));
}
LazyTensor LazyTensor::Expand(std::vector<int64_t> sizes) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) shape = ExpandShape(this->shape(), sizes);
  return MakeOp(kExpand, {this},
                {Operand(0), Const(Attr::IntList(std::move(sizes))), Const(Attr::Bool(false))},
                std::move(shape));
}

LazyTensor LazyTensor::Flip(std::vector<int64_t> dims) const {
  absl::StatusOr<Shape> shape = Shape();
  if (ok()) {
    shape = this->shape();
    for (int64_t d : dims) {
      absl::StatusOr<int64_t> w = WrapDim("flip", d, dim());
      if (!w.ok()) shape = w.status();
    }
  }
  return MakeOp(kFlip, {this}, {Operand(0), Const(Attr::IntList(std::move(dims)))},
                std::move(shape));
}

LazyTensor Addmm(const LazyTensor& bias, const LazyTensor& mat1, const LazyTensor& mat2,
                 double beta, double alpha) {
  absl::StatusOr<Shape> shape = Shape();
  if (bias.ok() && mat1.ok() && mat2.ok()) {
    shape = MmShape(mat1.shape(), mat2.shape());
    if (shape.ok()) {
      absl::StatusOr<std::vector<int64_t>> b = BroadcastSizes("addmm", bias.sizes(), shape->sizes);
      if (!b.ok()) {
        shape = b.status();
      } else if (*b != shape->sizes) {
        shape = absl::InvalidArgumentError(absl::StrCat("addmm: bias ", bias.shape().ToString(),
                                                        " does not broadcast to ",
                                                        shape->ToString()));
      }
    }
  }
  return MakeOp(kAddmm, {&bias, &mat1, &mat2},
                {Operand(0), Operand(1), Operand(2), AlphaArg(beta), AlphaArg(alpha)},
                std::move(shape));
}

LazyTensor Linear(const LazyTensor& x, const LazyTensor& weight, const LazyTensor& bias) {
  absl::StatusOr<Shape> shape = Shape();
  if (x.ok() && weight.ok() && (!bias.defined() || bias.ok())) {
    if (weight.dim() != 2) {
      shape = absl::InvalidArgumentError("linear: weight must be [out, in]");
    } else {
      absl::StatusOr<Shape> wt = TransposeShape(weight.shape(), 0, 1);
      shape = wt.ok() ? MatmulShape(x.shape(), *wt) : wt.status();
    }
  }
  if (!bias.defined()) {
    return MakeOp(kLinear, {&x, &weight}, {Operand(0), Operand(1), Const(Attr::None())},
                  std::move(shape));
  }
  return MakeOp(kLinear, {&x, &weight, &bias}, {Operand(0), Operand(1), Operand(2)},
                std::move(shape));
}

LazyTensor Where(const LazyTensor& condition, const LazyTensor& a, const LazyTensor& b) {
  absl::StatusOr<Shape> shape = Shape();
  if (condition.ok() && a.ok() && b.ok()) {
    shape = BinaryShape("where", a.shape(), b.shape());
    if (shape.ok()) {
      absl::StatusOr<std::vector<int64_t>> s =
          BroadcastSizes("where", condition.sizes(), shape->sizes);
      shape = s.ok() ? absl::StatusOr<Shape>(Shape(shape->dtype, *s)) : s.status();
    }
  }
  return MakeOp(kWhere, {&condition, &a, &b}, {Operand(0), Operand(1), Operand(2)},
                std::move(shape));
}

LazyTensor MseLoss(const LazyTensor& prediction, const LazyTensor& target) {
  return (prediction - target).Square().Mean();
}

LazyTensor SoftmaxCrossEntropy(const LazyTensor& logits, const LazyTensor& target) {
  return (target * logits.LogSoftmax(1)).Sum({1}).Mean().Neg();
}

LazyTensor operator+(const LazyTensor& a, const LazyTensor& b) { return a.Add(b); }
LazyTensor operator-(const LazyTensor& a, const LazyTensor& b) { return a.Sub(b); }
LazyTensor operator*(const LazyTensor& a, const LazyTensor& b) { return a.Mul(b); }
LazyTensor operator/(const LazyTensor& a, const LazyTensor& b) { return a.Div(b); }
LazyTensor operator+(const LazyTensor& a, double b) { return a.Add(b); }
LazyTensor operator-(const LazyTensor& a, double b) { return a.Sub(b); }
LazyTensor operator*(const LazyTensor& a, double b) { return a.Mul(b); }
LazyTensor operator*(double a, const LazyTensor& b) { return b.Mul(a); }
LazyTensor operator/(const LazyTensor& a, double b) { return a.Div(b); }
LazyTensor operator-(const LazyTensor& a) { return a.Neg(); }

absl::Status MarkStep(std::optional<BackendDevice> device) {
  ASSIGN_OR_RETURN(BackendDevice d, DefaultDevice(std::move(device)));
  return LazyGraphExecutor::Get().MarkStep(d);
}

absl::Status SyncTensors(absl::Span<const LazyTensor> tensors) {
  std::vector<std::shared_ptr<LazyTensorData>> impls;
  impls.reserve(tensors.size());
  for (const LazyTensor& t : tensors) {
    RETURN_IF_ERROR(t.status());
    impls.push_back(t.impl());
  }
  return LazyGraphExecutor::Get().SyncTensors(impls);
}

EagerModeScope::EagerModeScope() : previous_(g_eager_mode) { g_eager_mode = true; }
EagerModeScope::~EagerModeScope() { g_eager_mode = previous_; }
bool EagerModeScope::Active() { return g_eager_mode; }

}  // namespace kiln::lazy
