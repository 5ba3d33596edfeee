#include "testing/graph_texts.h"

#include "absl/strings/str_cat.h"

namespace kiln::testing {

std::string ChainText(int k, int64_t n, bool transcendental) {
  std::string text = absl::StrCat("graph(%x : Float(", n, ")):\n", "  %one : int = prim::Constant[value=1]()\n",
                                  "  %ca : float = prim::Constant[value=", transcendental ? "0.5" : "0.1", "]()\n",
                                  "  %cm : float = prim::Constant[value=", transcendental ? "1.1" : "0.9", "]()\n");
  std::string prev = "%x";
  for (int i = 0; i < k; ++i) {
    const std::string v = absl::StrCat("%y", i);
    switch (transcendental ? i % 4 : i % 2) {
      case 0: absl::StrAppend(&text, "  ", v, " : Tensor = aten::add(", prev, ", %ca, %one)\n"); break;
      case 1: absl::StrAppend(&text, "  ", v, " : Tensor = aten::mul(", prev, ", %cm)\n"); break;
      case 2: absl::StrAppend(&text, "  ", v, " : Tensor = aten::tanh(", prev, ")\n"); break;
      default: absl::StrAppend(&text, "  ", v, " : Tensor = aten::sigmoid(", prev, ")\n"); break;
    }
    prev = v;
  }
  absl::StrAppend(&text, "  return (", prev, ")\n");
  return text;
}

std::string SumText(int64_t m, int64_t n, int dim) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, ")):\n  %d : int[] = prim::Constant[value=[", dim,
                      "]]()\n  %f : bool = prim::Constant[value=0]()\n  %n : NoneType = prim::Constant()\n"
                      "  %s : Tensor = aten::sum(%x, %d, %f, %n)\n  return (%s)\n");
}

std::string SoftmaxText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, ")):\n  %d : int = prim::Constant[value=-1]()\n",
                      "  %n : NoneType = prim::Constant()\n  %s : Tensor = aten::softmax(%x, %d, %n)\n  return (%s)\n");
}

std::string LayerNormText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, "), %w : Float(", n, "), %b : Float(", n, ")):\n",
                      "  %shape : int[] = prim::Constant[value=[", n, "]]()\n",
                      "  %eps : float = prim::Constant[value=1.0000000000000001e-05]()\n",
                      "  %f : bool = prim::Constant[value=0]()\n",
                      "  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %f)\n  return (%y)\n");
}

std::string GeluBiasText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, "), %b : Float(", n, ")):\n",
                      "  %one : int = prim::Constant[value=1]()\n",
                      "  %approx : str = prim::Constant[value=\"none\"]()\n",
                      "  %a : Tensor = aten::add(%x, %b, %one)\n  %g : Tensor = aten::gelu(%a, %approx)\n",
                      "  return (%g)\n");
}

std::string MmText(int64_t m, int64_t k, int64_t n) {
  return absl::StrCat("graph(%a : Float(", m, ", ", k, "), %b : Float(", k, ", ", n, ")):\n",
                      "  %c : Tensor = aten::mm(%a, %b)\n  return (%c)\n");
}

}  // namespace kiln::testing
