"""multipart/form-data parsed by python-multipart (the parser behind Starlette and FastAPI), an
implementation independent of the one that wrote the form. Python's `email` package is not used:
it rewrites line endings inside binary parts.

As a module: parse(body, content_type) -> list of parts. As a script: `form_parse.py FILE
CONTENT_TYPE` prints the parts of the body in FILE as JSON (text of text fields, sha256 and size
of every part)."""
import hashlib
import json
import sys

from python_multipart.multipart import MultipartParser, parse_options_header


def parse(body, content_type):
    _, options = parse_options_header(content_type)
    boundary = options[b"boundary"]
    parts = []
    state = {"field": b"", "value": b"", "headers": {}, "data": []}

    def on_part_begin():
        state["headers"], state["data"] = {}, []

    def on_header_field(data, start, end):
        state["field"] += data[start:end]

    def on_header_value(data, start, end):
        state["value"] += data[start:end]

    def on_header_end():
        state["headers"][state["field"].decode().lower()] = state["value"].decode()
        state["field"], state["value"] = b"", b""

    def on_part_data(data, start, end):
        state["data"].append(bytes(data[start:end]))

    def on_part_end():
        payload = b"".join(state["data"])
        _, disposition = parse_options_header(state["headers"].get("content-disposition", ""))
        name = disposition.get(b"name", b"").decode()
        file_name = disposition.get(b"filename")
        parts.append({
            "name": name,
            "fileName": file_name.decode() if file_name is not None else None,
            "contentType": state["headers"].get("content-type"),
            "text": None if file_name is not None else payload.decode(),
            "size": len(payload),
            "sha256": hashlib.sha256(payload).hexdigest(),
        })

    parser = MultipartParser(boundary, callbacks={
        "on_part_begin": on_part_begin, "on_header_field": on_header_field, "on_header_value": on_header_value,
        "on_header_end": on_header_end, "on_part_data": on_part_data, "on_part_end": on_part_end,
    })
    parser.write(body)
    parser.finalize()
    return parts


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as handle:
        print(json.dumps(parse(handle.read(), sys.argv[2])))
