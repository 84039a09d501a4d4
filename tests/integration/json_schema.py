#!/usr/bin/python3
"""Validates erode --json lines against man/erode-json.schema.json.

usage: json_schema.py SCHEMA FILE...   (each FILE: one JSON object a line)

The keywords of JSON Schema draft 2020-12 that the schema uses, checked
here so that the test needs nothing beyond python3; a keyword this file
does not know is an error, so the schema cannot lean on one unchecked.
Where python3-jsonschema is installed the schema itself is also checked
against the draft and every line validated by it too.  Prints one line
for each line that fails and exits 1 if any does.
"""
import json
import re
import sys

IGNORED = {"$schema", "$id", "title", "description", "$defs"}


def type_ok(v, t):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t == "integer":
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float))
    raise ValueError("unknown type %r" % t)


class Validator:
    def __init__(self, root):
        self.root = root

    def resolve(self, ref):
        if not ref.startswith("#/"):
            raise ValueError("only local references: %r" % ref)
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def errors(self, s, v, at="$"):
        """The first error of v against schema s, or None."""
        if s is True:
            return None
        if s is False:
            return "%s: not allowed" % at
        for key in s:
            if key not in IGNORED and key not in CHECKS and key not in ("then", "else"):
                raise ValueError("schema keyword %r not supported by %s" % (key, __file__))
        for key, check in CHECKS.items():
            if key in s:
                e = check(self, s, v, at)
                if e:
                    return e
        return None


def c_ref(V, s, v, at):
    return V.errors(V.resolve(s["$ref"]), v, at)


def c_type(V, s, v, at):
    ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
    return None if any(type_ok(v, t) for t in ts) else "%s: %r is not of type %s" % (at, v, s["type"])


def c_enum(V, s, v, at):
    return None if v in s["enum"] else "%s: %r not one of %r" % (at, v, s["enum"])


def c_const(V, s, v, at):
    c = s["const"]
    same = v == c and isinstance(v, bool) == isinstance(c, bool)
    return None if same else "%s: %r is not %r" % (at, v, c)


def c_min(V, s, v, at):
    if type_ok(v, "number") and v < s["minimum"]:
        return "%s: %r < %r" % (at, v, s["minimum"])
    return None


def c_minlength(V, s, v, at):
    if isinstance(v, str) and len(v) < s["minLength"]:
        return "%s: %r shorter than %d" % (at, v, s["minLength"])
    return None


def c_pattern(V, s, v, at):
    if isinstance(v, str) and not re.search(s["pattern"], v):
        return "%s: %r does not match %r" % (at, v, s["pattern"])
    return None


def c_required(V, s, v, at):
    if isinstance(v, dict):
        for k in s["required"]:
            if k not in v:
                return "%s: missing key %r" % (at, k)
    return None


def c_properties(V, s, v, at):
    if isinstance(v, dict):
        for k, sub in s["properties"].items():
            if k in v:
                e = V.errors(sub, v[k], "%s.%s" % (at, k))
                if e:
                    return e
    return None


def c_additional(V, s, v, at):
    if not isinstance(v, dict):
        return None
    known = s.get("properties", {})
    for k in v:
        if k not in known:
            if s["additionalProperties"] is False:
                return "%s: undocumented key %r" % (at, k)
            e = V.errors(s["additionalProperties"], v[k], "%s.%s" % (at, k))
            if e:
                return e
    return None


def c_names(V, s, v, at):
    if isinstance(v, dict):
        for k in v:
            e = V.errors(s["propertyNames"], k, "%s (key %r)" % (at, k))
            if e:
                return e
    return None


def c_items(V, s, v, at):
    if isinstance(v, list):
        start = len(s.get("prefixItems", []))
        for i, x in enumerate(v[start:], start):
            e = V.errors(s["items"], x, "%s[%d]" % (at, i))
            if e:
                return e
    return None


def c_prefix(V, s, v, at):
    if isinstance(v, list):
        for i, (sub, x) in enumerate(zip(s["prefixItems"], v)):
            e = V.errors(sub, x, "%s[%d]" % (at, i))
            if e:
                return e
    return None


def c_minitems(V, s, v, at):
    return "%s: fewer than %d items" % (at, s["minItems"]) \
        if isinstance(v, list) and len(v) < s["minItems"] else None


def c_maxitems(V, s, v, at):
    return "%s: more than %d items" % (at, s["maxItems"]) \
        if isinstance(v, list) and len(v) > s["maxItems"] else None


def c_oneof(V, s, v, at):
    errs = [V.errors(sub, v, at) for sub in s["oneOf"]]
    ok = sum(e is None for e in errs)
    if ok == 1:
        return None
    if ok == 0:
        return "%s: matches none of oneOf: %s" % (at, "; ".join(errs))
    return "%s: matches %d of oneOf, not exactly one" % (at, ok)


def c_not(V, s, v, at):
    return "%s: matches a schema it must not" % at if V.errors(s["not"], v, at) is None else None


def c_if(V, s, v, at):
    branch = "then" if V.errors(s["if"], v, at) is None else "else"
    return V.errors(s[branch], v, at) if branch in s else None


CHECKS = {
    "$ref": c_ref, "type": c_type, "enum": c_enum, "const": c_const, "minimum": c_min,
    "minLength": c_minlength, "pattern": c_pattern, "required": c_required,
    "properties": c_properties, "additionalProperties": c_additional,
    "propertyNames": c_names, "prefixItems": c_prefix, "items": c_items,
    "minItems": c_minitems, "maxItems": c_maxitems, "oneOf": c_oneof, "not": c_not,
    "if": c_if,
}


def main():
    schema = json.load(open(sys.argv[1]))
    V = Validator(schema)
    try:
        import jsonschema
        jsonschema.Draft202012Validator.check_schema(schema)
        other = jsonschema.Draft202012Validator(schema)
    except ImportError:
        other = None
    bad = n = 0
    for path in sys.argv[2:]:
        for i, line in enumerate(open(path), 1):
            if not line.strip():
                continue
            n += 1
            try:
                v = json.loads(line)
            except ValueError as e:
                print("%s:%d: not JSON: %s" % (path, i, e))
                bad += 1
                continue
            e = V.errors(schema, v)
            if e is None and other is not None:
                es = list(other.iter_errors(v))
                e = "jsonschema: %s" % es[0].message if es else None
            if e:
                print("%s:%d: %s" % (path, i, e))
                bad += 1
    if n == 0:
        print("no line to validate")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
