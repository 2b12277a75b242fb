"""A verifying proxy in front of an S3 server (moto without its own checks), for the object
store tests where moto's signature checks cannot judge (prefixed listings, keys with `+` or
non-ASCII characters):

  sigv4_proxy.py PORT UPSTREAM ACCESS_KEY SECRET [HOLD_BYTES GATE_FILE [uploads]]

Every request must carry an `AWS4-HMAC-SHA256` Authorization by ACCESS_KEY whose signature
botocore computes the same from the request as received (its signed headers, its
x-amz-content-sha256, its x-amz-date); else 403 SignatureDoesNotMatch and nothing is forwarded.
Accepted requests go to UPSTREAM and the answer streams back as it came. The tests store their
objects through this proxy with boto3, so it is checked against boto3's own signatures too.

With HOLD_BYTES and GATE_FILE, a GET's body stops after HOLD_BYTES until GATE_FILE exists: a
test holds a download there, at a point it chose, to kill the client mid-body. With `uploads`,
request bodies are counted instead, across requests: the one that would pass HOLD_BYTES is not
forwarded until GATE_FILE exists (GATE_FILE.held appears when that begins), so the parts before
it are stored and the rest are not.
"""
import threading
import os
import time
import http.client
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

PORT, UPSTREAM, ACCESS, SECRET = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
HOLD, GATE = (int(sys.argv[5]), sys.argv[6]) if len(sys.argv) > 6 else (None, None)
HOLD_UPLOADS = len(sys.argv) > 7 and sys.argv[7] == "uploads"
received = {"bytes": 0, "forwarding": 0}
counting = threading.Condition()


def hold_upload(length):
    """Waits for the gate when this request body would take the uploads past HOLD."""
    with counting:
        passing = received["bytes"] < HOLD <= received["bytes"] + length
        received["bytes"] += length
        over = received["bytes"] > HOLD
        if passing:
            # The parts before this one are stored before anyone is told it holds.
            counting.wait_for(lambda: received["forwarding"] == 0)
    if passing or over:
        open(GATE + ".held", "w").close()
        while not os.path.exists(GATE):
            time.sleep(0.05)
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


def problem(headers, method, raw_path):
    """Why the request's signature is not valid, or None."""
    given = headers.get("Authorization", "")
    if not given.startswith("AWS4-HMAC-SHA256 "):
        return "unsigned"
    fields = dict(part.strip().split("=", 1) for part in given[len("AWS4-HMAC-SHA256 "):].split(","))
    key, day, region, service, _ = fields["Credential"].split("/")
    if key != ACCESS:
        return "unknown key"
    signed = fields["SignedHeaders"].split(";")
    names = {name.lower(): name for name in headers.keys()}
    if any(name != "host" and name not in names for name in signed):
        return "a signed header is missing"
    request = AWSRequest(method=method, url="http://" + headers["Host"] + raw_path,
                         headers={names[name]: headers[names[name]] for name in signed if name != "host"})
    request.context["timestamp"] = headers.get("x-amz-date", "")
    if not request.context["timestamp"].startswith(day):
        return "date and scope differ"
    auth = S3SigV4Auth(Credentials(ACCESS, SECRET), service, region)
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    return None if expected == fields["Signature"] else "signature mismatch"


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        why = problem(self.headers, self.command, self.path)
        if why:
            message = f"<Error><Code>SignatureDoesNotMatch</Code><Message>{why}</Message></Error>".encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        if HOLD_UPLOADS and length:
            hold_upload(length)
        target = urllib.parse.urlsplit(UPSTREAM)
        upstream = http.client.HTTPConnection(target.hostname, target.port)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        with counting:
            received["forwarding"] += 1
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read() if HOLD_UPLOADS else None
        finally:
            with counting:
                received["forwarding"] -= 1
                counting.notify_all()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in HOP:
                self.send_header(name, value)
        self.end_headers()
        if data is not None:
            self.wfile.write(data)
        elif self.command != "HEAD":
            sent = 0
            while chunk := answer.read(1 << 16):
                if HOLD is not None and not HOLD_UPLOADS and sent < HOLD <= sent + len(chunk):
                    self.wfile.write(chunk[:HOLD - sent])
                    self.wfile.flush()
                    while not os.path.exists(GATE):
                        time.sleep(0.05)
                    self.wfile.write(chunk[HOLD - sent:])
                else:
                    self.wfile.write(chunk)
                sent += len(chunk)
        upstream.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_one


ThreadingHTTPServer(("127.0.0.1", PORT), Proxy).serve_forever()
