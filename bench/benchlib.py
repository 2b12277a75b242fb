"""What the benchmarks share: free loopback ports and an nginx started on one."""

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int) -> None:
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def nginx_binary() -> str:
    for path in ["/usr/sbin/nginx", "/usr/bin/nginx", shutil.which("nginx") or ""]:
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("nginx not found (apt-get install nginx-light)")


def start_nginx(root: pathlib.Path, prefix: pathlib.Path, http_options: str = "",
                locations: str = "", listen: str = "") -> tuple[subprocess.Popen, int]:
    """nginx serving `root` on a free port, its files under `prefix`; `http_options` go in the
    http block, `locations` in the server block, `listen` after the port (e.g. ` ssl http2`)."""
    port = free_port()
    (prefix / "tmp").mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(f"""
daemon off; master_process off; worker_processes 1;
error_log {prefix}/error.log warn; pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off; sendfile on; {http_options}
  client_body_temp_path {prefix}/tmp/body; proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fcgi; uwsgi_temp_path {prefix}/tmp/uwsgi; scgi_temp_path {prefix}/tmp/scgi;
  server {{ listen 127.0.0.1:{port}{listen}; root {root}; {locations} }}
}}
""")
    process = subprocess.Popen([nginx_binary(), "-p", str(prefix), "-c", str(conf)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port)
    return process, port


def timed(command: list, check: bool = True) -> tuple:
    """Wall seconds and peak RSS (MiB) of one run of `command` (stdout discarded), exiting on
    failure unless `check` is False. Peak RSS comes from GNU time (`/usr/bin/time`): `wait4` from the benchmark would also
    count the pages of the Python parent that the child had before exec."""
    start = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if check and result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {result.stderr.decode()[:2000]}")
    return wall, int(result.stderr.decode().strip().splitlines()[-1]) / 1024
