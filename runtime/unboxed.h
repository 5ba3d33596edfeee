// Typed unboxing: a reference kernel written as a plain C++ function whose
// parameters are its schema's arguments, in order, becomes a registry
// KernelFn (ir::KernelFn, IValues in schema order with defaults filled in).
//
//   absl::StatusOr<Tensor> Lrn(const std::string& op, const Tensor& x, int64_t size,
//                              double alpha, double beta, double bias);
//   KILN_OP("kiln::lrn", "kiln::lrn(Tensor x, int size, float alpha, ...) -> Tensor",
//           plain, UnboxedNamed(&Lrn), ...)          // ops/defs/nn.def
//
// Parameter types and the schema types they take:
//   const Tensor& / Tensor            Tensor
//   int64_t                           int (SymInt)
//   double                            float, Scalar (a number)
//   bool                              bool
//   std::string                       str
//   DType                             ScalarType, int (a dtype code)
//   Operand                           Scalar, Tensor, int, float, bool (a tensor or a wrapped number)
//   std::vector<int64_t>              int[] (an int for `int[N]` repeats N times)
//   std::vector<double>               float[]
//   std::vector<std::string>          str[]
//   std::vector<Tensor>               Tensor[]
//   std::vector<std::optional<Tensor>> Tensor?[]
//   std::optional<T>                  T? (None -> nullopt), or T
//   const ir::IValue&                 anything (the raw value)
// A leading `const std::string&` of UnboxedNamed receives the qualified
// name for messages. Trailing schema arguments the function leaves out must
// be ones a reference kernel ignores (Layout, Device, MemoryFormat, Generator,
// and the bools pin_memory, non_blocking, cudnn_enabled, cudnn_enable,
// benchmark, deterministic, allow_tf32).
//
// Results: Tensor, bool, int64_t, double, std::vector<int64_t> (int[]),
// ir::IValue (one output), std::tuple<...> (one output each),
// std::vector<Tensor> (a Tensor[] output, or one output each when the schema
// returns several), std::vector<ir::IValue> (the outputs as they are), each
// plain or in absl::StatusOr.
//
// Binding (KernelBinder) checks the parameter and result types against the
// schema; a mismatch is an error naming the op and the argument. Decoding
// checks each value's kind at run time and names the op and argument.
#ifndef KILN_RUNTIME_UNBOXED_H_
#define KILN_RUNTIME_UNBOXED_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "ir/schema.h"
#include "runtime/kernels.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime {

// Binds a kernel to the schema of the overload it is registered for.
using KernelBinder = std::function<absl::StatusOr<ir::KernelFn>(const ir::FunctionSchema&)>;

namespace unboxing {

template <typename T>
using Bare = std::remove_cv_t<std::remove_reference_t<T>>;

// What a decoded argument is held as: a span parameter reads a vector.
template <typename T>
struct StorageOf {
  using type = T;
};
template <typename T>
struct StorageOf<absl::Span<const T>> {
  using type = std::vector<T>;
};
template <typename T>
using Stored = typename StorageOf<Bare<T>>::type;

// "aten::gelu: argument 1 (approximate) must be a string".
absl::Status ArgumentError(const std::string& op, size_t index, const ir::Argument* arg,
                           absl::string_view want);
// Whether a trailing argument may be left out of a kernel's parameters.
bool IsIgnorable(const ir::Argument& arg);

// ------------------------------------------------------------------ arguments

// Arg<T>::Fits(type): T can take an argument of schema type `type`.
// Arg<T>::Decode(v, arg, op, i): the value, or an error naming op and i.
template <typename T, typename Enable = void>
struct Arg;

#define KILN_UNBOXED_ARG(T)                                                            \
  template <>                                                                          \
  struct Arg<T> {                                                                      \
    static bool Fits(const ir::Type& type);                                            \
    static absl::StatusOr<T> Decode(const ir::IValue& v, const ir::Argument* arg,      \
                                    const std::string& op, size_t i);                  \
  }
KILN_UNBOXED_ARG(Tensor);
KILN_UNBOXED_ARG(int64_t);
KILN_UNBOXED_ARG(double);
KILN_UNBOXED_ARG(bool);
KILN_UNBOXED_ARG(std::string);
KILN_UNBOXED_ARG(DType);
KILN_UNBOXED_ARG(Operand);
KILN_UNBOXED_ARG(std::vector<int64_t>);
KILN_UNBOXED_ARG(std::vector<double>);
KILN_UNBOXED_ARG(std::vector<std::string>);
KILN_UNBOXED_ARG(std::vector<Tensor>);
KILN_UNBOXED_ARG(std::vector<std::optional<Tensor>>);
KILN_UNBOXED_ARG(ir::IValue);
#undef KILN_UNBOXED_ARG

// T? : None -> nullopt; also takes a plain T argument.
template <typename T>
struct Arg<std::optional<T>> {
  static bool Fits(const ir::Type& type) {
    if (type.kind() == ir::TypeKind::kOptional) return Arg<T>::Fits(*type.contained()[0]);
    return Arg<T>::Fits(type);
  }
  static absl::StatusOr<std::optional<T>> Decode(const ir::IValue& v, const ir::Argument* arg,
                                                 const std::string& op, size_t i) {
    if (v.isNone()) return std::optional<T>();
    absl::StatusOr<T> t = Arg<T>::Decode(v, arg, op, i);
    if (!t.ok()) return t.status();
    return std::optional<T>(*std::move(t));
  }
};

// ------------------------------------------------------------------ results

absl::Status ResultCountError(const ir::FunctionSchema& schema, size_t got);

template <typename R>
struct Result;

template <typename R>
struct Result<absl::StatusOr<R>> {
  static size_t Count(const ir::FunctionSchema& s) { return Result<R>::Count(s); }
  static absl::StatusOr<std::vector<ir::IValue>> Box(absl::StatusOr<R> r,
                                                     const ir::FunctionSchema& s) {
    if (!r.ok()) return r.status();
    return Result<R>::Box(*std::move(r), s);
  }
};

#define KILN_UNBOXED_RESULT(T)                                                        \
  template <>                                                                         \
  struct Result<T> {                                                                  \
    static size_t Count(const ir::FunctionSchema& s);                                 \
    static absl::StatusOr<std::vector<ir::IValue>> Box(T r, const ir::FunctionSchema& s); \
  }
KILN_UNBOXED_RESULT(Tensor);
KILN_UNBOXED_RESULT(bool);
KILN_UNBOXED_RESULT(int64_t);
KILN_UNBOXED_RESULT(double);
KILN_UNBOXED_RESULT(std::vector<int64_t>);
KILN_UNBOXED_RESULT(ir::IValue);
KILN_UNBOXED_RESULT(std::vector<Tensor>);
KILN_UNBOXED_RESULT(std::vector<ir::IValue>);
#undef KILN_UNBOXED_RESULT

template <typename... Ts>
struct Result<std::tuple<Ts...>> {
  static size_t Count(const ir::FunctionSchema&) { return sizeof...(Ts); }
  static absl::StatusOr<std::vector<ir::IValue>> Box(std::tuple<Ts...> r,
                                                     const ir::FunctionSchema& s) {
    std::vector<ir::IValue> out;
    absl::Status status;
    std::apply(
        [&](auto&... e) {
          (([&] {
             if (!status.ok()) return;
             using E = Bare<decltype(e)>;
             absl::StatusOr<std::vector<ir::IValue>> one = Result<E>::Box(std::move(e), s);
             if (!one.ok()) {
               status = one.status();
               return;
             }
             for (ir::IValue& v : *one) out.push_back(std::move(v));
           }()),
           ...);
        },
        r);
    if (!status.ok()) return status;
    return out;
  }
};

template <typename A, typename B>
struct Result<std::pair<A, B>> {
  static size_t Count(const ir::FunctionSchema&) { return 2; }
  static absl::StatusOr<std::vector<ir::IValue>> Box(std::pair<A, B> r,
                                                     const ir::FunctionSchema& s) {
    return Result<std::tuple<A, B>>::Box(std::tuple<A, B>(std::move(r.first), std::move(r.second)),
                                         s);
  }
};

// ------------------------------------------------------------------ functions

template <typename F>
struct Signature : Signature<decltype(&F::operator())> {};
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using Ret = R;
  using Params = std::tuple<A...>;
};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> {
  using Ret = R;
  using Params = std::tuple<A...>;
};

// Checks the parameters against the schema's arguments.
template <typename Params, size_t... I>
absl::Status CheckParams(const ir::FunctionSchema& s, std::index_sequence<I...>) {
  const std::string op = s.QualifiedName();
  absl::Status status;
  auto check = [&](size_t i, auto fits) {
    if (!status.ok()) return;
    if (i >= s.arguments.size()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          op, ": the kernel has more parameters than the schema's ", s.arguments.size(),
          " arguments"));
    } else if (!fits(*s.arguments[i].type)) {
      status = absl::InvalidArgumentError(absl::StrCat(
          op, ": kernel parameter ", i, " does not take schema argument '", s.arguments[i].name,
          "' of type ", s.arguments[i].type->ToString()));
    }
  };
  (check(I, [](const ir::Type& t) { return Arg<Stored<std::tuple_element_t<I, Params>>>::Fits(t); }),
   ...);
  if (!status.ok()) return status;
  for (size_t i = sizeof...(I); i < s.arguments.size(); ++i) {
    if (!IsIgnorable(s.arguments[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": the kernel leaves out schema argument '", s.arguments[i].name, "' (",
          s.arguments[i].type->ToString(), "), which a reference kernel may not ignore"));
    }
  }
  return absl::OkStatus();
}

// Decodes the arguments into `out` (a missing trailing one takes its default).
template <typename Tuple, size_t... I>
absl::Status DecodeAll(const std::string& op, const ir::FunctionSchema& s,
                       absl::Span<const ir::IValue> a, Tuple& out, std::index_sequence<I...>) {
  absl::Status status;
  auto one = [&](size_t i, auto& slot) {
    if (!status.ok()) return;
    using T = Bare<decltype(slot)>;
    const ir::Argument* arg = i < s.arguments.size() ? &s.arguments[i] : nullptr;
    const ir::IValue* v = nullptr;
    if (i < a.size()) {
      v = &a[i];
    } else if (arg != nullptr && arg->default_value) {
      v = &*arg->default_value;
    } else {
      status = ArgumentError(op, i, arg, "present");
      return;
    }
    absl::StatusOr<T> t = Arg<T>::Decode(*v, arg, op, i);
    if (!t.ok()) {
      status = t.status();
      return;
    }
    slot = *std::move(t);
  };
  (one(I, std::get<I>(out)), ...);
  return status;
}

template <typename R>
absl::Status CheckResults(const ir::FunctionSchema& s) {
  if (s.is_varret) return absl::OkStatus();
  const size_t n = Result<R>::Count(s);
  if (n != s.returns.size()) return ResultCountError(s, n);
  return absl::OkStatus();
}

template <bool kNamed, typename R, typename Params>
struct Binder;

template <bool kNamed, typename R, typename... P>
struct Binder<kNamed, R, std::tuple<P...>> {
  template <typename F>
  static KernelBinder Make(F fn) {
    return [fn](const ir::FunctionSchema& s) -> absl::StatusOr<ir::KernelFn> {
      absl::Status st = CheckParams<std::tuple<P...>>(s, std::index_sequence_for<P...>{});
      if (!st.ok()) return st;
      st = CheckResults<Bare<R>>(s);
      if (!st.ok()) return st;
      auto schema = std::make_shared<const ir::FunctionSchema>(s);
      auto op = std::make_shared<const std::string>(s.QualifiedName());
      return ir::KernelFn(
          [fn, schema, op](absl::Span<const ir::IValue> a)
              -> absl::StatusOr<std::vector<ir::IValue>> {
            std::tuple<Stored<P>...> args;
            absl::Status st =
                DecodeAll(*op, *schema, a, args, std::index_sequence_for<P...>{});
            if (!st.ok()) return st;
            if constexpr (kNamed) {
              return Result<Bare<R>>::Box(
                  std::apply([&](auto&... x) { return fn(*op, x...); }, args), *schema);
            } else {
              return Result<Bare<R>>::Box(std::apply(fn, args), *schema);
            }
          });
    };
  }
};

template <typename Params>
struct DropFirst;
template <typename First, typename... Rest>
struct DropFirst<std::tuple<First, Rest...>> {
  using type = std::tuple<Rest...>;
  static_assert(std::is_same_v<Bare<First>, std::string>,
                "UnboxedNamed: the first parameter must be const std::string& (the op name)");
};

template <typename F>
using SignatureOf = Signature<std::conditional_t<std::is_function_v<F>, F*, F>>;

}  // namespace unboxing

// fn(args in schema order).
template <typename F>
KernelBinder Unboxed(F fn) {
  using Sig = unboxing::SignatureOf<F>;
  return unboxing::Binder<false, typename Sig::Ret, typename Sig::Params>::Make(fn);
}

// fn(const std::string& op, args in schema order).
template <typename F>
KernelBinder UnboxedNamed(F fn) {
  using Sig = unboxing::SignatureOf<F>;
  using Params = typename unboxing::DropFirst<typename Sig::Params>::type;
  return unboxing::Binder<true, typename Sig::Ret, Params>::Make(fn);
}

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_UNBOXED_H_
