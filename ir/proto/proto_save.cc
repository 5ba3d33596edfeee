// Graph -> GraphProto.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/proto/proto_convert.h"
#include "support/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; add byte swapping for big-endian hosts"
#endif

namespace kiln::ir {
namespace {

using proto::AttributeProto;
using proto::BlockProto;
using proto::NodeProto;
using proto::TensorProto;
using proto::TypeProto;
using proto::ValueProto;

void SetBytes(std::string* dst, absl::string_view src) {
  dst->assign(src.data(), src.size());
}

class Saver {
 public:
  explicit Saver(proto::GraphProto* out) : out_(out) {}

  absl::Status Save(const Graph& graph) {
    out_->set_format_version(kProtoFormatVersion);
    return SaveBlock(*graph.block(), out_->mutable_block(), 0);
  }

 private:
  // Index of `type` in the table, adding it (and its elements first).
  absl::StatusOr<int32_t> TypeIndex(const TypePtr& type, int depth) {
    if (type == nullptr) return absl::InvalidArgumentError("a value or attribute has no type");
    auto it = type_index_.find(type.get());
    if (it != type_index_.end()) return it->second;
    if (depth >= kMaxProtoTypeDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "type nesting deeper than ", kMaxProtoTypeDepth, " levels"));
    }
    // Elements first, so every entry only refers to earlier ones.
    std::vector<int32_t> contained;
    contained.reserve(type->contained().size());
    for (const TypePtr& elem : type->contained()) {
      ASSIGN_OR_RETURN(int32_t index, TypeIndex(elem, depth + 1));
      contained.push_back(index);
    }
    TypeProto* tp = out_->add_types();
    tp->set_kind(static_cast<proto::TypeKindProto>(type->kind()));
    for (int32_t c : contained) tp->add_contained(c);
    if (type->kind() == TypeKind::kClass) SetBytes(tp->mutable_class_name(), type->class_name());
    if (type->kind() == TypeKind::kTensor) RETURN_IF_ERROR(SaveTensorInfo(type->tensor(), tp));
    const int32_t index = out_->types_size() - 1;
    type_index_.emplace(type.get(), index);
    return index;
  }

  static absl::Status SaveTensorInfo(const TensorInfo& info, TypeProto* tp) {
    if (info.strides && (!info.sizes || info.strides->size() != info.sizes->size())) {
      return absl::InvalidArgumentError(
          "tensor type has strides but not one size per stride");
    }
    if (!info.dtype && !info.sizes && !info.strides && !info.device &&
        !info.requires_grad && !info.undefined) {
      return absl::OkStatus();
    }
    proto::TensorInfoProto* ti = tp->mutable_tensor();
    if (info.dtype) ti->set_dtype(static_cast<int32_t>(DTypeCode(*info.dtype)));
    if (info.sizes) {
      proto::SizesProto* sizes = ti->mutable_sizes();
      sizes->mutable_dims()->Reserve(static_cast<int>(info.sizes->size()));
      for (size_t d = 0; d < info.sizes->size(); ++d) {
        const std::optional<int64_t>& dim = (*info.sizes)[d];
        sizes->add_dims(dim ? *dim : 0);
        if (!dim) sizes->add_unknown_dims(static_cast<int32_t>(d));
      }
    }
    if (info.strides) {
      for (int64_t s : *info.strides) ti->mutable_strides()->add_values(s);
    }
    if (info.device) {
      SetBytes(ti->mutable_device()->mutable_type(), info.device->type);
      ti->mutable_device()->set_index(info.device->index);
    }
    if (info.requires_grad) ti->set_requires_grad(*info.requires_grad);
    if (info.undefined) ti->set_undefined(*info.undefined);
    return absl::OkStatus();
  }

  absl::Status SaveValue(const Value* v, ValueProto* vp) {
    vp->set_id(static_cast<int64_t>(v->unique()));
    if (v->hasDebugName()) SetBytes(vp->mutable_name(), v->debugNameRaw());
    ASSIGN_OR_RETURN(int32_t type, TypeIndex(v->type(), 0));
    vp->set_type(type);
    return absl::OkStatus();
  }

  absl::Status SaveBlock(const Block& block, BlockProto* bp, int depth) {
    if (depth > kMaxProtoBlockDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("blocks nested deeper than ", kMaxProtoBlockDepth, " levels"));
    }
    for (const Value* in : block.inputs()) RETURN_IF_ERROR(SaveValue(in, bp->add_inputs()));
    for (const Node* n : block.nodes()) RETURN_IF_ERROR(SaveNode(*n, bp->add_nodes(), depth));
    auto outputs = block.outputs();
    bp->mutable_output_ids()->Reserve(static_cast<int>(outputs.size()));
    for (const Value* out : outputs) bp->add_output_ids(static_cast<int64_t>(out->unique()));
    return absl::OkStatus();
  }

  absl::Status SaveNode(const Node& n, NodeProto* np, int depth) {
    SetBytes(np->mutable_kind(), n.kind().qualString());
    auto inputs = n.inputs();
    np->mutable_input_ids()->Reserve(static_cast<int>(inputs.size()));
    for (const Value* in : inputs) np->add_input_ids(static_cast<int64_t>(in->unique()));
    for (const Value* out : n.outputs()) RETURN_IF_ERROR(SaveValue(out, np->add_outputs()));
    for (const Attribute& a : n.attributes()) {
      RETURN_IF_ERROR(SaveAttribute(a, np->add_attributes()));
    }
    if (!n.sourceLocation().empty()) SetBytes(np->mutable_source_location(), n.sourceLocation());
    if (!n.scope().empty()) SetBytes(np->mutable_scope(), n.scope());
    for (const Block* b : n.blocks()) {
      RETURN_IF_ERROR(SaveBlock(*b, np->add_blocks(), depth + 1));
    }
    return absl::OkStatus();
  }

  // Stores `d`, remembering NaN bit patterns the text format would lose.
  static double Double(double d, AttributeProto* ap) {
    if (std::isnan(d)) {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      ap->add_nan_bits(bits);
    }
    return d;
  }

  static void SaveTensor(const Tensor& t, TensorProto* tp) {
    if (!t.defined()) {
      tp->set_undefined(true);
      return;
    }
    tp->set_dtype(static_cast<int32_t>(DTypeCode(t.dtype())));
    for (int64_t s : t.sizes()) tp->add_sizes(s);
    if (t.is_placeholder()) {
      tp->set_placeholder(true);
      if (t.strides() != Tensor::ContiguousStrides(t.sizes())) {
        for (int64_t s : t.strides()) tp->add_strides(s);
      }
      return;
    }
    const Tensor c = t.Contiguous();
    const size_t nbytes = static_cast<size_t>(c.numel()) * c.element_size();
    if (nbytes > 0) tp->set_raw_data(c.raw_data(), nbytes);
  }

  absl::Status SaveAttribute(const Attribute& a, AttributeProto* ap) {
    SetBytes(ap->mutable_name(), a.name.qualString());
    ap->set_kind(static_cast<proto::AttributeKindProto>(KindOf(a.value)));
    const AttributeValue& v = a.value;
    switch (KindOf(v)) {
      case AttributeKind::f:
        ap->set_f(Double(std::get<double>(v), ap));
        break;
      case AttributeKind::fs: {
        auto* list = ap->mutable_fs();
        for (double d : std::get<std::vector<double>>(v)) list->add_values(Double(d, ap));
        break;
      }
      case AttributeKind::i:
        ap->set_i(std::get<int64_t>(v));
        break;
      case AttributeKind::is: {
        auto* list = ap->mutable_is();
        for (int64_t i : std::get<std::vector<int64_t>>(v)) list->add_values(i);
        break;
      }
      case AttributeKind::s:
        ap->set_s(std::get<std::string>(v));
        break;
      case AttributeKind::ss: {
        auto* list = ap->mutable_ss();
        for (const std::string& s : std::get<std::vector<std::string>>(v)) list->add_values(s);
        break;
      }
      case AttributeKind::t:
        SaveTensor(std::get<Tensor>(v), ap->mutable_t());
        break;
      case AttributeKind::ts: {
        auto* list = ap->mutable_ts();
        for (const Tensor& t : std::get<std::vector<Tensor>>(v)) SaveTensor(t, list->add_values());
        break;
      }
      case AttributeKind::ty: {
        ASSIGN_OR_RETURN(int32_t index, TypeIndex(std::get<TypePtr>(v), 0));
        ap->set_ty(index);
        break;
      }
      case AttributeKind::tys: {
        auto* list = ap->mutable_tys();
        for (const TypePtr& t : std::get<std::vector<TypePtr>>(v)) {
          ASSIGN_OR_RETURN(int32_t index, TypeIndex(t, 0));
          list->add_values(index);
        }
        break;
      }
      case AttributeKind::c: {
        const auto& c = std::get<std::complex<double>>(v);
        auto* cp = ap->mutable_c();
        cp->set_real(Double(c.real(), ap));
        cp->set_imag(Double(c.imag(), ap));
        break;
      }
      case AttributeKind::cs: {
        auto* list = ap->mutable_cs();
        for (const auto& c : std::get<std::vector<std::complex<double>>>(v)) {
          list->add_values(Double(c.real(), ap));
          list->add_values(Double(c.imag(), ap));
        }
        break;
      }
    }
    return absl::OkStatus();
  }

  proto::GraphProto* out_;
  absl::flat_hash_map<const Type*, int32_t> type_index_;
};

}  // namespace

absl::Status ToProto(const Graph& graph, proto::GraphProto* out) {
  out->Clear();
  return Saver(out).Save(graph);
}

absl::StatusOr<proto::GraphProto> ToProto(const Graph& graph) {
  proto::GraphProto out;
  RETURN_IF_ERROR(ToProto(graph, &out));
  return out;
}

}  // namespace kiln::ir
