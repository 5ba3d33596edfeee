// GraphProto -> Graph, for untrusted input.
//
// One pass over the blocks builds the graph while checking SSA scoping: a
// value id moves from free to pending (defined by a node whose blocks are
// still being read: invisible there), to visible, to dead when its block
// ends. Any error leaves a half-built graph that is simply destroyed: every
// node is linked into its block before anything about it can fail.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/proto/proto_convert.h"
#include "support/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; add byte swapping for big-endian hosts"
#endif

namespace kiln::ir {
namespace {

using proto::AttributeProto;
using proto::BlockProto;
using proto::GraphProto;
using proto::NodeProto;
using proto::TensorProto;
using proto::TypeProto;
using proto::ValueProto;

absl::string_view View(const std::string& s) { return absl::string_view(s); }

std::string Quoted(absl::string_view s) {
  constexpr size_t kMax = 60;
  if (s.size() > kMax) return absl::StrCat("\"", s.substr(0, kMax), "...\"");
  return absl::StrCat("\"", s, "\"");
}

// The element count of a tensor of `sizes`, or an error for negative sizes or
// a count that does not fit in int64.
absl::StatusOr<int64_t> CheckedNumel(const google::protobuf::RepeatedField<int64_t>& sizes) {
  int64_t numel = 1;
  for (int d = 0; d < sizes.size(); ++d) {
    const int64_t s = sizes.Get(d);
    if (s < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", s, " in dim ", d));
    if (s != 0 && numel > std::numeric_limits<int64_t>::max() / s) {
      return absl::InvalidArgumentError("tensor element count overflows int64");
    }
    numel *= s;
  }
  return numel;
}

absl::StatusOr<DType> CheckedDType(int64_t code) {
  std::optional<DType> dtype = DTypeFromCode(code);
  if (!dtype) return absl::InvalidArgumentError(absl::StrCat("unknown dtype code ", code));
  return *dtype;
}

absl::StatusOr<Tensor> LoadTensor(const TensorProto& tp) {
  if (tp.undefined()) {
    if (tp.dtype() != 0 || tp.sizes_size() != 0 || tp.strides_size() != 0 ||
        tp.placeholder() || !tp.raw_data().empty()) {
      return absl::InvalidArgumentError("undefined tensor with dtype, shape or data");
    }
    return Tensor();
  }
  ASSIGN_OR_RETURN(DType dtype, CheckedDType(tp.dtype()));
  ASSIGN_OR_RETURN(int64_t numel, CheckedNumel(tp.sizes()));
  std::vector<int64_t> sizes(tp.sizes().begin(), tp.sizes().end());
  if (tp.placeholder()) {
    if (!tp.raw_data().empty()) return absl::InvalidArgumentError("placeholder tensor with data");
    if (tp.strides_size() != 0 && tp.strides_size() != tp.sizes_size()) {
      return absl::InvalidArgumentError(absl::StrCat("placeholder tensor has ", tp.strides_size(),
                                                     " strides for ", tp.sizes_size(), " dims"));
    }
    for (int64_t s : tp.strides()) {
      if (s < 0) return absl::InvalidArgumentError(absl::StrCat("negative stride ", s));
    }
    std::vector<int64_t> strides(tp.strides().begin(), tp.strides().end());
    return Tensor::Placeholder(dtype, std::move(sizes), std::move(strides));
  }
  if (tp.strides_size() != 0) {
    return absl::InvalidArgumentError("tensor with data has strides (data is stored contiguous)");
  }
  const uint64_t elem = DTypeSize(dtype);
  const uint64_t n = static_cast<uint64_t>(numel);
  if (n != 0 && elem > std::numeric_limits<uint64_t>::max() / n) {
    return absl::InvalidArgumentError("tensor byte size overflows");
  }
  if (tp.raw_data().size() != n * elem) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor of ", DTypeName(dtype), " with ", numel, " elements needs ",
                     n * elem, " bytes of raw_data, got ", tp.raw_data().size()));
  }
  if (dtype == DType::kBool) {
    // Any other byte is not a valid bool (reading it is undefined behaviour).
    for (unsigned char b : tp.raw_data()) {
      if (b > 1) return absl::InvalidArgumentError(absl::StrCat("bool tensor byte ", int{b}));
    }
  }
  return Tensor::FromBytes(dtype, std::move(sizes), tp.raw_data().data(), tp.raw_data().size());
}

class Loader {
 public:
  explicit Loader(const GraphProto& p) : p_(p) {}

  absl::StatusOr<std::unique_ptr<Graph>> Load() {
    if (p_.format_version() < 1 || p_.format_version() > kProtoFormatVersion) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported graph proto format_version ", p_.format_version(),
          " (this build reads versions 1 to ", kProtoFormatVersion,
          p_.format_version() > kProtoFormatVersion ? "; the file is from a newer kiln)" : ")"));
    }
    RETURN_IF_ERROR(LoadTypes());
    int64_t num_values = 0;
    int64_t max_id = -1;
    RETURN_IF_ERROR(Prescan(p_.block(), 0, &num_values, &max_id));
    // Ids written by ToProto are Value::unique(), dense unless the graph
    // had many values deleted; index them directly when that is cheap.
    use_dense_ = max_id < 2 * num_values + 1024;
    if (use_dense_) {
      dense_.resize(static_cast<size_t>(max_id + 1));
      burn_budget_ = 2 * num_values + 1024;
    } else {
      sparse_.reserve(static_cast<size_t>(num_values));
    }
    graph_ = std::make_unique<Graph>();
    GraphInternals::ReserveNames(graph_.get(), static_cast<size_t>(num_values));
    RETURN_IF_ERROR(LoadBlock(p_.block(), graph_->block(), 0));
    GraphInternals::FinishNaming(graph_.get());
    return std::move(graph_);
  }

 private:
  enum State : uint8_t { kFree = 0, kPending, kVisible, kDead };
  struct Slot {
    Value* value = nullptr;
    State state = kFree;
  };
  struct Frame {
    int node_index;
    absl::string_view kind;
    int block_index;
  };

  // ---------------------------------------------------------------- errors

  // "node 3 (prim::If) block 1 > node 0 (aten::add)"; "graph" outside nodes.
  std::string Where() const {
    std::string out;
    for (const Frame& f : frames_) {
      absl::StrAppend(&out, "node ", f.node_index, " (", f.kind, ") block ", f.block_index, " > ");
    }
    if (node_index_ >= 0) {
      absl::StrAppend(&out, "node ", node_index_, " (", node_kind_, ")");
    } else {
      absl::StrAppend(&out, frames_.empty() ? "graph" : "block");
    }
    return out;
  }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(), ": ", what));
  }

  absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(), ": ", prefix, ": ", s.message()));
  }

  // ---------------------------------------------------------------- types

  absl::Status LoadTypes() {
    const int n = p_.types_size();
    types_.reserve(static_cast<size_t>(n));
    std::vector<int> depth(static_cast<size_t>(n), 1);
    for (int i = 0; i < n; ++i) {
      const TypeProto& tp = p_.types(i);
      int d = 1;
      for (int c : tp.contained()) {
        if (c < 0 || c >= i) {
          return absl::InvalidArgumentError(absl::StrCat(
              "type ", i, ": contained type index ", c, " must refer to an earlier type (0..",
              i - 1, ")"));
        }
        d = std::max(d, depth[static_cast<size_t>(c)] + 1);
      }
      if (d > kMaxProtoTypeDepth) {
        return absl::InvalidArgumentError(
            absl::StrCat("type ", i, ": nested deeper than ", kMaxProtoTypeDepth, " levels"));
      }
      depth[static_cast<size_t>(i)] = d;
      auto type = LoadType(tp);
      if (!type.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("type ", i, ": ", type.status().message()));
      }
      types_.push_back(*std::move(type));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TypePtr> LoadType(const TypeProto& tp) {
    if (!proto::TypeKindProto_IsValid(tp.kind())) {
      return absl::InvalidArgumentError(absl::StrCat("unknown type kind ", tp.kind()));
    }
    const auto kind = static_cast<TypeKind>(tp.kind());
    if (kind != TypeKind::kTensor && tp.has_tensor()) {
      return absl::InvalidArgumentError("tensor info on a non-tensor type");
    }
    if (kind != TypeKind::kClass && !tp.class_name().empty()) {
      return absl::InvalidArgumentError("class name on a non-class type");
    }
    int expected = 0;  // contained count; -1 = any
    if (kind == TypeKind::kList || kind == TypeKind::kOptional) expected = 1;
    if (kind == TypeKind::kDict) expected = 2;
    if (kind == TypeKind::kTuple) expected = -1;
    if (expected >= 0 && tp.contained_size() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("a ", proto::TypeKindProto_Name(tp.kind()),
                                                     " type needs ", expected,
                                                     " contained types, got ",
                                                     tp.contained_size()));
    }
    auto elem = [&](int i) { return types_[static_cast<size_t>(tp.contained(i))]; };
    switch (kind) {
      case TypeKind::kAny: return Type::Any();
      case TypeKind::kTensor: return LoadTensorType(tp.tensor());
      case TypeKind::kInt: return Type::Int();
      case TypeKind::kFloat: return Type::Float();
      case TypeKind::kBool: return Type::Bool();
      case TypeKind::kComplex: return Type::Complex();
      case TypeKind::kNumber: return Type::Number();
      case TypeKind::kStr: return Type::Str();
      case TypeKind::kNone: return Type::None();
      case TypeKind::kDevice: return Type::DeviceType();
      case TypeKind::kLayout: return Type::Layout();
      case TypeKind::kScalarType: return Type::ScalarType();
      case TypeKind::kMemoryFormat: return Type::MemoryFormat();
      case TypeKind::kGenerator: return Type::Generator();
      case TypeKind::kList: return Type::List(elem(0));
      case TypeKind::kOptional: return Type::Optional(elem(0));
      case TypeKind::kDict: return Type::Dict(elem(0), elem(1));
      case TypeKind::kTuple: {
        std::vector<TypePtr> elems;
        elems.reserve(static_cast<size_t>(tp.contained_size()));
        for (int i = 0; i < tp.contained_size(); ++i) elems.push_back(elem(i));
        return Type::Tuple(std::move(elems));
      }
      case TypeKind::kClass: return Type::Class(tp.class_name());
    }
    return absl::InvalidArgumentError("unknown type kind");
  }

  static absl::StatusOr<TypePtr> LoadTensorType(const proto::TensorInfoProto& tp) {
    TensorInfo info;
    if (tp.has_dtype()) {
      ASSIGN_OR_RETURN(DType dtype, CheckedDType(tp.dtype()));
      info.dtype = dtype;
    }
    if (tp.has_sizes()) {
      const auto& dims = tp.sizes().dims();
      const auto& unknown = tp.sizes().unknown_dims();
      std::vector<std::optional<int64_t>> sizes(dims.begin(), dims.end());
      int prev = -1;
      for (int u : unknown) {
        if (u <= prev || u >= dims.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "unknown_dims must ascend within 0..", dims.size() - 1, ", got ", u));
        }
        sizes[static_cast<size_t>(u)] = std::nullopt;
        prev = u;
      }
      info.sizes = std::move(sizes);
    }
    if (tp.has_strides()) {
      const auto& strides = tp.strides().values();
      if (!info.sizes || info.sizes->size() != static_cast<size_t>(strides.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor type has ", strides.size(), " strides but ",
            info.sizes ? absl::StrCat(info.sizes->size(), " dims") : "unknown rank"));
      }
      info.strides = std::vector<int64_t>(strides.begin(), strides.end());
    }
    if (tp.has_device()) {
      if (tp.device().index() < -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("device index ", tp.device().index(), " (expected -1 or more)"));
      }
      info.device = Device{tp.device().type(), tp.device().index()};
    }
    if (tp.has_requires_grad()) info.requires_grad = tp.requires_grad();
    if (tp.has_undefined()) info.undefined = tp.undefined();
    return Type::TensorWith(std::move(info));
  }

  absl::StatusOr<TypePtr> TypeAt(int64_t index) const {
    if (index < 0 || index >= static_cast<int64_t>(types_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "type index ", index, " out of range (the graph has ", types_.size(), " types)"));
    }
    return types_[static_cast<size_t>(index)];
  }

  // ---------------------------------------------------------------- ids

  // Counts value definitions and finds the largest id; also bounds nesting
  // before anything recurses deeper.
  absl::Status Prescan(const BlockProto& bp, int depth, int64_t* num_values, int64_t* max_id) {
    if (depth > kMaxProtoBlockDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("blocks nested deeper than ", kMaxProtoBlockDepth, " levels"));
    }
    auto note = [&](const ValueProto& v) {
      ++*num_values;
      *max_id = std::max(*max_id, v.id());
    };
    for (const ValueProto& v : bp.inputs()) note(v);
    for (const NodeProto& n : bp.nodes()) {
      for (const ValueProto& v : n.outputs()) note(v);
      for (const BlockProto& b : n.blocks()) {
        RETURN_IF_ERROR(Prescan(b, depth + 1, num_values, max_id));
      }
    }
    return absl::OkStatus();
  }

  Slot* FindSlot(int64_t id) {
    if (use_dense_) {
      if (id < 0 || id >= static_cast<int64_t>(dense_.size())) return nullptr;
      return &dense_[static_cast<size_t>(id)];
    }
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }

  // A fresh slot for a new definition of `id`.
  absl::StatusOr<Slot*> NewSlot(int64_t id) {
    if (id < 0) return Error(absl::StrCat("value id ", id, " is negative"));
    Slot* slot;
    if (use_dense_) {
      // Prescan sized the table for every defined id.
      slot = &dense_[static_cast<size_t>(id)];
    } else {
      slot = &sparse_[id];
    }
    if (slot->state != kFree) return Error(absl::StrCat("value id ", id, " is defined twice"));
    return slot;
  }

  absl::StatusOr<Value*> Resolve(int64_t id, absl::string_view role) {
    Slot* slot = FindSlot(id);
    const State state = slot ? slot->state : kFree;
    switch (state) {
      case kVisible: return slot->value;
      case kFree: return Error(absl::StrCat(role, " refers to undefined value id ", id));
      case kPending:
        return Error(absl::StrCat(role, " uses value id ", id,
                                  ", an output of a node enclosing this block"));
      case kDead:
        return Error(absl::StrCat(role, " uses value id ", id, " outside the block defining it"));
    }
    return Error("bad slot state");
  }

  // Makes the next fresh Value::unique() equal `id` where that costs little,
  // so that unnamed values print with their original numbers.
  void AlignUnique(int64_t id) {
    const int64_t next = static_cast<int64_t>(graph_->nextUnique());
    if (id <= next || id - next > burn_budget_) return;
    burn_budget_ -= id - next;
    graph_->create(sym::kConstant, static_cast<size_t>(id - next))->destroy();
  }

  // Defines the value of `vp`, allocated by `alloc` (which must allocate
  // exactly one Value), as pending.
  template <typename Alloc>
  absl::StatusOr<Value*> DefineValue(const ValueProto& vp, Alloc alloc) {
    ASSIGN_OR_RETURN(Slot * slot, NewSlot(vp.id()));
    ASSIGN_OR_RETURN(TypePtr type, TypeAt(vp.type()));
    AlignUnique(vp.id());
    Value* v = alloc();
    v->setType(std::move(type));
    if (!vp.name().empty()) {
      if (graph_->findValue(vp.name()) != nullptr) {
        return Error(absl::StrCat("value name ", Quoted(vp.name()), " is used twice"));
      }
      GraphInternals::SetNameUnchecked(v, vp.name());
    } else if (static_cast<int64_t>(v->unique()) != vp.id()) {
      // Keep the printed number; fresh values never reuse it (FinishNaming).
      const std::string number = std::to_string(vp.id());
      if (graph_->findValue(number) != nullptr) {
        return Error(absl::StrCat("unnamed value id ", vp.id(), " clashes with a value named ",
                                  Quoted(number)));
      }
      GraphInternals::SetNameUnchecked(v, number);
    }
    slot->value = v;
    slot->state = kPending;
    return v;
  }

  void MakeVisible(int64_t id) {
    FindSlot(id)->state = kVisible;
    scope_.push_back(id);
  }

  // ---------------------------------------------------------------- structure

  absl::StatusOr<Symbol> Intern(absl::string_view qual, absl::string_view what) {
    auto it = symbols_.find(qual);
    if (it != symbols_.end()) return it->second;
    const size_t sep = qual.find("::");
    if (sep == absl::string_view::npos || sep == 0 || sep + 2 == qual.size()) {
      return Error(absl::StrCat(what, " ", Quoted(qual), " is not a qualified name like ",
                                "\"ns::name\""));
    }
    const Symbol s = Symbol::FromQualString(qual);
    symbols_.emplace(std::string(qual), s);
    return s;
  }

  absl::Status LoadBlock(const BlockProto& bp, Block* block, int depth) {
    const size_t scope_mark = scope_.size();
    for (const ValueProto& vp : bp.inputs()) {
      ASSIGN_OR_RETURN(Value * v, DefineValue(vp, [&] { return block->addInput(); }));
      (void)v;
      MakeVisible(vp.id());
    }
    for (int i = 0; i < bp.nodes_size(); ++i) {
      RETURN_IF_ERROR(LoadNode(bp.nodes(i), i, block, depth));
    }
    for (int i = 0; i < bp.output_ids_size(); ++i) {
      ASSIGN_OR_RETURN(Value * v,
                       Resolve(bp.output_ids(i), absl::StrCat("block output ", i)));
      block->registerOutput(v);
    }
    for (size_t i = scope_mark; i < scope_.size(); ++i) FindSlot(scope_[i])->state = kDead;
    scope_.resize(scope_mark);
    return absl::OkStatus();
  }

  absl::Status LoadNode(const NodeProto& np, int index, Block* block, int depth) {
    node_index_ = index;
    node_kind_ = np.kind();
    ASSIGN_OR_RETURN(Symbol kind, Intern(np.kind(), "kind"));
    if (kind == sym::kParam || kind == sym::kReturn) {
      return Error("prim::Param and prim::Return are block sentinels, not nodes");
    }
    // Linked first: from here on the graph owns the node, even on error.
    Node* n = block->appendNode(graph_->create(kind, 0));
    for (int i = 0; i < np.input_ids_size(); ++i) {
      const int64_t id = np.input_ids(i);
      Slot* slot = FindSlot(id);
      if (slot != nullptr && slot->state == kVisible) {
        n->addInput(slot->value);  // the common case, without building a role string
      } else {
        ASSIGN_OR_RETURN(Value * v, Resolve(id, absl::StrCat("input ", i)));
        n->addInput(v);
      }
    }
    for (const ValueProto& vp : np.outputs()) {
      ASSIGN_OR_RETURN(Value * v, DefineValue(vp, [&] { return n->addOutput(); }));
      (void)v;
    }
    RETURN_IF_ERROR(LoadAttributes(np, n));
    if (!np.source_location().empty()) n->setSourceLocation(np.source_location());
    if (!np.scope().empty()) n->setScope(np.scope());
    for (int b = 0; b < np.blocks_size(); ++b) {
      frames_.push_back(Frame{index, View(np.kind()), b});
      node_index_ = -1;
      RETURN_IF_ERROR(LoadBlock(np.blocks(b), n->addBlock(), depth + 1));
      frames_.pop_back();
    }
    node_index_ = index;
    node_kind_ = np.kind();
    for (const ValueProto& vp : np.outputs()) MakeVisible(vp.id());
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------- attributes

  // Hands out this attribute's doubles, restoring NaN bit patterns in order.
  class Doubles {
   public:
    explicit Doubles(const AttributeProto& ap) : ap_(ap) {}
    absl::StatusOr<double> Take(double d) {
      if (!std::isnan(d)) return d;
      if (next_ >= ap_.nan_bits_size()) {
        return absl::InvalidArgumentError("more NaNs than nan_bits entries");
      }
      const uint64_t bits = ap_.nan_bits(next_++);
      double restored;
      std::memcpy(&restored, &bits, sizeof(restored));
      if (!std::isnan(restored)) {
        return absl::InvalidArgumentError(absl::StrFormat("nan_bits entry %#x is not a NaN", bits));
      }
      return restored;
    }
    absl::Status Finish() const {
      if (next_ != ap_.nan_bits_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            ap_.nan_bits_size(), " nan_bits entries for ", next_, " NaN values"));
      }
      return absl::OkStatus();
    }

   private:
    const AttributeProto& ap_;
    int next_ = 0;
  };

  absl::Status LoadAttributes(const NodeProto& np, Node* n) {
    const int count = np.attributes_size();
    // Duplicates would silently overwrite each other; a set only pays off
    // for nodes with many attributes.
    absl::flat_hash_set<Symbol> seen;
    for (int i = 0; i < count; ++i) {
      const AttributeProto& ap = np.attributes(i);
      ASSIGN_OR_RETURN(Symbol name, Intern(ap.name(), absl::StrCat("attribute ", i, " name")));
      const bool duplicate =
          count > 8 ? !seen.insert(name).second : n->hasAttribute(name);
      if (duplicate) {
        return Error(absl::StrCat("attribute ", Quoted(ap.name()), " appears twice"));
      }
      auto value = LoadAttributeValue(ap);
      if (!value.ok()) {
        return Prefixed(absl::StrCat("attribute ", Quoted(ap.name())), value.status());
      }
      n->setAttribute(name, *std::move(value));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<AttributeValue> LoadAttributeValue(const AttributeProto& ap) {
    using Case = AttributeProto::ValueCase;
    static constexpr Case kCaseOfKind[] = {
        AttributeProto::kF,  AttributeProto::kFs, AttributeProto::kI,  AttributeProto::kIs,
        AttributeProto::kS,  AttributeProto::kSs, AttributeProto::kT,  AttributeProto::kTs,
        AttributeProto::kTy, AttributeProto::kTys, AttributeProto::kC, AttributeProto::kCs};
    if (!proto::AttributeKindProto_IsValid(ap.kind())) {
      return absl::InvalidArgumentError(absl::StrCat("unknown attribute kind ", ap.kind()));
    }
    if (ap.value_case() == AttributeProto::VALUE_NOT_SET) {
      return absl::InvalidArgumentError("no value");
    }
    if (kCaseOfKind[ap.kind()] != ap.value_case()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kind ", proto::AttributeKindProto_Name(ap.kind()),
          " does not match the value set (field ", static_cast<int>(ap.value_case()), ")"));
    }
    Doubles doubles(ap);
    AttributeValue result;
    switch (ap.value_case()) {
      case AttributeProto::kF: {
        ASSIGN_OR_RETURN(double d, doubles.Take(ap.f()));
        result = d;
        break;
      }
      case AttributeProto::kFs: {
        std::vector<double> values;
        values.reserve(static_cast<size_t>(ap.fs().values_size()));
        for (double d : ap.fs().values()) {
          ASSIGN_OR_RETURN(double restored, doubles.Take(d));
          values.push_back(restored);
        }
        result = std::move(values);
        break;
      }
      case AttributeProto::kI:
        result = ap.i();
        break;
      case AttributeProto::kIs:
        result = std::vector<int64_t>(ap.is().values().begin(), ap.is().values().end());
        break;
      case AttributeProto::kS:
        result = ap.s();
        break;
      case AttributeProto::kSs:
        result = std::vector<std::string>(ap.ss().values().begin(), ap.ss().values().end());
        break;
      case AttributeProto::kT: {
        ASSIGN_OR_RETURN(Tensor t, LoadTensor(ap.t()));
        result = std::move(t);
        break;
      }
      case AttributeProto::kTs: {
        std::vector<Tensor> tensors;
        tensors.reserve(static_cast<size_t>(ap.ts().values_size()));
        for (int i = 0; i < ap.ts().values_size(); ++i) {
          auto t = LoadTensor(ap.ts().values(i));
          if (!t.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat("tensor ", i, ": ", t.status().message()));
          }
          tensors.push_back(*std::move(t));
        }
        result = std::move(tensors);
        break;
      }
      case AttributeProto::kTy: {
        ASSIGN_OR_RETURN(TypePtr t, TypeAt(ap.ty()));
        result = std::move(t);
        break;
      }
      case AttributeProto::kTys: {
        std::vector<TypePtr> types;
        types.reserve(static_cast<size_t>(ap.tys().values_size()));
        for (int64_t index : ap.tys().values()) {
          ASSIGN_OR_RETURN(TypePtr t, TypeAt(index));
          types.push_back(std::move(t));
        }
        result = std::move(types);
        break;
      }
      case AttributeProto::kC: {
        ASSIGN_OR_RETURN(double re, doubles.Take(ap.c().real()));
        ASSIGN_OR_RETURN(double im, doubles.Take(ap.c().imag()));
        result = std::complex<double>(re, im);
        break;
      }
      case AttributeProto::kCs: {
        const auto& flat = ap.cs().values();
        if (flat.size() % 2 != 0) {
          return absl::InvalidArgumentError("complex list has an odd number of doubles");
        }
        std::vector<std::complex<double>> values;
        values.reserve(static_cast<size_t>(flat.size() / 2));
        for (int i = 0; i < flat.size(); i += 2) {
          ASSIGN_OR_RETURN(double re, doubles.Take(flat.Get(i)));
          ASSIGN_OR_RETURN(double im, doubles.Take(flat.Get(i + 1)));
          values.emplace_back(re, im);
        }
        result = std::move(values);
        break;
      }
      case AttributeProto::VALUE_NOT_SET:
        break;
    }
    RETURN_IF_ERROR(doubles.Finish());
    return result;
  }

  const GraphProto& p_;
  std::unique_ptr<Graph> graph_;
  std::vector<TypePtr> types_;
  absl::flat_hash_map<std::string, Symbol> symbols_;
  bool use_dense_ = true;
  std::vector<Slot> dense_;
  absl::flat_hash_map<int64_t, Slot> sparse_;
  int64_t burn_budget_ = 0;
  std::vector<int64_t> scope_;  // ids made visible, innermost block last
  std::vector<Frame> frames_;   // the nodes enclosing the current block
  int node_index_ = -1;
  absl::string_view node_kind_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> FromProto(const proto::GraphProto& proto) {
  return Loader(proto).Load();
}

}  // namespace kiln::ir
