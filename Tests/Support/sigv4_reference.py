"""botocore's SigV4 signature for requests given as JSON (the reference SigV4SignerTests compares
batchfetch's signer with, independent of it):

  sigv4_reference.py '[{"method", "endpoint", "key", "query", "headers", "access_key", "secret",
                        "token", "region", "time"}, …]'

`key` is the object key as stored (botocore encodes it as its S3 client does), `query` a list
of [name, value] pairs, `time` YYYYMMDDTHHMMSSZ. Prints one Authorization header per line.
"""
import datetime
import json
import sys
from unittest import mock
from urllib.parse import quote

import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode


def sign(case):
    url = case["endpoint"].rstrip("/") + "/" + percent_encode(case["key"], safe="/~")
    if case.get("query"):
        url += "?" + "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in case["query"])
    request = AWSRequest(method=case["method"], url=url, headers=dict(case.get("headers", {})), data=b"")
    credentials = Credentials(case["access_key"], case["secret"], case.get("token"))
    at = datetime.datetime.strptime(case["time"], "%Y%m%dT%H%M%SZ")
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=at):
        S3SigV4Auth(credentials, "s3", case["region"]).add_auth(request)
    return request.headers["Authorization"]


if __name__ == "__main__":
    for case in json.loads(sys.argv[1]):
        print(sign(case))
