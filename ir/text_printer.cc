#include "ir/text_printer.h"

#include <complex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/tensor_text.h"

namespace kiln::ir {
namespace {

// c10::printQuotedString: double quotes, C escapes, octal for other
// non-printable bytes.
void AppendQuoted(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char ch : s) {
    switch (ch) {
      case '\\': out->append("\\\\"); break;
      case '\'': out->append("\\'"); break;
      case '"': out->append("\\\""); break;
      case '\a': out->append("\\a"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\v': out->append("\\v"); break;
      default: {
        const unsigned char u = static_cast<unsigned char>(ch);
        if (u > 0x1f && u < 0x7f) {
          out->push_back(ch);
        } else {
          const char octal[4] = {'\\', static_cast<char>('0' + (u >> 6)),
                                 static_cast<char>('0' + ((u >> 3) & 7)),
                                 static_cast<char>('0' + (u & 7))};
          out->append(octal, 4);
        }
      }
    }
  }
  out->push_back('"');
}

template <typename T, typename F>
void AppendList(const std::vector<T>& items, std::string* out, F append_one) {
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    append_one(items[i]);
  }
  out->push_back(']');
}

void AppendComplex(std::complex<double> c, std::string* out) {
  AppendDoubleRepr(c.real(), out);
  if (!(c.imag() < 0)) out->push_back('+');
  AppendDoubleRepr(c.imag(), out);
  out->push_back('j');
}

class Printer {
 public:
  Printer(std::string* out, const PrintOptions& options)
      : out_(out), options_(options) {}

  void PrintGraph(const Graph& g) {
    out_->append("graph(");
    AppendValuesWithTypes(g.inputs(), ",\n      ");
    out_->append("):\n");
    for (const Node* n : g.nodes()) PrintNode(*n, 1, /*body=*/true);
    out_->append("  return (");
    AppendValues(g.outputs());
    out_->append(")\n");
  }

  // One node at `level`; with `body`, a newline and its blocks follow.
  void PrintNode(const Node& n, size_t level, bool body) {
    Indent(level);
    AppendValuesWithTypes(n.outputs(), ", ");
    out_->append(" = ");
    AppendKind(n.kind());
    if (n.hasAttributes()) {
      out_->push_back('[');
      bool first = true;
      for (const Attribute& a : n.attributes()) {
        if (!first) out_->append(", ");
        first = false;
        absl::string_view name = a.name.name();
        out_->append(name.data(), name.size());
        out_->push_back('=');
        AppendAttributeValue(a.value);
      }
      out_->push_back(']');
    }
    out_->push_back('(');
    AppendValues(n.inputs());
    out_->push_back(')');
    absl::string_view scope = n.scope();
    if (!scope.empty()) {
      out_->append(", scope: ");
      out_->append(scope.data(), scope.size());
    }
    absl::string_view loc = n.sourceLocation();
    if (options_.source_locations && !loc.empty()) {
      out_->append(" # ");
      out_->append(loc.data(), loc.size());
    }
    if (!body) return;
    out_->push_back('\n');
    for (size_t i = 0; i < n.blocks().size(); ++i) {
      const Block* b = n.blocks()[i];
      Indent(level + 1);
      absl::StrAppend(out_, "block", i, "(");
      AppendValuesWithTypes(b->inputs(), ", ");
      out_->append("):\n");
      for (const Node* nested : b->nodes()) PrintNode(*nested, level + 2, true);
      Indent(level + 2);
      out_->append("-> (");
      AppendValues(b->outputs());
      out_->append(")\n");
    }
  }

 private:
  void Indent(size_t level) { out_->append(2 * level, ' '); }

  void AppendKind(Symbol kind) {
    // Symbol::qualString takes the symbol table's lock; cache per printer.
    const uint32_t id = kind.id();
    if (id >= kinds_.size()) kinds_.resize(id + 1);
    absl::string_view& s = kinds_[id];
    if (s.empty()) s = kind.qualString();
    out_->append(s.data(), s.size());
  }

  void AppendValue(const Value* v) {
    out_->push_back('%');
    const std::string& name = v->debugNameRaw();
    if (name.empty()) {
      absl::StrAppend(out_, v->unique());
    } else {
      out_->append(name);
    }
  }

  void AppendValues(absl::Span<Value* const> values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_->append(", ");
      AppendValue(values[i]);
    }
  }

  void AppendValuesWithTypes(absl::Span<Value* const> values, absl::string_view sep) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_->append(sep.data(), sep.size());
      AppendValue(values[i]);
      out_->append(" : ");
      values[i]->type()->AppendTo(out_);
    }
  }

  void AppendAttributeValue(const AttributeValue& v) {
    std::string* out = out_;
    switch (KindOf(v)) {
      case AttributeKind::f:
        AppendDoubleRepr(std::get<double>(v), out);
        return;
      case AttributeKind::fs:
        AppendList(std::get<std::vector<double>>(v), out,
                   [out](double d) { AppendDoubleRepr(d, out); });
        return;
      case AttributeKind::i:
        absl::StrAppend(out, std::get<int64_t>(v));
        return;
      case AttributeKind::is:
        AppendList(std::get<std::vector<int64_t>>(v), out,
                   [out](int64_t i) { absl::StrAppend(out, i); });
        return;
      case AttributeKind::s:
        AppendQuoted(std::get<std::string>(v), out);
        return;
      case AttributeKind::ss:
        AppendList(std::get<std::vector<std::string>>(v), out,
                   [out](const std::string& s) { AppendQuoted(s, out); });
        return;
      case AttributeKind::t:
        AppendTensorAttribute(std::get<Tensor>(v), out);
        return;
      case AttributeKind::ts:
        out->append("[<Tensors>]");
        return;
      case AttributeKind::ty:
        std::get<TypePtr>(v)->AppendTo(out);
        return;
      case AttributeKind::tys:
        AppendList(std::get<std::vector<TypePtr>>(v), out,
                   [out](const TypePtr& t) { t->AppendTo(out); });
        return;
      case AttributeKind::c:
        AppendComplex(std::get<std::complex<double>>(v), out);
        return;
      case AttributeKind::cs:
        AppendList(std::get<std::vector<std::complex<double>>>(v), out,
                   [out](std::complex<double> c) { AppendComplex(c, out); });
        return;
    }
  }

  std::string* out_;
  const PrintOptions& options_;
  std::vector<absl::string_view> kinds_;
};

}  // namespace

void PrintGraphTo(const Graph& g, std::string* out, const PrintOptions& options) {
  Printer(out, options).PrintGraph(g);
}

std::string PrintGraph(const Graph& g, const PrintOptions& options) {
  std::string out;
  // Real graphs print at roughly 80-120 bytes per node.
  out.reserve(64 + g.numNodes() * 96);
  PrintGraphTo(g, &out, options);
  return out;
}

std::string PrintNode(const Node& n) {
  std::string out;
  PrintOptions options;
  Printer(&out, options).PrintNode(n, 0, /*body=*/false);
  return out;
}

}  // namespace kiln::ir
