#include "sim/sim_launch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln_sim {
namespace {

using kiln::DType;
using kiln::lowering::ExprOp;
using kiln::lowering::ReductionType;

// A register: floating values in `f` (float32 rounded after every op, so the
// arithmetic is float32's), integers and bools in `i`.
struct Value {
  double f = 0;
  int64_t i = 0;
};

double Round(DType t, double x) { return t == DType::kFloat32 ? static_cast<double>(static_cast<float>(x)) : x; }

int64_t Wrap(DType t, int64_t x) {
  switch (t) {
    case DType::kInt8: return static_cast<int8_t>(x);
    case DType::kInt16: return static_cast<int16_t>(x);
    case DType::kInt32: return static_cast<int32_t>(x);
    case DType::kUInt8: return static_cast<uint8_t>(x);
    case DType::kBool: return x != 0;
    default: return x;
  }
}

int64_t SafeToInt(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

int64_t AddWrap(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t SubWrap(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
int64_t MulWrap(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

int64_t FloorDivInt(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t ModInt(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double ModFloat(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t PowInt(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = MulWrap(result, base);
    base = MulWrap(base, base);
    exp >>= 1;
  }
  return result;
}

double Unary(ExprOp op, double x) {
  switch (op) {
    case ExprOp::kNeg: return -x;
    case ExprOp::kAbs: return std::fabs(x);
    case ExprOp::kExp: return std::exp(x);
    case ExprOp::kLog: return std::log(x);
    case ExprOp::kSqrt: return std::sqrt(x);
    case ExprOp::kRsqrt: return 1.0 / std::sqrt(x);
    case ExprOp::kSin: return std::sin(x);
    case ExprOp::kCos: return std::cos(x);
    case ExprOp::kTan: return std::tan(x);
    case ExprOp::kTanh: return std::tanh(x);
    case ExprOp::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case ExprOp::kErf: return std::erf(x);
    case ExprOp::kFloor: return std::floor(x);
    case ExprOp::kCeil: return std::ceil(x);
    case ExprOp::kRound: return std::nearbyint(x);  // half to even
    case ExprOp::kTrunc: return std::trunc(x);
    case ExprOp::kReciprocal: return 1.0 / x;
    case ExprOp::kRelu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case ExprOp::kLog1p: return std::log1p(x);
    case ExprOp::kExpm1: return std::expm1(x);
    case ExprOp::kSign: return std::isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0));
    default: return x;
  }
}

int64_t UnaryInt(ExprOp op, int64_t x) {
  switch (op) {
    case ExprOp::kNeg: return SubWrap(0, x);
    case ExprOp::kAbs: return x < 0 ? SubWrap(0, x) : x;
    case ExprOp::kRelu: return x > 0 ? x : 0;
    case ExprOp::kSign: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case ExprOp::kFloor: case ExprOp::kCeil: case ExprOp::kRound: case ExprOp::kTrunc: return x;
    default: return SafeToInt(Unary(op, static_cast<double>(x)));
  }
}

double BinaryFloat(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::kAdd: return a + b;
    case ExprOp::kSub: return a - b;
    case ExprOp::kMul: return a * b;
    case ExprOp::kDiv: return a / b;
    case ExprOp::kFloorDiv: return std::floor(a / b);
    case ExprOp::kMod: return ModFloat(a, b);
    case ExprOp::kPow: return std::pow(a, b);
    case ExprOp::kMax: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    case ExprOp::kMin: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
    default: return 0;
  }
}

int64_t BinaryInt(ExprOp op, int64_t a, int64_t b) {
  switch (op) {
    case ExprOp::kAdd: return AddWrap(a, b);
    case ExprOp::kSub: return SubWrap(a, b);
    case ExprOp::kMul: return MulWrap(a, b);
    case ExprOp::kDiv:
      if (b == 0) return 0;
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
      return a / b;
    case ExprOp::kFloorDiv: return FloorDivInt(a, b);
    case ExprOp::kMod: return ModInt(a, b);
    case ExprOp::kPow: return PowInt(a, b);
    case ExprOp::kMax: return std::max(a, b);
    case ExprOp::kMin: return std::min(a, b);
    default: return 0;
  }
}

template <typename T>
bool Compare(ExprOp op, T a, T b) {
  switch (op) {
    case ExprOp::kEq: return a == b;
    case ExprOp::kNe: return a != b;
    case ExprOp::kLt: return a < b;
    case ExprOp::kLe: return a <= b;
    case ExprOp::kGt: return a > b;
    case ExprOp::kGe: return a >= b;
    default: return false;
  }
}

bool Truthy(const Value& v, bool fp) { return fp ? v.f != 0 : v.i != 0; }

absl::Status Load(DType t, const KernelArg& arg, int64_t offset, Value& out, const Kernel& kernel) {
  if (offset < 0 || offset >= arg.elements) {
    return absl::OutOfRangeError(absl::StrCat("sim kernel ", kernel.name, ": load at ", offset,
                                              " outside a buffer of ", arg.elements, " elements"));
  }
  const char* p = static_cast<const char*>(arg.data);
  switch (t) {
    case DType::kFloat32: out.f = reinterpret_cast<const float*>(p)[offset]; break;
    case DType::kFloat64: out.f = reinterpret_cast<const double*>(p)[offset]; break;
    case DType::kInt8: out.i = reinterpret_cast<const int8_t*>(p)[offset]; break;
    case DType::kInt16: out.i = reinterpret_cast<const int16_t*>(p)[offset]; break;
    case DType::kInt32: out.i = reinterpret_cast<const int32_t*>(p)[offset]; break;
    case DType::kInt64: out.i = reinterpret_cast<const int64_t*>(p)[offset]; break;
    case DType::kUInt8: out.i = reinterpret_cast<const uint8_t*>(p)[offset]; break;
    case DType::kBool: out.i = reinterpret_cast<const uint8_t*>(p)[offset] != 0; break;
    default: return absl::UnimplementedError("sim kernel: unsupported dtype");
  }
  return absl::OkStatus();
}

absl::Status Store(DType t, const KernelArg& arg, int64_t offset, const Value& v, bool fp,
                   const Kernel& kernel) {
  if (offset < 0 || offset >= arg.elements) {
    return absl::OutOfRangeError(absl::StrCat("sim kernel ", kernel.name, ": store at ", offset,
                                              " outside a buffer of ", arg.elements, " elements"));
  }
  char* p = static_cast<char*>(arg.data);
  const double f = fp ? v.f : static_cast<double>(v.i);
  const int64_t i = fp ? SafeToInt(v.f) : v.i;
  switch (t) {
    case DType::kFloat32: reinterpret_cast<float*>(p)[offset] = static_cast<float>(f); break;
    case DType::kFloat64: reinterpret_cast<double*>(p)[offset] = f; break;
    case DType::kInt8: reinterpret_cast<int8_t*>(p)[offset] = static_cast<int8_t>(i); break;
    case DType::kInt16: reinterpret_cast<int16_t*>(p)[offset] = static_cast<int16_t>(i); break;
    case DType::kInt32: reinterpret_cast<int32_t*>(p)[offset] = static_cast<int32_t>(i); break;
    case DType::kInt64: reinterpret_cast<int64_t*>(p)[offset] = i; break;
    case DType::kUInt8: reinterpret_cast<uint8_t*>(p)[offset] = static_cast<uint8_t>(i); break;
    case DType::kBool: reinterpret_cast<uint8_t*>(p)[offset] = Truthy(v, fp) ? 1 : 0; break;
    default: return absl::UnimplementedError("sim kernel: unsupported dtype");
  }
  return absl::OkStatus();
}

// One section's code, run for one index (vars bound).
class SectionRunner {
 public:
  SectionRunner(const Kernel& kernel, const Section& section, const std::vector<KernelArg>& args)
      : kernel_(kernel), s_(section), args_(args), regs_(section.code.size()), fp_(section.code.size()) {
    for (size_t k = 0; k < s_.code.size(); ++k) fp_[k] = kiln::IsFloatingPoint(s_.code[k].dtype);
    vars_.resize(s_.ranges.size() + s_.reduction_ranges.size());
  }

  absl::Status RunElement(int64_t flat) {
    Unravel(flat, s_.ranges, 0);
    int64_t out = s_.store_offset;
    for (size_t d = 0; d < s_.ranges.size(); ++d) out += vars_[d] * s_.store_strides[d];
    const DType out_type = kernel_.params[static_cast<size_t>(s_.param)].second;
    Value result;
    bool result_fp = fp_[static_cast<size_t>(s_.result)];
    if (!s_.is_reduction) {
      RETURN_IF_ERROR(Run());
      result = regs_[static_cast<size_t>(s_.result)];
    } else {
      RETURN_IF_ERROR(Reduce(result, result_fp));
    }
    return Store(out_type, args_[static_cast<size_t>(s_.param)], out, result, result_fp, kernel_);
  }

 private:
  void Unravel(int64_t flat, const std::vector<int64_t>& ranges, size_t first) {
    for (size_t d = ranges.size(); d-- > 0;) {
      const int64_t r = ranges[d];
      vars_[first + d] = r == 0 ? 0 : flat % r;
      flat = r == 0 ? 0 : flat / r;
    }
  }

  absl::Status Reduce(Value& result, bool& result_fp) {
    int64_t count = 1;
    for (int64_t r : s_.reduction_ranges) count *= r;
    const size_t rk = static_cast<size_t>(s_.result);
    const bool fp = fp_[rk];
    const size_t first = s_.ranges.size();
    auto element = [&](int64_t r) -> absl::StatusOr<Value> {
      Unravel(r, s_.reduction_ranges, first);
      RETURN_IF_ERROR(Run());
      return regs_[rk];
    };
    const ReductionType type = s_.reduction;
    if (type == ReductionType::kWelfordMean || type == ReductionType::kWelfordM2) {
      double sum = 0;
      for (int64_t r = 0; r < count; ++r) {
        ASSIGN_OR_RETURN(Value v, element(r));
        sum += fp ? v.f : static_cast<double>(v.i);
      }
      const double mean = count == 0 ? NAN : sum / static_cast<double>(count);
      double m2 = 0;
      if (type == ReductionType::kWelfordM2) {
        for (int64_t r = 0; r < count; ++r) {
          ASSIGN_OR_RETURN(Value v, element(r));
          const double d = (fp ? v.f : static_cast<double>(v.i)) - mean;
          m2 += d * d;
        }
      }
      result.f = type == ReductionType::kWelfordMean ? mean : m2;
      result_fp = true;
      return absl::OkStatus();
    }
    if (type == ReductionType::kArgmax || type == ReductionType::kArgmin) {
      const bool want_max = type == ReductionType::kArgmax;
      int64_t best_index = 0;
      Value best;
      bool best_nan = false;
      for (int64_t r = 0; r < count; ++r) {
        ASSIGN_OR_RETURN(Value v, element(r));
        if (best_nan) break;  // the first NaN wins
        if (fp && std::isnan(v.f)) {
          best_nan = true;
          best_index = r;
          continue;
        }
        const bool better = r == 0 || (fp ? (want_max ? v.f > best.f : v.f < best.f)
                                          : (want_max ? v.i > best.i : v.i < best.i));
        if (better) {
          best = v;
          best_index = r;
        }
      }
      result.i = best_index;
      result_fp = false;
      return absl::OkStatus();
    }
    Value acc;
    bool nan_seen = false;
    for (int64_t r = 0; r < count; ++r) {
      ASSIGN_OR_RETURN(Value v, element(r));
      switch (type) {
        case ReductionType::kSum:
          if (fp) acc.f += v.f; else acc.i = AddWrap(acc.i, v.i);
          break;
        case ReductionType::kProd:
          if (r == 0) acc = v;
          else if (fp) acc.f *= v.f;
          else acc.i = MulWrap(acc.i, v.i);
          break;
        case ReductionType::kMax:
        case ReductionType::kMin: {
          const bool want_max = type == ReductionType::kMax;
          if (fp && std::isnan(v.f)) nan_seen = true;
          if (r == 0) {
            acc = v;
          } else if (fp) {
            acc.f = want_max ? std::max(acc.f, v.f) : std::min(acc.f, v.f);
          } else {
            acc.i = want_max ? std::max(acc.i, v.i) : std::min(acc.i, v.i);
          }
          break;
        }
        default: break;
      }
    }
    if (count == 0) {
      if (type == ReductionType::kProd) { acc.f = 1; acc.i = 1; }
      if (type == ReductionType::kMax) { acc.f = -INFINITY; acc.i = std::numeric_limits<int64_t>::min(); }
      if (type == ReductionType::kMin) { acc.f = INFINITY; acc.i = std::numeric_limits<int64_t>::max(); }
    }
    if (nan_seen) acc.f = NAN;
    result = acc;
    result_fp = fp;
    return absl::OkStatus();
  }

  absl::Status Run() {
    for (size_t k = 0; k < s_.code.size(); ++k) {
      const Instr& in = s_.code[k];
      Value& out = regs_[k];
      const bool fp = fp_[k];
      auto arg = [&](size_t j) -> const Value& { return regs_[static_cast<size_t>(in.args[j])]; };
      auto arg_fp = [&](size_t j) { return fp_[static_cast<size_t>(in.args[j])]; };
      switch (in.op) {
        case ExprOp::kIndexVar: out.i = vars_[static_cast<size_t>(in.var)]; out.f = static_cast<double>(out.i); break;
        case ExprOp::kIntConst: out.i = Wrap(in.dtype, in.int_value); out.f = static_cast<double>(out.i); break;
        case ExprOp::kFloatConst: out.f = Round(in.dtype, in.float_value); break;
        case ExprOp::kLoad: {
          const Value& off = arg(0);
          RETURN_IF_ERROR(Load(in.dtype, args_[static_cast<size_t>(in.param)],
                               arg_fp(0) ? SafeToInt(off.f) : off.i, out, kernel_));
          break;
        }
        case ExprOp::kLogicalNot: out.i = Truthy(arg(0), arg_fp(0)) ? 0 : 1; break;
        case ExprOp::kIsNan: out.i = arg_fp(0) && std::isnan(arg(0).f) ? 1 : 0; break;
        case ExprOp::kEq: case ExprOp::kNe: case ExprOp::kLt:
        case ExprOp::kLe: case ExprOp::kGt: case ExprOp::kGe:
          out.i = arg_fp(0) ? Compare(in.op, arg(0).f, arg(1).f) : Compare(in.op, arg(0).i, arg(1).i);
          break;
        case ExprOp::kLogicalAnd: out.i = Truthy(arg(0), arg_fp(0)) && Truthy(arg(1), arg_fp(1)); break;
        case ExprOp::kLogicalOr: out.i = Truthy(arg(0), arg_fp(0)) || Truthy(arg(1), arg_fp(1)); break;
        case ExprOp::kWhere: out = Truthy(arg(0), arg_fp(0)) ? arg(1) : arg(2); break;
        case ExprOp::kCast: {
          const Value& a = arg(0);
          if (fp) {
            out.f = Round(in.dtype, arg_fp(0) ? a.f : static_cast<double>(a.i));
          } else if (in.dtype == DType::kBool) {
            out.i = Truthy(a, arg_fp(0)) ? 1 : 0;
          } else {
            out.i = Wrap(in.dtype, arg_fp(0) ? SafeToInt(a.f) : a.i);
          }
          break;
        }
        default:
          if (in.args.size() == 1) {
            if (fp) out.f = Round(in.dtype, Unary(in.op, arg_fp(0) ? arg(0).f : static_cast<double>(arg(0).i)));
            else out.i = Wrap(in.dtype, UnaryInt(in.op, arg_fp(0) ? SafeToInt(arg(0).f) : arg(0).i));
          } else {
            if (fp) out.f = Round(in.dtype, BinaryFloat(in.op, arg(0).f, arg(1).f));
            else out.i = Wrap(in.dtype, BinaryInt(in.op, arg(0).i, arg(1).i));
          }
      }
    }
    return absl::OkStatus();
  }

  const Kernel& kernel_;
  const Section& s_;
  const std::vector<KernelArg>& args_;
  std::vector<Value> regs_;
  std::vector<char> fp_;
  std::vector<int64_t> vars_;
};

int64_t Elements(const std::vector<int64_t>& ranges) {
  int64_t n = 1;
  for (int64_t r : ranges) n *= r;
  return n;
}

}  // namespace

Grid GridFor(const Kernel& kernel, const kiln::devices::DeviceProperties& props) {
  int64_t largest = 1;
  for (const Section& s : kernel.sections) largest = std::max(largest, Elements(s.ranges));
  Grid grid;
  grid.threads_per_block = std::max(1, props.max_threads_per_block);
  const int64_t max_blocks = int64_t{64} * std::max(1, props.multiprocessor_count);
  grid.blocks = std::min(max_blocks, (largest + grid.threads_per_block - 1) / grid.threads_per_block);
  grid.blocks = std::max<int64_t>(grid.blocks, 1);
  return grid;
}

absl::Status Execute(const Kernel& kernel, Grid grid, const std::vector<KernelArg>& args) {
  if (args.size() != kernel.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("sim launch of ", kernel.name, ": ", args.size(),
                                                   " arguments for ", kernel.params.size(), " parameters"));
  }
  if (grid.blocks < 1 || grid.threads_per_block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sim launch of ", kernel.name, ": empty grid"));
  }
  const int64_t threads = grid.blocks * grid.threads_per_block;
  for (const Section& section : kernel.sections) {  // grid-wide barrier between sections
    SectionRunner runner(kernel, section, args);
    const int64_t n = Elements(section.ranges);
    for (int64_t block = 0; block < grid.blocks; ++block) {
      for (int64_t thread = 0; thread < grid.threads_per_block; ++thread) {
        for (int64_t g = block * grid.threads_per_block + thread; g < n; g += threads) {
          RETURN_IF_ERROR(runner.RunElement(g));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Launch(SimStream& stream, std::shared_ptr<const Kernel> kernel, Grid grid,
                    std::vector<KernelArg> args) {
  if (kernel == nullptr) return absl::InvalidArgumentError("sim launch: null kernel");
  stream.Enqueue([kernel = std::move(kernel), grid, args = std::move(args)] {
    return Execute(*kernel, grid, args);
  });
  return absl::OkStatus();
}

}  // namespace kiln_sim
