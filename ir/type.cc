#include "ir/type.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir {

std::string Device::ToString() const {
  return index < 0 ? type : absl::StrCat(type, ":", index);
}

bool TensorInfo::HasCompleteSizes() const {
  if (!sizes) return false;
  for (const auto& s : *sizes) {
    if (!s) return false;
  }
  return true;
}

std::vector<int64_t> TensorInfo::ConcreteSizes() const {
  std::vector<int64_t> out;
  out.reserve(sizes->size());
  for (const auto& s : *sizes) out.push_back(*s);
  return out;
}

namespace {
TypePtr MakeSingleton(TypeKind k) { return std::make_shared<const Type>(k); }
}  // namespace

#define KILN_SINGLETON(fn, kind)                           \
  const TypePtr& Type::fn() {                              \
    static const TypePtr* t = new TypePtr(MakeSingleton(kind)); \
    return *t;                                             \
  }
KILN_SINGLETON(Any, TypeKind::kAny)
KILN_SINGLETON(Tensor, TypeKind::kTensor)
KILN_SINGLETON(Int, TypeKind::kInt)
KILN_SINGLETON(Float, TypeKind::kFloat)
KILN_SINGLETON(Bool, TypeKind::kBool)
KILN_SINGLETON(Complex, TypeKind::kComplex)
KILN_SINGLETON(Number, TypeKind::kNumber)
KILN_SINGLETON(Str, TypeKind::kStr)
KILN_SINGLETON(None, TypeKind::kNone)
KILN_SINGLETON(DeviceType, TypeKind::kDevice)
KILN_SINGLETON(Layout, TypeKind::kLayout)
KILN_SINGLETON(ScalarType, TypeKind::kScalarType)
KILN_SINGLETON(MemoryFormat, TypeKind::kMemoryFormat)
KILN_SINGLETON(Generator, TypeKind::kGenerator)
#undef KILN_SINGLETON

TypePtr UnrefinedTensor() { return Type::Tensor(); }

TypePtr Type::TensorWith(TensorInfo info) {
  if (!info.dtype && !info.sizes && !info.strides && !info.device &&
      !info.requires_grad && !info.undefined) {
    return Tensor();
  }
  auto t = std::make_shared<Type>(TypeKind::kTensor);
  t->tensor_ = std::move(info);
  return t;
}

TypePtr Type::List(TypePtr elem) {
  if (elem->kind() == TypeKind::kInt) {
    static const TypePtr* int_list = [] {
      auto t = std::make_shared<Type>(TypeKind::kList);
      t->contained_.push_back(Type::Int());
      return new TypePtr(std::move(t));
    }();
    return *int_list;
  }
  auto t = std::make_shared<Type>(TypeKind::kList);
  t->contained_.push_back(std::move(elem));
  return t;
}

TypePtr Type::Tuple(std::vector<TypePtr> elems) {
  auto t = std::make_shared<Type>(TypeKind::kTuple);
  t->contained_ = std::move(elems);
  return t;
}

TypePtr Type::Optional(TypePtr elem) {
  auto t = std::make_shared<Type>(TypeKind::kOptional);
  t->contained_.push_back(std::move(elem));
  return t;
}

TypePtr Type::Dict(TypePtr key, TypePtr value) {
  auto t = std::make_shared<Type>(TypeKind::kDict);
  t->contained_.push_back(std::move(key));
  t->contained_.push_back(std::move(value));
  return t;
}

TypePtr Type::Class(std::string qualified_name) {
  auto t = std::make_shared<Type>(TypeKind::kClass);
  t->name_ = std::move(qualified_name);
  return t;
}

std::string Type::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

namespace {

// Mirrors c10's operator<<(ostream&, const Type&) for TensorType at the
// default (Full) verbosity.
void AppendTensor(const TensorInfo& t, std::string* out) {
  if (t.dtype) {
    absl::StrAppend(out, DTypeName(*t.dtype));
    if (!t.sizes) out->append("Tensor");
  } else {
    out->append("Tensor");
  }
  size_t i = 0;
  if (t.sizes) {
    const size_t ndim = t.sizes->size();
    out->push_back('(');
    for (i = 0; i < ndim; ++i) {
      if (i > 0) out->append(", ");
      if ((*t.sizes)[i]) {
        absl::StrAppend(out, *(*t.sizes)[i]);
      } else {
        out->push_back('*');
      }
    }
    if (ndim > 0 && t.strides && t.strides->size() == ndim) {
      out->append(", strides=[");
      for (size_t d = 0; d < ndim; ++d) {
        if (d > 0) out->append(", ");
        absl::StrAppend(out, (*t.strides)[d]);
      }
      out->push_back(']');
    }
    if (t.requires_grad) {
      if (i++ > 0) out->append(", ");
      absl::StrAppend(out, "requires_grad=", *t.requires_grad ? 1 : 0);
    }
    if (t.device) {
      if (i++ > 0) out->append(", ");
      absl::StrAppend(out, "device=", t.device->ToString());
    }
    out->push_back(')');
  } else {
    if (t.requires_grad) {
      absl::StrAppend(out, "(requires_grad=", *t.requires_grad ? 1 : 0);
      ++i;
    }
    if (t.device) {
      out->append(i++ > 0 ? ", " : "(");
      absl::StrAppend(out, "device=", t.device->ToString());
    }
    if (i > 0) out->push_back(')');
  }
  if (t.undefined && *t.undefined) out->append("[Undefined]");
}

}  // namespace

void Type::AppendTo(std::string* out) const {
  switch (kind_) {
    case TypeKind::kAny: out->append("Any"); return;
    case TypeKind::kTensor: AppendTensor(tensor_, out); return;
    case TypeKind::kInt: out->append("int"); return;
    case TypeKind::kFloat: out->append("float"); return;
    case TypeKind::kBool: out->append("bool"); return;
    case TypeKind::kComplex: out->append("complex"); return;
    case TypeKind::kNumber: out->append("Scalar"); return;
    case TypeKind::kStr: out->append("str"); return;
    case TypeKind::kNone: out->append("NoneType"); return;
    case TypeKind::kDevice: out->append("Device"); return;
    case TypeKind::kLayout: out->append("Layout"); return;
    case TypeKind::kScalarType: out->append("ScalarType"); return;
    case TypeKind::kMemoryFormat: out->append("MemoryFormat"); return;
    case TypeKind::kGenerator: out->append("Generator"); return;
    case TypeKind::kList:
      contained_[0]->AppendTo(out);
      out->append("[]");
      return;
    case TypeKind::kOptional:
      contained_[0]->AppendTo(out);
      out->push_back('?');
      return;
    case TypeKind::kTuple:
      out->push_back('(');
      for (size_t i = 0; i < contained_.size(); ++i) {
        if (i > 0) out->append(", ");
        contained_[i]->AppendTo(out);
      }
      out->push_back(')');
      return;
    case TypeKind::kDict:
      out->append("Dict(");
      contained_[0]->AppendTo(out);
      out->append(", ");
      contained_[1]->AppendTo(out);
      out->push_back(')');
      return;
    case TypeKind::kClass: out->append(name_); return;
  }
}

bool TypeEquals(const Type& a, const Type& b) {
  if (&a == &b) return true;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case TypeKind::kTensor: {
      const TensorInfo& x = a.tensor();
      const TensorInfo& y = b.tensor();
      return x.dtype == y.dtype && x.sizes == y.sizes && x.strides == y.strides &&
             x.device == y.device && x.requires_grad == y.requires_grad &&
             x.undefined == y.undefined;
    }
    case TypeKind::kClass:
      return a.class_name() == b.class_name();
    case TypeKind::kList:
    case TypeKind::kTuple:
    case TypeKind::kOptional:
    case TypeKind::kDict: {
      const auto& x = a.contained();
      const auto& y = b.contained();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!TypeEquals(*x[i], *y[i])) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

namespace {
bool IsIntLike(TypeKind k) {
  return k == TypeKind::kInt || k == TypeKind::kLayout ||
         k == TypeKind::kScalarType || k == TypeKind::kMemoryFormat;
}
}  // namespace

bool IsSubtypeOf(const TypePtr& a, const TypePtr& b) {
  if (TypeEquals(a, b)) return true;
  const TypeKind ak = a->kind();
  const TypeKind bk = b->kind();
  if (bk == TypeKind::kAny) return true;
  // Schema enums (ScalarType, Layout, MemoryFormat) are ints in graphs.
  if (IsIntLike(ak) && IsIntLike(bk)) return true;
  if (bk == TypeKind::kNumber) {
    return ak == TypeKind::kInt || ak == TypeKind::kFloat ||
           ak == TypeKind::kComplex || ak == TypeKind::kBool ||
           IsIntLike(ak);
  }
  if (ak == TypeKind::kTensor && bk == TypeKind::kTensor) {
    // Any refinement is a subtype of the unrefined tensor; otherwise facts
    // that `b` states must match.
    const TensorInfo& x = a->tensor();
    const TensorInfo& y = b->tensor();
    if (y.dtype && x.dtype != y.dtype) return false;
    if (y.sizes && x.sizes != y.sizes) return false;
    if (y.strides && x.strides != y.strides) return false;
    if (y.device && x.device != y.device) return false;
    if (y.requires_grad && x.requires_grad != y.requires_grad) return false;
    return true;
  }
  if (bk == TypeKind::kOptional) {
    if (ak == TypeKind::kNone) return true;
    if (ak == TypeKind::kOptional) {
      return IsSubtypeOf(a->contained()[0], b->contained()[0]);
    }
    return IsSubtypeOf(a, b->contained()[0]);
  }
  if (ak == TypeKind::kList && bk == TypeKind::kList) {
    // Lists are invariant in TorchScript, but refined tensor elements still
    // count as Tensor.
    const TypePtr& x = a->contained()[0];
    const TypePtr& y = b->contained()[0];
    return TypeEquals(x, y) || (x->is_tensor() && y->is_tensor() &&
                                IsSubtypeOf(x, y)) ||
           y->kind() == TypeKind::kAny;
  }
  if (ak == TypeKind::kTuple && bk == TypeKind::kTuple) {
    if (a->contained().size() != b->contained().size()) return false;
    for (size_t i = 0; i < a->contained().size(); ++i) {
      if (!IsSubtypeOf(a->contained()[i], b->contained()[i])) return false;
    }
    return true;
  }
  return false;
}

}  // namespace kiln::ir
