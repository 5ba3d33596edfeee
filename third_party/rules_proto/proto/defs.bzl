"""Offline stand-in for @rules_proto//proto:defs.bzl (forwards to native rules).

Note: native proto_library needs @com_google_protobuf//:protoc, which is not
available offline; use kiln_cc_proto_library from //build:proto.bzl for C++.
"""

ProtoInfo = ProtoInfo

def proto_library(**attrs):
    native.proto_library(**attrs)

def proto_lang_toolchain(**attrs):
    native.proto_lang_toolchain(**attrs)
