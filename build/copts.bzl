"""Compiler options for kiln's own C++ code.

Usage in a BUILD file:

    load("@rules_cc//cc:defs.bzl", "cc_library")
    load("//build:copts.bzl", "KILN_COPTS")

    cc_library(
        name = "foo",
        srcs = ["foo.cc"],
        hdrs = ["foo.h"],
        copts = KILN_COPTS,
    )

Warnings are errors for project code only: third-party headers come from
/usr/include (system headers, warnings suppressed by the compiler) and
generated protobuf code (//build:proto.bzl) does not use KILN_COPTS.
C++17 is set globally in .bazelrc.
"""

# Warnings that are errors in kiln code (gcc 12 and clang 14).
KILN_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    "-Wnon-virtual-dtor",
    "-Woverloaded-virtual",
    "-Wvla",
]

KILN_COPTS = KILN_WARNINGS + ["-Werror"]

# For tests: gtest's macros trip -Wsign-compare in EXPECT_EQ(size(), 3) etc.
KILN_TEST_COPTS = KILN_COPTS + ["-Wno-sign-compare"]
