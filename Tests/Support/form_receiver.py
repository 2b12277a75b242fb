"""A multipart/form-data receiver for the upload interop tests: Python's http.server taking POSTs,
each body parsed by python-multipart (form_parse.py) and its parts written as JSON to
DIRECTORY/<n>.json, answered 201 with an ETag. Usage: form_receiver.py PORT DIRECTORY"""
import hashlib
import http.server
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from form_parse import parse  # noqa: E402

DIRECTORY = sys.argv[2]


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "-1"))
        if length < 0 or self.headers.get("Transfer-Encoding"):
            self.send_error(411, "Content-Length required, no Transfer-Encoding")
            return
        body = self.rfile.read(length)
        parts = parse(body, self.headers["Content-Type"])
        Receiver.count += 1
        record = {"parts": parts, "length": length, "content_digest": self.headers.get("Content-Digest"),
                  "authorization": self.headers.get("Authorization")}
        with open(os.path.join(DIRECTORY, f"{Receiver.count}.json"), "w") as handle:
            json.dump(record, handle)
        answer = json.dumps({"stored": len(parts)}).encode()
        self.send_response(201)
        self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest()[:16] + '"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
