"""Validation of real outputs against the JSON Schemas shipped under
share/schemas/ (share/docs/registry.md, "JSON Schemas"). Used by the registry
and e2e tests; needs python3-jsonschema (Draft 2020-12)."""
import json
import os
import pathlib

import jsonschema

SCHEMA_DIR = pathlib.Path(os.environ.get("GE_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[1]) \
    / "share" / "schemas"


def _store():
    """Every schema by its $id, so that references between them resolve
    without any download."""
    store = {}
    for f in SCHEMA_DIR.glob("*.schema.json"):
        s = json.loads(f.read_text())
        store[s["$id"]] = s
    return store


def validator(name):
    """A Draft 2020-12 validator for share/schemas/<name>.schema.json."""
    store = _store()
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def validate(instance, name):
    """Raises jsonschema.ValidationError naming the first violation."""
    validator(name).validate(instance)


def errors(instance, name):
    """The messages of every violation (empty when valid)."""
    return [e.message for e in validator(name).iter_errors(instance)]
