#!/usr/bin/env python3
"""Writes src/pruning/fields.json: the fields of the built-in types apiserver-sim serves,
from kube-apiserver 1.36.2's OpenAPI v3 documents (`/openapi/v3/api/v1`,
`/openapi/v3/apis/apps/v1`, ... saved as JSON files given as arguments).

Each type maps each field to its shape: `""` a scalar (or anything: no fields known),
`"T"` a struct of type T, `"[T"` a list of T, `"{T"` a map of T (T empty: scalars).

    python3 scripts/builtin_fields.py oa_*.json > src/pruning/fields.json
"""
import json
import sys

ROOTS = {
    "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.Event",
    "io.k8s.api.apps.v1.Deployment", "io.k8s.api.apps.v1.ReplicaSet",
    "io.k8s.api.coordination.v1.Lease", "io.k8s.api.events.v1.Event",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
}

schemas = {}
for path in sys.argv[1:]:
    with open(path) as f:
        schemas.update(json.load(f)["components"]["schemas"])


def short(name):
    return name.removeprefix("io.k8s.").replace("apiextensions-apiserver.pkg.apis.", "")


def ref_of(s):
    if "$ref" in s:
        return s["$ref"].split("/")[-1]
    for sub in s.get("allOf", []):
        if "$ref" in sub:
            return sub["$ref"].split("/")[-1]
    return None


def shape(s, todo):
    ref = ref_of(s)
    if ref is not None:
        target = schemas[ref]
        if "properties" not in target:
            return ""
        todo.append(ref)
        return short(ref)
    if s.get("type") == "array":
        return "[" + shape(s.get("items", {}), todo)
    if s.get("type") == "object" and isinstance(s.get("additionalProperties"), dict):
        return "{" + shape(s["additionalProperties"], todo)
    return ""


out = {}
todo = sorted(ROOTS)
while todo:
    name = todo.pop()
    if short(name) in out:
        continue
    props = schemas[name].get("properties", {})
    out[short(name)] = {field: shape(s, todo) for field, s in sorted(props.items())}

print("{")
lines = [f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(out.items())]
print(",\n".join(lines))
print("}")
