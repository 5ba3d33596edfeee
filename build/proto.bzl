"""kiln_cc_proto_library: C++ protobuf code generation with the system protoc.

Bazel's native cc_proto_library needs @com_google_protobuf, which the offline
build cannot fetch, so this macro runs Debian's /usr/bin/protoc (3.21, matching
libprotobuf-dev) in a genrule and wraps the output in a cc_library.

    load("//build:proto.bzl", "kiln_cc_proto_library")

    kiln_cc_proto_library(
        name = "graph_proto",          # C++ library target
        srcs = ["graph.proto"],        # .proto files in this package
        deps = [":tensor_proto"],      # other kiln_cc_proto_library targets
        visibility = ["//build:ir_users"],
    )

* A proto in package `ir` is imported by its workspace-relative path
  (`import "ir/tensor.proto";`) and the generated header is included the same
  way (`#include "ir/graph.pb.h"`).
* Well-known types (`google/protobuf/*.proto`) come from /usr/include.
* Targets defined:
    <name>             cc_library with the generated code (depend on this)
    <name>_genproto    genrule producing <file>.pb.h / <file>.pb.cc
    <name>_protos      filegroup: this library's .proto files and those of all
                       its transitive deps (used as protoc inputs)
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

_PROTOC = "/usr/bin/protoc"

def _protos_label(dep):
    """Label of the `_protos` filegroup belonging to a kiln_cc_proto_library."""
    if ":" not in dep:
        # "//foo/bar" is shorthand for "//foo/bar:bar".
        dep = dep + ":" + dep.split("/")[-1]
    return dep + "_protos"

def kiln_cc_proto_library(name, srcs, deps = [], visibility = None, testonly = None, **kwargs):
    """C++ library generated from `srcs` (.proto files of this package).

    Args:
      name: name of the resulting cc_library.
      srcs: .proto files in this package (plain file names).
      deps: other kiln_cc_proto_library targets whose protos `srcs` import.
      visibility: visibility of the cc_library (and the proto filegroup).
      testonly: passed through.
      **kwargs: passed to the cc_library (e.g. tags).
    """
    for s in srcs:
        if not s.endswith(".proto") or s.startswith(":") or s.startswith("//"):
            fail("kiln_cc_proto_library(%s): srcs must be .proto file names in this package, got %r" % (name, s))

    native.filegroup(
        name = name + "_protos",
        srcs = srcs + [_protos_label(d) for d in deps],
        visibility = visibility,
        testonly = testonly,
    )

    hdrs = [s[:-len(".proto")] + ".pb.h" for s in srcs]
    ccs = [s[:-len(".proto")] + ".pb.cc" for s in srcs]

    # protoc runs in the execroot: -I. makes workspace-relative imports work
    # (the sources of deps are inputs via the _protos filegroup).
    native.genrule(
        name = name + "_genproto",
        srcs = srcs + [":" + name + "_protos"],
        outs = hdrs + ccs,
        cmd = " ".join([
            _PROTOC,
            "-I.",
            "-I/usr/include",
            "--cpp_out=$(GENDIR)",
        ] + ["$(location %s)" % s for s in srcs]),
        message = "protoc %s" % native.package_name(),
        testonly = testonly,
    )

    cc_library(
        name = name,
        srcs = ccs,
        hdrs = hdrs,
        deps = deps + ["@system//:protobuf"],
        visibility = visibility,
        testonly = testonly,
        **kwargs
    )
