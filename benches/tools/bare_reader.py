#!/usr/bin/env python3
"""Times a client that only reads: I1's streaming list and LIST, against a real server.

The informer's sync (bench-report I1sync / I1listsync) is compared with this reader to split
its time into the server's part and the client's. For each request: connect, request ->
response headers, headers -> first byte, headers -> end (for the streaming list: the
initial-events-end bookmark; for LIST: the whole body). HTTP/1.1, standard library only.

    python3 benches/tools/bare_reader.py ENVTEST_DIR [ROUNDS]

ENVTEST_DIR is the directory given to ../shared/envtest/start-control-plane.sh (its kubeconfig,
token and ca.crt are read from there); I1's 10,000 ConfigMaps must exist (run I1sync once).
"""
import http.client
import re
import ssl
import statistics
import sys
import time

NAMESPACE = "clientgo-bench-i1"
BOOKMARK = b"initial-events-end"


def main():
    directory = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    server = re.search(r"server:\s*https://([^:\s]+):(\d+)", open(f"{directory}/kubeconfig").read())
    host, port = server.group(1), int(server.group(2))
    token = open(f"{directory}/token").read().strip()
    context = ssl.create_default_context(cafile=f"{directory}/ca.crt")
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    requests = {
        "streaming list": (
            f"{base}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            "&allowWatchBookmarks=true&timeoutSeconds=60",
            True,
        ),
        "LIST": (f"{base}?limit=10000", False),
    }
    results = {name: [] for name in requests}
    for _ in range(rounds):
        for name, (path, stream) in requests.items():
            results[name].append(timed(host, port, context, token, path, stream))
    for name, runs in results.items():
        connect, headers, first, end, size = (statistics.median(c) for c in zip(*runs))
        print(
            f"{name}: connect {connect * 1e3:.1f} ms, request -> headers {headers * 1e3:.1f} ms, "
            f"headers -> first byte {first * 1e3:.1f} ms, headers -> end {end * 1e3:.1f} ms, "
            f"{size / 1e6:.2f} MB (medians of {rounds})"
        )


def timed(host, port, context, token, path, stream):
    start = time.perf_counter()
    connection = http.client.HTTPSConnection(host, port, context=context)
    connection.connect()
    connected = time.perf_counter()
    connection.request(
        "GET", path, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}
    )
    response = connection.getresponse()
    headers = time.perf_counter()
    first, size, tail = None, 0, b""
    while True:
        chunk = response.read1(1 << 16)
        if not chunk:
            break
        first = first or time.perf_counter()
        size += len(chunk)
        if stream and BOOKMARK in tail + chunk:
            break
        tail = chunk[-len(BOOKMARK):]
    end = time.perf_counter()
    connection.close()
    return connected - start, headers - connected, (first or end) - headers, end - headers, size


if __name__ == "__main__":
    main()
