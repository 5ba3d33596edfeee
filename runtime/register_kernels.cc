// Fills the registry's kernel slots from the op rows' KERNEL column
// (ops/all.def): each row's kernel is bound to its overload's schema
// (typed unboxing, runtime/unboxed.h).
#include "runtime/register_kernels.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ops/row.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "runtime/kernels_nn.h"
#include "runtime/kernels_sequence.h"
#include "runtime/kernels_shape.h"
#include "runtime/kernels_special.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "runtime/unboxed.h"

namespace kiln::runtime {
namespace {

// Binds row kernels, collecting every error (one line each), so that a
// schema list from another PyTorch version shows all the rows it breaks.
class Registrar {
 public:
  explicit Registrar(ir::OpRegistry& registry) : registry_(registry) {}

  void Add(const char* name, ops::row::None) {}
  void Add(const char* name, const KernelBinder& bind) {
    ir::Operator* op = registry_.FindMutable(name);
    // An aten row may name an overload of another PyTorch version's schema
    // list; //testing:op_completeness_test checks the rows.
    if (op == nullptr) return;
    absl::StatusOr<ir::KernelFn> fn = bind(op->schema);
    if (!fn.ok()) {
      absl::StrAppend(&errors_, errors_.empty() ? "" : "\n", fn.status().message());
      return;
    }
    op->kernel = *std::move(fn);
  }

  absl::Status status() const {
    return errors_.empty() ? absl::OkStatus() : absl::InvalidArgumentError(errors_);
  }

 private:
  ir::OpRegistry& registry_;
  std::string errors_;
};

}  // namespace

absl::Status RegisterReferenceKernels(ir::OpRegistry& registry) {
  using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
  Registrar r(registry);
#define KILN_OP(name, schema, traits, kernel, shape, decomp, lower, ext, note) r.Add(name, kernel);
#include "ops/all.def"
  return r.status();
}

absl::Status RegisterBuiltinKernels() {
  static const absl::Status* status =
      new absl::Status(RegisterReferenceKernels(ir::BuiltinOps()));
  return *status;
}

}  // namespace kiln::runtime
