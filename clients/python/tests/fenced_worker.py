"""Increments a fenced counter under a raftlock lock, for the cross-language test
(test/clients/go-python.test.ts): lock, read the counter, write value+1 with the fencing
token, release; ROUNDS times. Any refusal or error exits non-zero.
Environment: RAFTLOCK_TEST_ENDPOINTS, COUNTER_URL, LOCK_NAME, WORKER_ID, ROUNDS."""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from raftlock import Client  # noqa: E402


def main() -> int:
    env = os.environ
    client = Client(env["RAFTLOCK_TEST_ENDPOINTS"])
    counter, name, worker = env["COUNTER_URL"], env["LOCK_NAME"], env["WORKER_ID"]
    session = client.session(ttl=5, owner=worker)
    try:
        for i in range(int(env["ROUNDS"])):
            lk = session.lock(name, wait=30)
            with urllib.request.urlopen(counter + "/value", timeout=10) as r:
                value = json.load(r)["value"]
            lk.assert_held()
            body = json.dumps({"value": value + 1, "token": lk.fencing_token, "worker": worker}).encode()
            req = urllib.request.Request(counter + "/write", data=body, headers={"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                if r.status != 200:
                    raise RuntimeError(f"round {i}: the counter refused token {lk.fencing_token}")
            lk.release()
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
