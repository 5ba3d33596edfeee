// The runtime spells support/promotion.h's names as runtime::... (used by
// lazy/); the rules live there, once, for passes and runtime alike.
#ifndef KILN_RUNTIME_PROMOTION_H_
#define KILN_RUNTIME_PROMOTION_H_

#include "support/promotion.h"

namespace kiln::runtime {

using ::kiln::DTypeOperand;
using ::kiln::OperandClass;
using ::kiln::PromoteTypes;
using ::kiln::ResultType;

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PROMOTION_H_
