"""The S3 side of the upload interop tests, through moto's server and boto3 (independent of
batchfetch):

  s3_helper.py serve PORT                      runs moto's S3 server on 127.0.0.1:PORT
  s3_helper.py presign ENDPOINT BUCKET KEY     makes the bucket, prints a presigned PUT URL
  s3_helper.py object ENDPOINT BUCKET KEY      prints the stored object: size, sha256, ETag
"""
import hashlib
import json
import os
import sys

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def client(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


def main(argv):
    command = argv[1]
    if command == "serve":
        from moto.server import main as moto_main
        moto_main(["-H", "127.0.0.1", "-p", argv[2]])
    elif command == "presign":
        s3 = client(argv[2])
        try:
            s3.create_bucket(Bucket=argv[3])
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        print(s3.generate_presigned_url("put_object", Params={"Bucket": argv[3], "Key": argv[4]}, ExpiresIn=3600))
    elif command == "object":
        s3 = client(argv[2])
        answer = s3.get_object(Bucket=argv[3], Key=argv[4])
        body = answer["Body"].read()
        print(json.dumps({"size": len(body), "sha256": hashlib.sha256(body).hexdigest(), "etag": answer["ETag"]}))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
