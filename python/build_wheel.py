#!/usr/bin/env python3
"""Writes the kiln wheel (a zip, PEP 427) offline, for //python:wheel.

    build_wheel.py OUT_DIR VERSION_H LIBKILN_C PACKAGE_FILE...

The version is kiln's release number from tools/version.h (kKilnVersion).
The wheel holds the pure-Python package, libkiln_c.so next to it (where
kiln._capi looks first) and, in its metadata, the `torch_dynamo_backends`
entry point that lets torch.compile(backend="kiln") find the backend
without an import. The library has no Python ABI dependency, so the tag is
py3-none-<platform>.
"""
import base64
import hashlib
import os
import re
import sys
import zipfile

PLATFORM = "linux_x86_64"

METADATA = """Metadata-Version: 2.1
Name: kiln
Version: {version}
Summary: kiln tensor compiler: Python API and torch.compile backend
License: Apache-2.0
Requires-Python: >=3.9
"""

WHEEL = """Wheel-Version: 1.0
Generator: kiln build_wheel.py
Root-Is-Purelib: false
Tag: py3-none-{platform}
"""

ENTRY_POINTS = """[torch_dynamo_backends]
kiln = kiln.dynamo:kiln_backend
"""

# Fixed timestamps: the same inputs give the same bytes.
DATE = (2020, 1, 1, 0, 0, 0)


def version_of(version_h):
    with open(version_h, encoding="utf-8") as f:
        m = re.search(r'kKilnVersion\[\]\s*=\s*"([0-9A-Za-z.+-]+)"', f.read())
    if not m:
        raise SystemExit("%s: no kKilnVersion" % version_h)
    return m.group(1)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main(argv):
    if len(argv) < 5:
        raise SystemExit(__doc__)
    out_dir, version_h, lib = argv[1], argv[2], argv[3]
    package_files = argv[4:]
    version = version_of(version_h)
    dist_info = "kiln-%s.dist-info" % version
    entries = []
    for path in sorted(package_files, key=os.path.basename):
        with open(path, "rb") as f:
            entries.append(("kiln/" + os.path.basename(path), f.read(), 0o644))
    with open(lib, "rb") as f:
        entries.append(("kiln/libkiln_c.so", f.read(), 0o755))
    entries.append((dist_info + "/METADATA", METADATA.format(version=version).encode(), 0o644))
    entries.append((dist_info + "/WHEEL", WHEEL.format(platform=PLATFORM).encode(), 0o644))
    entries.append((dist_info + "/entry_points.txt", ENTRY_POINTS.encode(), 0o644))
    record = [record_line(name, data) for name, data, _ in entries]
    record.append(dist_info + "/RECORD,,")
    entries.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    os.makedirs(out_dir, exist_ok=True)
    wheel = os.path.join(out_dir, "kiln-%s-py3-none-%s.whl" % (version, PLATFORM))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, DATE)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
