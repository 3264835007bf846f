"""Storage backends behind three protocols; see ``base.py``.

Only the portable ones are imported here; ``sqlite`` (local) and ``cloudflare`` (Worker) are
imported by the runtime builder that needs them.
"""

from .base import Blob, BlobStore, KvStore, Storage, summarize
from .memory import MemoryBlobs, MemoryKv, MemoryStorage

__all__ = ["Blob", "BlobStore", "KvStore", "MemoryBlobs", "MemoryKv", "MemoryStorage", "Storage", "summarize"]
