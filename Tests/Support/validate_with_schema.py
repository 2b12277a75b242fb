#!/usr/bin/env python3
"""Validates YAML manifests against a JSON Schema with an implementation independent of batchfetch.

usage: validate_with_schema.py --expect-valid|--expect-invalid SCHEMA PATH...
PATH may be a directory (all *.yaml in it). Exits 1 if any file does not meet the expectation.
"""
import json
import pathlib
import sys

import jsonschema
import yaml


def main() -> int:
    mode, schema_path, *paths = sys.argv[1:]
    schema = json.loads(pathlib.Path(schema_path).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = []
    for path in map(pathlib.Path, paths):
        files.extend(sorted(path.glob("*.yaml")) if path.is_dir() else [path])
    unexpected = 0
    valid = 0
    for file in files:
        errors = sorted(validator.iter_errors(yaml.safe_load(file.read_text())), key=str)
        if not errors:
            valid += 1
        if mode == "--expect-valid" and errors:
            unexpected += 1
            print(f"{file}: INVALID: {errors[0].message} at {list(errors[0].absolute_path)}")
        elif mode == "--expect-invalid" and not errors:
            unexpected += 1
            print(f"{file}: accepted by the schema but expected to be rejected")
    print(f"{valid} of {len(files)} valid")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
