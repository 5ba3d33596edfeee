"""kiln_wheel: the wheel, written by build_wheel.py into a directory (its
file name carries the version read from tools/version.h at build time, which
a rule cannot know when it declares its outputs)."""

def _kiln_wheel_impl(ctx):
    out = ctx.actions.declare_directory(ctx.attr.name)
    args = ctx.actions.args()
    args.add(ctx.file._builder)
    args.add(out.path)
    args.add(ctx.file.version_h)
    args.add(ctx.file.library)
    args.add_all(ctx.files.package)
    ctx.actions.run(
        executable = "/usr/bin/python3",
        arguments = [args],
        inputs = [ctx.file._builder, ctx.file.version_h, ctx.file.library] + ctx.files.package,
        outputs = [out],
        mnemonic = "KilnWheel",
        progress_message = "Writing the kiln wheel",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

kiln_wheel = rule(
    implementation = _kiln_wheel_impl,
    attrs = {
        "library": attr.label(allow_single_file = True, mandatory = True),
        "package": attr.label_list(allow_files = [".py"], mandatory = True),
        "version_h": attr.label(allow_single_file = True, mandatory = True),
        "_builder": attr.label(allow_single_file = True, default = ":build_wheel.py"),
    },
)
