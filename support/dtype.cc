#include "support/dtype.h"

namespace kiln {
namespace {

struct DTypeInfo {
  DType type;
  absl::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kUInt8, "Byte", 1},        {DType::kInt8, "Char", 1},
    {DType::kInt16, "Short", 2},       {DType::kInt32, "Int", 4},
    {DType::kInt64, "Long", 8},        {DType::kFloat16, "Half", 2},
    {DType::kFloat32, "Float", 4},     {DType::kFloat64, "Double", 8},
    {DType::kComplex64, "ComplexFloat", 8},
    {DType::kBool, "Bool", 1},         {DType::kBFloat16, "BFloat16", 2},
};

const DTypeInfo* Find(DType t) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.type == t) return &info;
  }
  return nullptr;
}

}  // namespace

absl::string_view DTypeName(DType t) {
  const DTypeInfo* info = Find(t);
  return info ? info->name : "Undefined";
}

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromCode(int64_t code) {
  for (const DTypeInfo& info : kDTypes) {
    if (static_cast<int64_t>(info.type) == code) return info.type;
  }
  return std::nullopt;
}

size_t DTypeSize(DType t) {
  const DTypeInfo* info = Find(t);
  return info ? info->size : 0;
}

bool IsFloatingPoint(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat32 || t == DType::kFloat64;
}

bool IsComplex(DType t) { return t == DType::kComplex64; }

bool IsIntegral(DType t, bool include_bool) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return true;
    case DType::kBool:
      return include_bool;
    default:
      return false;
  }
}

}  // namespace kiln
