"""Fresh request ids, made a batch at a time: each is a version-4 UUID in ``str(uuid.uuid4())``'s
shape, none repeats across batches, and a forked child (a granian worker) never hands out what
its parent had left."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from vid2context.api.middleware.request_id import _BATCH, fresh_request_id


def test_fresh_ids_are_uuid4_text_and_unique_across_batches() -> None:
    ids = [fresh_request_id() for _ in range(3 * _BATCH + 7)]
    assert len(set(ids)) == len(ids)
    for one in ids:
        parsed = uuid.UUID(one)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == one


def test_a_forked_child_does_not_reuse_the_parents_batch() -> None:
    fresh_request_id()  # a batch is under way in this process
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's report comes back through the pipe
        try:
            os.write(write, fresh_request_id().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        childs = pipe.read().decode()
    os.waitpid(child, 0)
    assert uuid.UUID(childs).version == 4
    assert childs != fresh_request_id()


def test_ids_are_made_where_there_is_no_fork() -> None:
    """Pyodide (the Worker) has neither ``os.fork`` nor ``os.register_at_fork`` (the stdlib's
    ``random`` checks for the first): the module still imports and makes ids."""
    script = (
        "import os\n"
        "del os.fork, os.register_at_fork\n"
        "import uuid\n"
        "from vid2context.api.middleware.request_id import fresh_request_id\n"
        "print(uuid.UUID(fresh_request_id()).version)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "4"), done.stderr
