// Interned `namespace::name` symbols (aten::add, prim::Constant, attr::value).
//
// A Symbol is a 32-bit id into a process-wide table, so comparing and hashing
// symbols is an integer operation. Well-known symbols are interned at start-up
// in a fixed order and available as constants (sym::kConstant, ...).
#ifndef KILN_IR_SYMBOL_H_
#define KILN_IR_SYMBOL_H_

#include <cstdint>
#include <functional>
#include <string>
#include "absl/strings/string_view.h"

namespace kiln::ir {

class Symbol {
 public:
  constexpr Symbol() : id_(0) {}  // the invalid symbol
  constexpr explicit Symbol(uint32_t id) : id_(id) {}

  // Interns "ns::name". The text must contain "::".
  static Symbol FromQualString(absl::string_view qual);
  static Symbol Make(absl::string_view ns, absl::string_view name);
  static Symbol Attr(absl::string_view name) { return Make("attr", name); }

  uint32_t id() const { return id_; }
  bool valid() const { return id_ != 0; }
  // "aten::add"
  absl::string_view qualString() const;
  // "aten"
  absl::string_view ns() const;
  // "add"
  absl::string_view name() const;

  bool is_prim() const;
  bool is_aten() const;
  bool is_attr() const;

  friend bool operator==(Symbol a, Symbol b) { return a.id_ == b.id_; }
  friend bool operator!=(Symbol a, Symbol b) { return a.id_ != b.id_; }
  friend bool operator<(Symbol a, Symbol b) { return a.id_ < b.id_; }
  template <typename H>
  friend H AbslHashValue(H h, Symbol s) {
    return H::combine(std::move(h), s.id_);
  }

 private:
  uint32_t id_;
};

// Well-known symbols. Their ids are fixed at start-up.
namespace sym {
extern const Symbol kConstant;       // prim::Constant
extern const Symbol kParam;          // prim::Param
extern const Symbol kReturn;         // prim::Return
extern const Symbol kIf;             // prim::If
extern const Symbol kLoop;           // prim::Loop
extern const Symbol kListConstruct;  // prim::ListConstruct
extern const Symbol kListUnpack;     // prim::ListUnpack
extern const Symbol kTupleConstruct;
extern const Symbol kTupleUnpack;
extern const Symbol kTupleIndex;
extern const Symbol kRaiseException;
extern const Symbol kPrint;
extern const Symbol kUninitialized;
extern const Symbol kGetAttr;
extern const Symbol kSetAttr;
extern const Symbol kCallMethod;
extern const Symbol kCallFunction;
extern const Symbol kNumToTensor;
// attributes
extern const Symbol kValue;  // attr::value
extern const Symbol kName;   // attr::name
}  // namespace sym

}  // namespace kiln::ir

template <>
struct std::hash<kiln::ir::Symbol> {
  size_t operator()(kiln::ir::Symbol s) const { return s.id(); }
};

#endif  // KILN_IR_SYMBOL_H_
