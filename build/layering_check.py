#!/usr/bin/env python3
"""Checks kiln's layering: no target may depend on a higher layer.

The allowed edges are the package_group definitions `<layer>_users` in
build/BUILD.bazel; which layer a package belongs to is decided by its path
(LAYER_OF below). Every BUILD / BUILD.bazel file under the workspace root is
parsed (Starlark is close enough to Python for `ast`), and every label in
deps-like attributes that points into another layered package is checked.

Usage: layering_check.py [--root WORKSPACE_ROOT]
Exit status 1 and one line per violation when the layering is broken.
"""

import argparse
import ast
import os
import sys

# Attributes whose labels are dependency edges.
DEP_ATTRS = (
    "deps",
    "implementation_deps",
    "runtime_deps",
    "exports",
    "data",
    "srcs",
    "hdrs",
    "textual_hdrs",
    "tools",
    "exec_tools",
    "additional_linker_inputs",
    "plugins",
)

# Top-level directories whose packages are part of the layering.
LAYER_DIRS = {
    "support": "support",
    "ir": "ir",
    "frontend": "frontend",
    "passes": "passes",
    "runtime": "runtime",
    "lowering": "lowering",
    "codegen": "codegen",
    "wrapper": "wrapper",
    "devices": "devices",
    "driver": "driver",
    "lazy": "lazy",
    "tools": "tools",
    "testing": "testing",
    "benchmarks": "benchmarks",
    "sdk": "sdk",
    "python": "python",
}

# Directories never scanned (separate workspaces, shims, outputs).
SKIP_DIRS = {"third_party", "examples", ".git"}


def layer_of(pkg):
    """Layer name of a package path ("ir/passes"), or None if unlayered."""
    parts = pkg.split("/") if pkg else []
    if not parts:
        return None
    top = parts[0]
    if top == "backends":
        if len(parts) == 1:
            return "backends"  # RegisterBuiltinBackends over the implementations
        # backends/<impl>/...: each implementation is its own layer.
        return "backends_" + parts[1]
    return LAYER_DIRS.get(top)


def _strings(node):
    """String constants in a list/concat/select() expression."""
    out = []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        out.append(node.value)
    elif isinstance(node, (ast.List, ast.Tuple)):
        for e in node.elts:
            out.extend(_strings(e))
    elif isinstance(node, ast.BinOp):
        out.extend(_strings(node.left))
        out.extend(_strings(node.right))
    elif isinstance(node, ast.Dict):  # select({...}): values only
        for v in node.values:
            out.extend(_strings(v))
    elif isinstance(node, ast.Call):
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
        if name == "select" and node.args:
            out.extend(_strings(node.args[0]))
    return out


def label_package(label, current_pkg):
    """Package of a label in this workspace, or None for external/relative."""
    if label.startswith("@"):
        if label.startswith("@//") or label.startswith("@kiln//"):
            label = label[label.index("//"):]
        else:
            return None
    if not label.startswith("//"):
        return current_pkg  # ":foo" or "foo.cc"
    body = label[2:]
    return body.split(":", 1)[0]


def parse_build(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


def rule_calls(tree):
    """(rule name, kind, {attr: node}) for every top-level-ish call."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        kind = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "?")
        attrs = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        name_node = attrs.get("name")
        name = name_node.value if isinstance(name_node, ast.Constant) else "?"
        yield name, kind, attrs


def load_groups(build_bazel):
    """package_group name -> (packages, includes) from build/BUILD.bazel."""
    groups = {}
    for name, kind, attrs in rule_calls(parse_build(build_bazel)):
        if kind != "package_group":
            continue
        pkgs = _strings(attrs["packages"]) if "packages" in attrs else []
        incs = _strings(attrs["includes"]) if "includes" in attrs else []
        groups[name] = (pkgs, [i.lstrip(":").split(":")[-1] for i in incs])
    return groups


def group_specs(groups, name, seen=None):
    seen = seen if seen is not None else set()
    if name in seen:
        return []
    seen.add(name)
    pkgs, incs = groups[name]
    out = list(pkgs)
    for inc in incs:
        out.extend(group_specs(groups, inc, seen))
    return out


def spec_matches(spec, pkg):
    if spec in ("public", "//..."):
        return True
    if spec.endswith("/..."):
        base = spec[2:-4]
        return pkg == base or pkg.startswith(base + "/")
    return spec[2:] == pkg


def find_build_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        # Do not descend into outputs, hidden dirs, skipped dirs or nested
        # workspaces.
        keep = []
        for d in dirnames:
            sub = os.path.join(rel, d) if rel else d
            if d.startswith(".") or d.startswith("bazel-"):
                continue
            if not rel and d in SKIP_DIRS:
                continue
            if os.path.exists(os.path.join(root, sub, "WORKSPACE")):
                continue
            keep.append(d)
        dirnames[:] = sorted(keep)
        for fname in ("BUILD.bazel", "BUILD"):
            if fname in filenames:
                yield rel, os.path.join(dirpath, fname)
                break


def check(root):
    groups = load_groups(os.path.join(root, "build", "BUILD.bazel"))
    violations = []
    errors = []
    for pkg, path in find_build_files(root):
        src_layer = layer_of(pkg)
        if src_layer is None:
            continue
        try:
            tree = parse_build(path)
        except SyntaxError as e:
            errors.append("%s: cannot parse: %s" % (path, e))
            continue
        for name, kind, attrs in rule_calls(tree):
            for attr in DEP_ATTRS:
                if attr not in attrs:
                    continue
                for label in _strings(attrs[attr]):
                    dep_pkg = label_package(label, pkg)
                    if dep_pkg is None or dep_pkg == pkg:
                        continue
                    dep_layer = layer_of(dep_pkg)
                    if dep_layer is None or dep_layer == src_layer:
                        continue
                    group = dep_layer + "_users"
                    if group not in groups:
                        errors.append(
                            "//%s:%s depends on %s, but //build:%s does not "
                            "exist (new layer or device implementation? add "
                            "it to build/BUILD.bazel)" % (pkg, name, label, group))
                        continue
                    if not any(spec_matches(s, pkg) for s in group_specs(groups, group)):
                        violations.append(
                            "//%s:%s (layer %s) -> %s (layer %s): %s.%s is not "
                            "in //build:%s" % (pkg, name, src_layer, label,
                                               dep_layer, kind, attr, group))
    return violations, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", help="workspace root (default: from this file)")
    args = ap.parse_args()
    root = args.root
    if root is None:
        # Runfiles symlink -> source tree: <root>/build/layering_check.py.
        root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if not os.path.exists(os.path.join(root, "WORKSPACE")):
        print("layering_check: %s is not a workspace root" % root, file=sys.stderr)
        return 2
    violations, errors = check(root)
    for e in errors:
        print("ERROR: " + e)
    for v in violations:
        print("LAYERING VIOLATION: " + v)
    if violations or errors:
        print("layering_check: FAILED (%d violations, %d errors); the layers "
              "are documented in build/BUILD.bazel" % (len(violations), len(errors)))
        return 1
    print("layering_check: OK (%s)" % root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
