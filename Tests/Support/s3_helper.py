"""The S3 side of the upload interop tests, through moto's server and boto3 (independent of
batchfetch):

  s3_helper.py serve PORT                      runs moto's S3 server on 127.0.0.1:PORT
  s3_helper.py serve-signed PORT               the same, checking every signature after the
                                               first three requests (the user made by `user`)
  s3_helper.py user ENDPOINT                   makes an IAM user allowed s3:*, prints its keys
  s3_helper.py put ENDPOINT ID SECRET BUCKET KEY FILE   makes the bucket if needed, stores FILE
  s3_helper.py put-many ENDPOINT ID SECRET BUCKET PREFIX COUNT   stores COUNT small objects
  s3_helper.py put-random ENDPOINT ID SECRET BUCKET KEY SIZE      stores SIZE random bytes, prints sha256
  s3_helper.py delete ENDPOINT ID SECRET BUCKET KEY               removes an object
  s3_helper.py presign ENDPOINT BUCKET KEY     makes the bucket, prints a presigned PUT URL
  s3_helper.py object ENDPOINT BUCKET KEY [ID SECRET]   prints the stored object: size, sha256, ETag
"""
import hashlib
import json
import os
import sys

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def client(endpoint, service="s3", key=None, secret=None, retries=True):
    import boto3
    from botocore.config import Config
    credentials = {"aws_access_key_id": key, "aws_secret_access_key": secret} if key else {}
    extra = {} if retries else {"retries": {"total_max_attempts": 1}, "read_timeout": 300}
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, **extra), **credentials)


def ensure_bucket(s3, name):
    try:
        s3.create_bucket(Bucket=name)
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass


def main(argv):
    command = argv[1]
    if command == "serve":
        from moto.server import main as moto_main
        moto_main(["-H", "127.0.0.1", "-p", argv[2]])
    elif command == "serve-signed":
        # moto checks signatures once this many requests went unchecked: those `user` makes.
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
        from moto.server import main as moto_main
        moto_main(["-H", "127.0.0.1", "-p", argv[2]])
    elif command == "user":
        # No silent retry: moto lets exactly three requests through unsigned.
        iam = client(argv[2], "iam", retries=False)
        iam.create_user(UserName="batchfetch")
        key = iam.create_access_key(UserName="batchfetch")["AccessKey"]
        iam.put_user_policy(UserName="batchfetch", PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        print(json.dumps({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}))
    elif command == "put":
        s3 = client(argv[2], key=argv[3], secret=argv[4])
        ensure_bucket(s3, argv[5])
        with open(argv[7], "rb") as body:
            answer = s3.put_object(Bucket=argv[5], Key=argv[6], Body=body, ChecksumAlgorithm="SHA256")
        print(json.dumps({"etag": answer["ETag"], "sha256": answer.get("ChecksumSHA256")}))
    elif command == "put-many":
        s3 = client(argv[2], key=argv[3], secret=argv[4])
        ensure_bucket(s3, argv[5])
        for index in range(int(argv[7])):
            s3.put_object(Bucket=argv[5], Key=f"{argv[6]}{index:05d}.txt", Body=f"object {index}\n".encode())
    elif command == "put-random":
        s3 = client(argv[2], key=argv[3], secret=argv[4])
        ensure_bucket(s3, argv[5])
        data = os.urandom(int(argv[7]))
        s3.put_object(Bucket=argv[5], Key=argv[6], Body=data)
        print(hashlib.sha256(data).hexdigest())
    elif command == "delete":
        client(argv[2], key=argv[3], secret=argv[4]).delete_object(Bucket=argv[5], Key=argv[6])
    elif command == "presign":
        s3 = client(argv[2])
        try:
            s3.create_bucket(Bucket=argv[3])
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        print(s3.generate_presigned_url("put_object", Params={"Bucket": argv[3], "Key": argv[4]}, ExpiresIn=3600))
    elif command == "object":
        s3 = client(argv[2], key=argv[5], secret=argv[6]) if len(argv) > 6 else client(argv[2])
        answer = s3.get_object(Bucket=argv[3], Key=argv[4])
        body = answer["Body"].read()
        print(json.dumps({"size": len(body), "sha256": hashlib.sha256(body).hexdigest(), "etag": answer["ETag"]}))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
