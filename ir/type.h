// IR types with TorchScript's data model and its exact printed form.
//
// Types are immutable and shared (TypePtr). Simple types are singletons, so
// `t->kind() == TypeKind::kInt` is the usual test; structural equality is
// `TypeEquals`.
#ifndef KILN_IR_TYPE_H_
#define KILN_IR_TYPE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/dtype.h"

namespace kiln::ir {

enum class TypeKind : uint8_t {
  kAny,
  kTensor,
  kInt,
  kFloat,
  kBool,
  kComplex,
  kNumber,  // `Scalar` in schemas: int, float or complex
  kStr,
  kNone,
  kDevice,
  kLayout,
  kScalarType,
  kMemoryFormat,
  kGenerator,
  kList,
  kTuple,
  kOptional,
  kDict,
  kClass,  // an opaque module/object type, e.g. __torch__.models.MLP
};

class Type;
using TypePtr = std::shared_ptr<const Type>;

// A device such as `cpu` or `cuda:0` (index -1 = none).
struct Device {
  std::string type = "cpu";
  int64_t index = -1;
  std::string ToString() const;
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

// Facts known about a tensor; every field is optional.
struct TensorInfo {
  std::optional<DType> dtype;
  // nullopt: rank unknown. Otherwise one entry per dim, nullopt = unknown dim.
  std::optional<std::vector<std::optional<int64_t>>> sizes;
  // Present only when complete (one known stride per dim).
  std::optional<std::vector<int64_t>> strides;
  std::optional<Device> device;
  std::optional<bool> requires_grad;
  std::optional<bool> undefined;

  std::optional<size_t> rank() const {
    return sizes ? std::optional<size_t>(sizes->size()) : std::nullopt;
  }
  // All dims known.
  bool HasCompleteSizes() const;
  std::vector<int64_t> ConcreteSizes() const;  // requires HasCompleteSizes
};

class Type {
 public:
  TypeKind kind() const { return kind_; }

  // Singletons.
  static const TypePtr& Any();
  static const TypePtr& Tensor();  // a tensor with nothing known
  static const TypePtr& Int();
  static const TypePtr& Float();
  static const TypePtr& Bool();
  static const TypePtr& Complex();
  static const TypePtr& Number();
  static const TypePtr& Str();
  static const TypePtr& None();
  static const TypePtr& DeviceType();
  static const TypePtr& Layout();
  static const TypePtr& ScalarType();
  static const TypePtr& MemoryFormat();
  static const TypePtr& Generator();

  static TypePtr TensorWith(TensorInfo info);
  static TypePtr List(TypePtr elem);
  static TypePtr Tuple(std::vector<TypePtr> elems);
  static TypePtr Optional(TypePtr elem);
  static TypePtr Dict(TypePtr key, TypePtr value);
  static TypePtr Class(std::string qualified_name);

  // For kTensor; an empty TensorInfo otherwise.
  const TensorInfo& tensor() const { return tensor_; }
  // Element types: List/Optional (1), Tuple (n), Dict (2: key, value).
  const std::vector<TypePtr>& contained() const { return contained_; }
  // For kClass.
  const std::string& class_name() const { return name_; }

  // PyTorch's printed form at its default (Full) verbosity:
  // `Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu)`, `int[]`, ...
  std::string ToString() const;
  void AppendTo(std::string* out) const;

  bool is_tensor() const { return kind_ == TypeKind::kTensor; }

  explicit Type(TypeKind kind) : kind_(kind) {}

 private:
  TypeKind kind_;
  TensorInfo tensor_;
  std::vector<TypePtr> contained_;
  std::string name_;
};

// Structural equality.
bool TypeEquals(const Type& a, const Type& b);
inline bool TypeEquals(const TypePtr& a, const TypePtr& b) {
  return a == b || (a && b && TypeEquals(*a, *b));
}
// `a` can be used where `b` is expected (int <: Scalar, T <: Optional[T],
// any refined tensor <: Tensor, everything <: Any, ...).
bool IsSubtypeOf(const TypePtr& a, const TypePtr& b);
// A Tensor type with shape/dtype facts dropped.
TypePtr UnrefinedTensor();

}  // namespace kiln::ir

#endif  // KILN_IR_TYPE_H_
