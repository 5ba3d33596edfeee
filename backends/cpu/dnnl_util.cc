#include "backends/cpu/dnnl_util.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/env.h"

namespace kiln::backends::cpu {

RunStream::RunStream() : stream_(new dnnl::stream(dnnl_util::Engine())) {}
RunStream::~RunStream() { delete static_cast<dnnl::stream*>(stream_); }

bool LibraryCallsDisabled() { return env::LibraryDisabled(); }

namespace dnnl_util {

dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& StreamOf(RunStream& s) { return *static_cast<dnnl::stream*>(s.handle()); }

std::optional<int64_t> Args::Int(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr || !args[i].constant->isInt()) return std::nullopt;
  return args[i].constant->toInt();
}

std::optional<double> Args::Number(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr || !args[i].constant->isNumber()) return std::nullopt;
  return args[i].constant->toNumberAsDouble();
}

std::optional<bool> Args::Bool(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr || !args[i].constant->isBool()) return std::nullopt;
  return args[i].constant->toBool();
}

std::optional<std::vector<int64_t>> Args::Ints(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr) return std::nullopt;
  const ir::IValue& c = *args[i].constant;
  if (c.isInt()) return std::vector<int64_t>{c.toInt()};
  if (!c.isList() && !c.isTuple()) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::IValue& e : c.elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  return out;
}

std::optional<std::vector<std::string>> Args::Strings(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr || !args[i].constant->isList()) return std::nullopt;
  std::vector<std::string> out;
  for (const ir::IValue& e : args[i].constant->elements()) {
    if (!e.isString()) return std::nullopt;
    out.push_back(e.toString());
  }
  return out;
}

std::optional<std::vector<double>> Args::Numbers(size_t i) const {
  if (i >= args.size() || args[i].constant == nullptr || !args[i].constant->isList()) return std::nullopt;
  std::vector<double> out;
  for (const ir::IValue& e : args[i].constant->elements()) {
    if (!e.isNumber()) return std::nullopt;
    out.push_back(e.toNumberAsDouble());
  }
  return out;
}

Args DecodeArgs(const ExternCallSpec& spec) {
  Args out;
  int next = 0;
  for (const lowering::ExternArg& a : spec.args) {
    Arg arg;
    if (!a.buffer.empty()) {
      arg.buffer = next++;
    } else if (a.is_buffer_list || !a.buffer_list.empty()) {
      arg.is_list = true;
      for (size_t k = 0; k < a.buffer_list.size(); ++k) arg.buffer_list.push_back(next++);
    } else if (a.constant) {
      arg.constant = &*a.constant;
      arg.is_list = a.IsTensorList();  // an empty Tensor[]
    }
    out.args.push_back(std::move(arg));
  }
  out.num_buffer_args = next;
  return out;
}

memory::dims Dims(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

memory::desc LayoutDesc(const lowering::Layout& l) {
  memory::dims strides = Dims(l.strides);
  // oneDNN wants strides for size-1 dims too; any value that keeps the
  // descriptor dense works (they are never multiplied by a non-zero index).
  for (size_t i = 0; i < strides.size(); ++i) {
    if (l.sizes[i] == 1 && strides[i] == 0) strides[i] = 1;
  }
  return memory::desc(Dims(l.sizes), memory::data_type::f32, strides);
}

memory::desc ContiguousDesc(const memory::dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * std::max<int64_t>(dims[static_cast<size_t>(i) + 1], 1);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc ChannelsLastDesc(const memory::dims& dims) {
  // Order of storage: N, spatial..., C.
  const size_t r = dims.size();
  memory::dims strides(r, 1);
  int64_t s = 1;
  strides[1] = s;
  s *= std::max<int64_t>(dims[1], 1);
  for (size_t i = r - 1; i >= 2; --i) {
    strides[i] = s;
    s *= std::max<int64_t>(dims[i], 1);
  }
  strides[0] = s;
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc UserDesc(const lowering::Layout& layout, ValueFormat format) {
  if (format == ValueFormat::kChannelsLast) return ChannelsLastDesc(Dims(layout.sizes));
  return LayoutDesc(layout);
}

void* DataPointer(void* base, const lowering::Layout& l) {
  return static_cast<char*>(base) + l.offset * static_cast<int64_t>(sizeof(float));
}

absl::Status AppendPostOps(const std::vector<ir::PostOp>& post, const std::vector<memory::desc>& operand_descs,
                           dnnl::post_ops* ops, std::vector<std::pair<int, int>>* binary) {
  using ir::PostOpKind;
  using dnnl::algorithm;
  auto eltwise = [&](algorithm alg, double alpha = 0, double beta = 0) {
    ops->append_eltwise(1.0f, alg, static_cast<float>(alpha), static_cast<float>(beta));
  };
  const double inf = INFINITY;
  for (const ir::PostOp& p : post) {
    switch (p.kind) {
      case PostOpKind::kRelu: eltwise(algorithm::eltwise_relu); break;
      case PostOpKind::kLeakyRelu: eltwise(algorithm::eltwise_relu, p.scalars[0]); break;
      case PostOpKind::kElu: eltwise(algorithm::eltwise_elu, p.scalars[0]); break;
      case PostOpKind::kSigmoid: eltwise(algorithm::eltwise_logistic); break;
      case PostOpKind::kTanh: eltwise(algorithm::eltwise_tanh); break;
      case PostOpKind::kHardswish: eltwise(algorithm::eltwise_hardswish); break;
      case PostOpKind::kHardsigmoid:
        eltwise(algorithm::eltwise_linear, 1.0 / 6.0, 0.5);
        eltwise(algorithm::eltwise_clip_v2, 0.0, 1.0);
        break;
      case PostOpKind::kSilu: eltwise(algorithm::eltwise_swish, 1.0); break;
      case PostOpKind::kGelu: eltwise(algorithm::eltwise_gelu_erf); break;
      case PostOpKind::kGeluTanh: eltwise(algorithm::eltwise_gelu_tanh); break;
      case PostOpKind::kClamp: eltwise(algorithm::eltwise_clip_v2, p.scalars[0], p.scalars[1]); break;
      case PostOpKind::kClampMin:
        if (p.scalars[0] == 0.0) {
          eltwise(algorithm::eltwise_relu);
        } else {
          eltwise(algorithm::eltwise_clip_v2, p.scalars[0], inf);
        }
        break;
      case PostOpKind::kClampMax: eltwise(algorithm::eltwise_clip_v2, -inf, p.scalars[0]); break;
      case PostOpKind::kLinear: eltwise(algorithm::eltwise_linear, p.scalars[0], p.scalars[1]); break;
      case PostOpKind::kAdd:
      case PostOpKind::kMul:
        if (p.operand < 0 || static_cast<size_t>(p.operand) >= operand_descs.size()) {
          return absl::InvalidArgumentError("post-op operand out of range");
        }
        binary->emplace_back(ops->len(), p.operand);
        ops->append_binary(p.kind == PostOpKind::kAdd ? algorithm::binary_add : algorithm::binary_mul,
                           operand_descs[static_cast<size_t>(p.operand)]);
        break;
    }
  }
  return absl::OkStatus();
}

void Reorder::Bind(memory& core_memory, char* workspace) const {
  if (needed) core_memory.set_data_handle(workspace + offset);
}

void Reorder::In(dnnl::stream& s, memory& user_memory, memory& core_memory, char* workspace) const {
  if (!needed) return;
  Bind(core_memory, workspace);
  prim.execute(s, user_memory, core_memory);
}

void Reorder::Out(dnnl::stream& s, memory& core_memory, memory& user_memory) const {
  if (needed) prim.execute(s, core_memory, user_memory);
}

std::pair<memory, memory> ReorderMemories(const Reorder& r) {
  memory user(r.user, Engine(), DNNL_MEMORY_NONE);
  return {user, r.needed ? memory(r.core, Engine(), DNNL_MEMORY_NONE) : user};
}

std::string PostOpsLabel(const std::vector<ir::PostOp>& post) {
  std::vector<std::string> names;
  for (const ir::PostOp& p : post) names.push_back(ir::PostOpName(p.kind));
  return absl::StrJoin(names, " ");
}

std::string DescFingerprint(const memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.ndims < 0 || d.ndims > DNNL_MAX_NDIMS) return "";
  auto list = [](const dnnl_dim_t* v, int n) { return absl::StrJoin(v, v + n, ","); };
  if (d.format_kind == dnnl_format_kind_wino) {
    // Winograd weights (library_conv.cc): the transform's parameters fix
    // the layout.
    const dnnl_wino_desc_t& w = d.format_desc.wino_desc;
    return absl::StrCat("t", static_cast<int>(d.data_type), " d", list(d.dims, d.ndims), " wino",
                        static_cast<int>(w.wino_format), " r", w.r, " a", w.alpha, " ic", w.ic, " oc", w.oc, " b",
                        w.ic_block, ",", w.oc_block, ",", w.ic2_block, ",", w.oc2_block, " s", w.adj_scale, " n",
                        w.size);
  }
  if (d.format_kind != dnnl_blocked) return "";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  if (b.inner_nblks < 0 || b.inner_nblks > DNNL_MAX_NDIMS) return "";
  return absl::StrCat("t", static_cast<int>(d.data_type), " d", list(d.dims, d.ndims), " p",
                      list(d.padded_dims, d.ndims), " o", list(d.padded_offsets, d.ndims), " o0 ", d.offset0, " s",
                      list(b.strides, d.ndims), " b", list(b.inner_blks, b.inner_nblks), " i",
                      list(b.inner_idxs, b.inner_nblks), " x", d.extra.flags, ",", d.extra.compensation_mask, ",",
                      d.extra.scale_adjust, ",", d.extra.asymm_compensation_mask);
}

std::string LibraryVersion() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrCat(v->major, ".", v->minor, ".", v->patch, "+", v->hash != nullptr ? v->hash : "");
}

absl::Status PackedConstant::Pack(void* slice) {
  storage = slice;
  return Guard("packing a constant", [&] {
    dnnl::stream s(Engine());
    memory from(user, Engine(), source);
    memory to(packed, Engine(), storage);
    dnnl::reorder(from, to).execute(s, from, to);
    s.wait();
  });
}

int ThreadsForWork(double work) {
  const int pool = omp_get_max_threads();
  return work >= 2 * kWorkPerThread ? pool : 1;  // see the header: 1 or all
}

size_t WorkspaceLayout::Add(size_t bytes) {
  const size_t offset = total_;
  total_ += (bytes + 63) / 64 * 64;
  return offset;
}

absl::Status Reorder::Prepare(const memory::desc& user_desc, const memory::desc& core_desc, WorkspaceLayout* ws,
                              bool into_core) {
  user = user_desc;
  core = core_desc;
  needed = !(user == core);
  if (!needed) return absl::OkStatus();
  offset = ws->Add(core.get_size());
  return Guard("reorder", [&] {
    prim = into_core ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), user, Engine(), core))
                     : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), core, Engine(), user));
  });
}

}  // namespace dnnl_util
}  // namespace kiln::backends::cpu
