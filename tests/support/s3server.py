"""A local S3 endpoint for the storage tests: moto's server on a free loopback port, in a subprocess."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

BUCKET = "bucket"
# Credentials moto accepts and nothing real holds; no profile, config file or instance metadata is read.
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def s3_endpoint(log: Path):
    """Yields the endpoint URL of a fresh moto server holding an empty bucket; killed on exit."""
    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.2)
        client(url).create_bucket(Bucket=BUCKET)
        yield url
    finally:
        server.kill()
        server.wait()


def client(url: str):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=FAKE_AWS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_AWS["AWS_SECRET_ACCESS_KEY"],
        region_name=FAKE_AWS["AWS_DEFAULT_REGION"],
    )


def keys(url: str, prefix: str) -> dict[str, bytes]:
    """Every object below `prefix` (its key relative to it) with its bytes."""
    s3 = client(url)
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{prefix}/"):
        for obj in page.get("Contents", []):
            out[obj["Key"].removeprefix(f"{prefix}/")] = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
    return out
