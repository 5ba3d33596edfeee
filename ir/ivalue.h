// IValue: a constant value as passes and the runtime see it (schema default
// values, folded constants, kernel inputs and outputs).
//
// Deliberately small: None, bool, int, float (double), str, Tensor, Device,
// list and tuple. Schema enums (ScalarType, Layout, MemoryFormat, Reduction)
// are ints, as they are in TorchScript graphs.
#ifndef KILN_IR_IVALUE_H_
#define KILN_IR_IVALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/type.h"
#include "support/tensor.h"

namespace kiln::ir {

class IValue {
 public:
  enum class Tag : uint8_t { kNone, kBool, kInt, kDouble, kString, kTensor, kDevice, kList, kTuple };

  IValue() = default;  // None
  static IValue None() { return IValue(); }
  // Named constructors: implicit conversions between bool/int/double are
  // exactly the bugs a constant folder must not have.
  static IValue Bool(bool v) { return IValue(Tag::kBool, v); }
  static IValue Int(int64_t v) { return IValue(Tag::kInt, v); }
  static IValue Double(double v) { return IValue(Tag::kDouble, v); }
  static IValue String(std::string v) { return IValue(Tag::kString, std::move(v)); }
  static IValue FromTensor(Tensor v) { return IValue(Tag::kTensor, std::move(v)); }
  static IValue FromDevice(Device v) { return IValue(Tag::kDevice, std::move(v)); }
  static IValue List(std::vector<IValue> elems) { return IValue(Tag::kList, std::move(elems)); }
  static IValue Tuple(std::vector<IValue> elems) { return IValue(Tag::kTuple, std::move(elems)); }
  static IValue IntList(const std::vector<int64_t>& v);

  Tag tag() const { return tag_; }
  bool isNone() const { return tag_ == Tag::kNone; }
  bool isBool() const { return tag_ == Tag::kBool; }
  bool isInt() const { return tag_ == Tag::kInt; }
  bool isDouble() const { return tag_ == Tag::kDouble; }
  bool isString() const { return tag_ == Tag::kString; }
  bool isTensor() const { return tag_ == Tag::kTensor; }
  bool isDevice() const { return tag_ == Tag::kDevice; }
  bool isList() const { return tag_ == Tag::kList; }
  bool isTuple() const { return tag_ == Tag::kTuple; }

  // Accessors require the matching tag.
  bool toBool() const { return std::get<bool>(v_); }
  int64_t toInt() const { return std::get<int64_t>(v_); }
  double toDouble() const { return std::get<double>(v_); }
  const std::string& toString() const { return std::get<std::string>(v_); }
  const Tensor& toTensor() const { return std::get<Tensor>(v_); }
  const Device& toDevice() const { return std::get<Device>(v_); }
  // Elements of a list or a tuple.
  const std::vector<IValue>& elements() const { return std::get<std::vector<IValue>>(v_); }
  std::vector<IValue>& mutableElements() { return std::get<std::vector<IValue>>(v_); }
  // int or double (bool counts as int, as Python's numbers do).
  bool isNumber() const { return isInt() || isDouble() || isBool(); }
  double toNumberAsDouble() const;

  // A type describing the value (a tensor's dtype and sizes are included).
  TypePtr type() const;

  // Python-like rendering: None, True, 3, 1.5, "s", [1, 2], (1, "a"), cpu.
  std::string DebugString() const;
  void AppendTo(std::string* out) const;

  // Structural equality; doubles bitwise (NaN == NaN, 0. != -0.), tensors by
  // value (Tensor::ValueEquals), Int(1) != Double(1.) != Bool(true).
  friend bool operator==(const IValue& a, const IValue& b);
  friend bool operator!=(const IValue& a, const IValue& b) { return !(a == b); }
  // Deterministic, consistent with ==.
  uint64_t Hash() const;
  template <typename H>
  friend H AbslHashValue(H h, const IValue& v) {
    return H::combine(std::move(h), v.Hash());
  }

 private:
  using Storage = std::variant<std::monostate, bool, int64_t, double, std::string, Tensor,
                               Device, std::vector<IValue>>;
  template <typename T>
  IValue(Tag tag, T&& v) : tag_(tag), v_(std::forward<T>(v)) {}

  Tag tag_ = Tag::kNone;
  Storage v_;
};

}  // namespace kiln::ir

#endif  // KILN_IR_IVALUE_H_
