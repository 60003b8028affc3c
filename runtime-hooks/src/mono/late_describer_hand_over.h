// The drain's hand-over of the late describer (late_describer.cpp): the DescribeMethods function
// (capture/sampling.h) that start_describer() and start_preload_describer() install. Declared here
// only so that the unit tests can call it as the sample drain does (tests/unit/runtime-hooks/mono/
// late_describer_test.cpp); the product reaches it through set_describe_methods.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mlpd::hooks::late_describer_detail {

void hand_over(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
               std::vector<std::pair<uint64_t, uint64_t>>& ranges);

}  // namespace mlpd::hooks::late_describer_detail
