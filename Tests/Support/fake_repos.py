#!/usr/bin/env python3
"""Fake repository APIs on loopback for the sources tests: the Hugging Face Hub, Zenodo,
figshare and the DOI handle API, answering as their published documentation describes.

Usage: fake_repos.py PORT FIXTURE.json

The fixture names the repositories and their files (text content); the fake computes sizes and
digests as the real services publish them. Every request is logged (path, Host, Authorization)
and the log is served at /_log, so a test can assert where a token went.

Documentation each answer follows:
- Hub revision: GET /api/{models|datasets|spaces}/{repo_id}/revision/{revision} returns the repo's
  info with "sha", the commit the revision points to (huggingface_hub HfApi.repo_info / model_info,
  https://huggingface.co/docs/huggingface_hub/package_reference/hf_api#huggingface_hub.HfApi.model_info);
  an unknown revision is 404 with X-Error-Code: RevisionNotFound.
- Hub tree: GET /api/{type}s/{repo_id}/tree/{revision}[/{path}]?recursive=true returns a JSON array
  of {"type": "file"|"directory", "oid", "size", "path", "lfs"?: {"oid": sha256, "size",
  "pointerSize"}}, paginated with an RFC 8288 Link header rel="next" (HfApi.list_repo_tree,
  https://huggingface.co/docs/huggingface_hub/package_reference/hf_api#huggingface_hub.HfApi.list_repo_tree;
  huggingface_hub.utils._pagination.paginate follows response.links["next"]). "oid" of a file is
  its git blob id; for LFS files lfs.oid is the content's sha256.
- Hub resolve: GET /{""|datasets/|spaces/}{repo_id}/resolve/{revision}/{path}: a regular file is
  served, an LFS file redirects (302) to a CDN on another host
  (https://huggingface.co/docs/hub/api#get-apimodelsrepoidresolverevisionfilename).
- Zenodo: GET /api/records/{id} returns {"id", "doi", "revision", "files": [{"id", "key", "size",
  "checksum": "md5:…", "links": {"self": …/api/records/{id}/files/{key}/content}}]}
  (https://developers.zenodo.org/#records, InvenioRDM records API); it rate-limits with 429 and
  Retry-After (https://developers.zenodo.org/#rate-limiting).
- figshare: GET /v2/articles/{id} returns {"id", "version", "files": [{"id", "name", "size",
  "computed_md5", "download_url"}]} (https://docs.figshare.com/#public_article).
- DOI: GET /api/handles/{doi} returns {"responseCode": 1, "handle", "values": [{"index", "type":
  "URL", "data": {"format": "string", "value": LANDING}}]} (https://www.doi.org/the-identifier/resources/factsheets/doi-resolution-documentation,
  "REST API"); an unknown handle is 404 with responseCode 100.
"""
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit, parse_qs

PORT = int(sys.argv[1])
FIXTURE = json.load(open(sys.argv[2]))
PAGE = FIXTURE.get("page_size", 100)
LOG = []
LOCK = threading.Lock()
FAULTS = dict(FIXTURE.get("faults", {}))
TREES = {}  # (repo, commit, directory) -> tree entries, computed once


def content(spec):
    if "repeat" in spec:
        return (spec["content"] * spec["repeat"]).encode()
    return spec["content"].encode()


def blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body leave in one write, without Nagle: otherwise every answer on a kept-alive
    # connection waits 40 ms for the client's delayed ACK, and the fake, not the client, sets
    # the pace of a paginated listing.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def fault(self, name):
        with LOCK:
            left = FAULTS.get(name, 0)
            if left:
                FAULTS[name] = left - 1
            return left > 0

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        path = unquote(url.path)
        with LOCK:
            LOG.append({"path": path, "host": self.headers.get("Host", ""),
                        "authorization": self.headers.get("Authorization")})
        if path == "/_log":
            with LOCK:
                return self.send(200, list(LOG))
        parts = path.strip("/").split("/")
        base = "http://127.0.0.1:%d" % PORT
        # --- Hub ---
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[1] in ("models", "datasets", "spaces") and parts[4] in ("revision", "tree"):
            repo_key = "/".join(parts[1:4])
            repo = FIXTURE.get("hf", {}).get(repo_key)
            if repo is None:
                return self.send(404, {"error": "Repository Not Found"}, headers={"X-Error-Code": "RepoNotFound"})
            if parts[4] == "revision":
                revision = "/".join(parts[5:])
                if self.fault("hub_revision_429"):
                    return self.send(429, {"error": "rate limited"}, headers={"Retry-After": "0"})
                sha = repo["revisions"].get(revision) or (revision if revision in repo["commits"] else None)
                if sha is None:
                    return self.send(404, {"error": "Revision Not Found"}, headers={"X-Error-Code": "RevisionNotFound"})
                return self.send(200, {"id": "/".join(parts[2:4]), "sha": sha})
            sha = parts[5]
            under = "/".join(parts[6:])
            files = repo["commits"].get(sha)
            if files is None:
                return self.send(404, {"error": "Revision Not Found"})
            cached = TREES.get((repo_key, sha, under))
            if cached is not None:
                entries = cached
                files = []
            else:
                entries = []
            directories = set()
            for spec in files:
                p = spec["path"]
                if under and not (p == under or p.startswith(under + "/")):
                    continue
                data = content(spec)
                entry = {"type": "file", "oid": blob_id(data), "size": len(data), "path": p}
                if spec.get("lfs"):
                    entry["lfs"] = {"oid": spec.get("lfs_oid", hashlib.sha256(data).hexdigest()),
                                    "size": len(data), "pointerSize": 134}
                    entry["oid"] = hashlib.sha1(p.encode()).hexdigest()  # the pointer's blob, not the content's
                elif "oid" in spec:
                    entry["oid"] = spec["oid"]
                entries.append(entry)
                segments = p.split("/")[:-1]
                for i in range(1, len(segments) + 1):
                    directories.add("/".join(segments[:i]))
            if cached is None:
                entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(directories)]
                TREES[(repo_key, sha, under)] = entries
            cursor = int(parse_qs(url.query).get("cursor", ["0"])[0])
            page = entries[cursor:cursor + PAGE]
            headers = {}
            if cursor + PAGE < len(entries):
                headers["Link"] = '<%s%s?recursive=true&cursor=%d>; rel="next"' % (base, quote(url.path), cursor + PAGE)
            return self.send(200, page, headers=headers)
        if "resolve" in parts:
            i = parts.index("resolve")
            kind = parts[0] if parts[0] in ("datasets", "spaces") else "models"
            org_name = "/".join(parts[i - 2:i])
            repo = FIXTURE.get("hf", {}).get(kind + "/" + org_name)
            sha, file_path = parts[i + 1], "/".join(parts[i + 2:])
            if repo is None or sha not in repo["commits"]:
                return self.send(404, {"error": "Entry not found"})
            for spec in repo["commits"][sha]:
                if spec["path"] == file_path:
                    data = content(spec)
                    if spec.get("lfs"):
                        cdn = "http://localhost:%d/cdn/%s" % (PORT, hashlib.sha256(data).hexdigest())
                        return self.send(302, b"", headers={"Location": cdn})
                    return self.send(200, spec.get("served", spec["content"]).encode() if "served" in spec else data,
                                     content_type="application/octet-stream")
            return self.send(404, {"error": "Entry not found"})
        if parts[:1] == ["cdn"] and len(parts) == 2:
            if parts[1] in CDN:
                return self.send(200, CDN[parts[1]], content_type="application/octet-stream")
            return self.send(404, b"not found", content_type="text/plain")
        # --- Zenodo ---
        if parts[:2] == ["api", "records"] and len(parts) >= 3:
            record = FIXTURE.get("zenodo", {}).get(parts[2])
            if self.fault("zenodo_429"):
                return self.send(429, {"status": 429, "message": "Too many requests"}, headers={"Retry-After": "0"})
            if record is None:
                return self.send(404, {"status": 404, "message": "The persistent identifier does not exist."})
            if len(parts) == 3:
                files = []
                for n, spec in enumerate(record["files"]):
                    data = content(spec)
                    files.append({"id": "f%d" % n, "key": spec["key"], "size": len(data),
                                  "checksum": "md5:" + spec.get("md5", hashlib.md5(data).hexdigest()),
                                  "links": {"self": "%s/api/records/%s/files/%s/content" % (base, parts[2], quote(spec["key"]))}})
                return self.send(200, {"id": int(parts[2]), "doi": "10.5281/zenodo.%s" % parts[2],
                                       "revision": record.get("revision", 1), "files": files})
            if len(parts) >= 6 and parts[3] == "files" and parts[-1] == "content":
                key = "/".join(parts[4:-1])
                for spec in record["files"]:
                    if spec["key"] == key:
                        return self.send(200, spec.get("served", spec["content"]).encode() if "served" in spec else content(spec),
                                         content_type=spec.get("content_type", "application/octet-stream"))
            return self.send(404, {"status": 404})
        # --- figshare ---
        if parts[:2] == ["v2", "articles"] and len(parts) == 3:
            article = FIXTURE.get("figshare", {}).get(parts[2])
            if article is None:
                return self.send(404, {"message": "Entity not found: article", "code": "EntityNotFound"})
            files = []
            for n, spec in enumerate(article["files"]):
                data = content(spec)
                files.append({"id": n, "name": spec["name"], "size": len(data), "computed_md5": hashlib.md5(data).hexdigest(),
                              "download_url": "%s/ndownloader/files/%s/%d" % (base, parts[2], n), "is_link_only": False})
            return self.send(200, {"id": int(parts[2]), "version": article.get("version", 1), "files": files})
        if parts[:2] == ["ndownloader", "files"] and len(parts) == 4:
            article = FIXTURE.get("figshare", {}).get(parts[2])
            if article is not None and int(parts[3]) < len(article["files"]):
                return self.send(200, content(article["files"][int(parts[3])]), content_type="application/octet-stream")
            return self.send(404, b"", content_type="text/plain")
        # --- DOI handles ---
        if parts[:2] == ["api", "handles"]:
            doi = "/".join(parts[2:])
            landing = FIXTURE.get("doi", {}).get(doi)
            if landing is None:
                return self.send(404, {"responseCode": 100, "handle": doi})
            return self.send(200, {"responseCode": 1, "handle": doi, "values": [
                {"index": 100, "type": "HS_ADMIN", "data": {"format": "admin", "value": {}}},
                {"index": 1, "type": "URL", "data": {"format": "string", "value": landing.replace("{port}", str(PORT))}}]})
        # --- a file host's quota page ---
        if parts[:1] == ["quota"]:
            return self.send(200, b"\xef\xbb\xbf  <!DOCTYPE html><html><head><title>Quota exceeded</title></head><body>Too many users</body></html>",
                             content_type=FIXTURE.get("quota_type", "application/octet-stream"))
        return self.send(404, b"no such thing", content_type="text/plain")


# What the CDN serves: every LFS file of every repository, by the sha256 of its content.
CDN = {hashlib.sha256(content(spec)).hexdigest(): content(spec)
       for repo in FIXTURE.get("hf", {}).values() for files in repo["commits"].values() for spec in files if spec.get("lfs")}

ThreadingHTTPServer.allow_reuse_address = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
