"""`python3 -m http.server` (SimpleHTTPRequestHandler: no Range, Last-Modified only, HTTP/1.0),
with its body writes paced to RATE bytes per second so a test can kill a client midway, and no
DNS lookup of its own name at start. Nothing else differs from the stock server.

usage: slow_http_server.py PORT ROOT RATE
"""
import functools
import http.server
import sys
import time

port, root, rate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])


class Handler(http.server.SimpleHTTPRequestHandler):
    def copyfile(self, source, outputfile):
        while True:
            chunk = source.read(64 * 1024)
            if not chunk:
                break
            outputfile.write(chunk)
            time.sleep(len(chunk) / rate)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        # The stock server_bind asks DNS for the host's FQDN, which hangs for seconds without a
        # resolver; the name is only used in CGI environments.
        http.server.socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


server = Server(("127.0.0.1", port), functools.partial(Handler, directory=root))
server.serve_forever()
