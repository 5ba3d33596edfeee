#!/usr/bin/python3
"""Checks JSON documents against a JSON Schema (the 2020-12 keywords that
docs/cli_json.schema.json uses): type, const, enum, properties, required,
additionalProperties, items, minimum, oneOf and local $ref ("#/$defs/x").
Debian has no JSON Schema validator installed here, and this subset is all
kiln's schema needs; an unknown keyword is an error, so the schema cannot
quietly use one that goes unchecked.

Usage: json_schema_check.py SCHEMA.json DOC.json...
Prints one line per problem and exits 1 when there is any.
"""
import json
import sys

ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError(f"only local $refs are supported: {ref}")
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def errors(root, schema, value, path):
    """The problems of `value` against `schema`, as 'path: message' strings."""
    if schema is True:
        return []
    if schema is False:
        return [f"{path}: not allowed"]
    found = []
    for key in schema:
        if key not in ANNOTATIONS and key not in {
                "$ref", "type", "const", "enum", "properties", "required",
                "additionalProperties", "items", "minimum", "oneOf"}:
            raise ValueError(f"schema keyword '{key}' is not supported by this checker")
    if "$ref" in schema:
        found += errors(root, resolve(root, schema["$ref"]), value, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            return found + [f"{path}: {json.dumps(value)[:60]} is not of type {'/'.join(types)}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{path}: {json.dumps(value)[:60]} is not {json.dumps(schema['const'])}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {json.dumps(value)[:60]} is not one of {schema['enum']}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        found.append(f"{path}: {value} is below {schema['minimum']}")
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not errors(root, s, value, path)]
        if len(matches) != 1:
            found.append(f"{path}: matches {len(matches)} of the oneOf alternatives, not 1")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"{path}: missing required '{name}'")
        for name, item in value.items():
            if name in properties:
                found += errors(root, properties[name], item, f"{path}.{name}")
            elif "additionalProperties" in schema:
                found += errors(root, schema["additionalProperties"], item, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(root, schema["items"], item, f"{path}[{i}]")
    return found


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    failed = False
    for name in argv[2:]:
        with open(name) as f:
            document = json.load(f)
        for problem in errors(schema, schema, document, "$"):
            print(f"{name}: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
