"""kiln_dependencies(): the external repositories kiln's BUILD files use.

kiln's BUILD files refer to @system (Debian-packaged C++ libraries) and, through
@bazel_tools, to @rules_cc, @rules_java, @rules_proto and
@remote_coverage_tools, which kiln provides as small offline shims under
third_party/. A repository that depends on kiln declares kiln however it likes
and then calls this macro, which declares those five from kiln's own tree,
wherever Bazel put it:

    # WORKSPACE of a downstream repository
    load("@bazel_tools//tools/build_defs/repo:git.bzl", "git_repository")

    git_repository(
        name = "kiln",
        remote = "https://example.com/kiln.git",
        commit = "...",
    )
    # (or http_archive(name = "kiln", ...), or local_repository for a checkout)

    load("@kiln//build:deps.bzl", "kiln_dependencies")

    kiln_dependencies()

kiln's own WORKSPACE calls it too. A repository already declared under one of
these names (say the real rules_cc) is left alone.
"""

# name -> the directory under kiln's root that holds it.
_KILN_REPOSITORIES = {
    "rules_cc": "third_party/rules_cc",
    "rules_java": "third_party/rules_java",
    "rules_proto": "third_party/rules_proto",
    "remote_coverage_tools": "third_party/remote_coverage_tools",
    "system": "third_party/system",
}

def _kiln_subdirectory_impl(ctx):
    # kiln's root: the directory of its top-level BUILD file. The label is
    # resolved in the repository that holds this .bzl file, so this is the
    # main repository when kiln builds itself and @kiln (or whatever name
    # the downstream chose) otherwise.
    root = ctx.path(ctx.attr._kiln_root_build_file).dirname
    source = root
    for part in ctx.attr.subdirectory.split("/"):
        source = source.get_child(part)
    if not source.exists:
        fail("kiln_dependencies: %s does not exist in kiln's tree" % source)
    for child in source.readdir():
        ctx.symlink(child, child.basename)

_kiln_subdirectory = repository_rule(
    implementation = _kiln_subdirectory_impl,
    attrs = {
        "subdirectory": attr.string(mandatory = True),
        "_kiln_root_build_file": attr.label(default = Label("//:BUILD.bazel")),
    },
    # Reads the local tree: refetched when Bazel restarts, like
    # local_repository.
    local = True,
)

def kiln_dependencies():
    """Declares @system and the toolchain shims from kiln's third_party/."""
    existing = native.existing_rules()
    for name, subdirectory in _KILN_REPOSITORIES.items():
        if name not in existing:
            _kiln_subdirectory(name = name, subdirectory = subdirectory)
