"""A stand-in for a Vectorize index binding (``env.VECTORS``), as a Python Worker calls it.

Vectorize has no offline simulator (Miniflare proxies its binding to the real service), so the
tests use this object, written from Cloudflare's documentation:

- Workers binding API: https://developers.cloudflare.com/vectorize/reference/client-api/
  (``insert``, ``upsert``, ``query(vector, {topK, namespace, returnValues, returnMetadata,
  filter})``, ``getByIds``, ``deleteByIds``, ``describe``; ``topK`` defaults to 5; writes are
  asynchronous and "typically take a few seconds" to be queryable; ``insert`` skips ids that
  exist, ``upsert`` replaces a vector whole).
- Limits: https://developers.cloudflare.com/vectorize/platform/limits/ (ids of at most 64 bytes,
  10 KiB of metadata per vector, topK at most 100, or 20 with values or ``returnMetadata: "all"``,
  1,000 vectors per upsert from a Worker, namespace names of at most 64 bytes, at most 10
  metadata indexes, 64 bytes of each indexed value, at most 1536 dimensions).
- Metadata filtering: https://developers.cloudflare.com/vectorize/reference/metadata-filtering/
  (``$eq $ne $in $nin $lt $lte $gt $gte``, implicit ``$eq``, keys ANDed; the filter's compact
  JSON under 2048 bytes; keys not empty, without ``"`` or ``.`` (nesting), not starting with ``$``;
  only properties with a metadata index filter, and only vectors written after that index was
  made are in it; a string is indexed by its first 64 bytes; namespaces filter first).
- Inserting: https://developers.cloudflare.com/vectorize/best-practices/insert-vectors/
  (metadata keys not empty, no ``.``, no ``"``, not starting with ``$``; values stored as float32;
  a vector is in at most one namespace).

Faithful
    - The methods, their arguments (options as one object, or as keyword arguments, which Pyodide
      passes as a trailing object) and the shapes of their results as Pyodide shows JS values
      (``JsObject`` and ``JsArray`` from ``cloudflare_bindings``: attributes and ``to_py()``).
      V2 results: a mutation is ``{mutationId}``; ``describe()`` is ``{dimensions, vectorCount,
      processedUpToMutation, processedUpToDatetime}``; a query is ``{count, matches: [{id, score,
      values?, metadata?, namespace?}]}``.
    - Every limit above, refused with a ``JsException`` as the binding's rejection is.
    - Ids are unique in the whole index, not per namespace (``getByIds`` and ``deleteByIds`` take
      no namespace), so an upsert of the same id in another namespace moves the vector.
    - Scores: cosine similarity for ``metric="cosine"`` (higher is closer), the dot product for
      ``"dot-product"``, the Euclidean distance for ``"euclidean"`` (lower is closer), computed
      exactly over float32 values.
    - Eventual consistency, deterministically: with ``deferred=True`` every mutation waits in a
      queue until the test calls ``process()`` (all of them, or the first ``n``, in order), as
      Vectorize applies its write-ahead log in batches; ``query``, ``getByIds`` and ``describe``'s
      ``vectorCount`` see only what was processed. No sleeps anywhere.

Approximated
    - The text of errors: the documented limit and the ``VECTOR_*_ERROR`` prefix, not the service's
      exact codes. Metadata values that are ``None`` (``undefined`` once converted) are refused
      rather than dropped, stricter on purpose.
    - Exact nearest neighbours: the service's index is approximate, so on real data it may rank
      near-ties differently. Tests compare rankings whose order is unambiguous.
    - A filter on a property without a metadata index matches nothing here.
    - Nothing here needs ``to_js``: under CPython that conversion is the identity, so a value
      passed without it is accepted here and would fail on Cloudflare (``storage/cloudflare.py``
      routes every argument through ``_to_js`` for this reason).
"""

from __future__ import annotations

import itertools
import json
import math
from array import array
from collections.abc import Mapping
from typing import Any

from .cloudflare_bindings import JsArray, JsException, JsObject

__all__ = ["MAX_FILTER_BYTES", "VectorizeStandin"]

MAX_ID_BYTES = 64
MAX_METADATA_BYTES = 10 * 1024
MAX_TOP_K = 100
MAX_TOP_K_WITH_DATA = 20
MAX_BATCH = 1000
MAX_NAMESPACE_BYTES = 64
MAX_METADATA_INDEXES = 10
MAX_INDEXED_BYTES = 64
MAX_DIMENSIONS = 1536
MAX_FILTER_BYTES = 2048
_OPERATORS = {"$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte"}
_METRICS = {"cosine", "euclidean", "dot-product"}


def _error(kind: str, message: str) -> JsException:
    return JsException("Error", f"VECTOR_{kind}_ERROR: {message}")


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _truncate(text: str, limit: int) -> str:
    """The longest well-formed prefix of ``text`` within ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8", "surrogatepass")[:limit]
    return data.decode("utf-8", "ignore")


def _options(options: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    merged = dict(options or {})
    merged.update(kwargs)
    return merged


class _Vector:
    __slots__ = ("id", "indexed", "metadata", "namespace", "values")

    def __init__(self, id: str, values: list[float], namespace: str | None, metadata: dict[str, Any], indexed: dict[str, Any]) -> None:  # fmt: skip
        self.id = id
        self.values = values
        self.namespace = namespace
        self.metadata = metadata
        self.indexed = indexed
        """The values of the properties that had a metadata index when this vector was written."""


class VectorizeStandin:
    """One Vectorize index, bound as ``env.VECTORS``. ``deferred`` models the delay before a write
    is queryable (see the module docstring); ``create_metadata_index`` is
    ``wrangler vectorize create-metadata-index``."""

    def __init__(self, *, dimensions: int = 384, metric: str = "cosine", deferred: bool = False) -> None:
        if metric not in _METRICS or not 0 < dimensions <= MAX_DIMENSIONS:
            raise ValueError("wrangler would refuse this index")
        self.dimensions = dimensions
        self.metric = metric
        self.deferred = deferred
        self.metadata_indexes: dict[str, str] = {}
        self.calls: list[tuple[str, int]] = []
        """Each call as (method, how many vectors or ids it carried): what tests count batches by."""
        self._vectors: dict[str, _Vector] = {}
        self._queue: list[tuple[str, str, list[Any]]] = []
        self._mutations = itertools.count(1)
        self._processed: str | None = None

    # --- set-up (wrangler) ------------------------------------------------------------------------

    def create_metadata_index(self, property_name: str, type: str) -> None:
        if type not in ("string", "number", "boolean"):
            raise ValueError("the type must be string, number or boolean")
        if len(self.metadata_indexes) >= MAX_METADATA_INDEXES:
            raise ValueError(f"at most {MAX_METADATA_INDEXES} metadata indexes")
        self.metadata_indexes[property_name] = type

    def process(self, n: int | None = None) -> int:
        """Apply the first ``n`` queued mutations (all by default); how many were applied."""
        todo = self._queue if n is None else self._queue[:n]
        self._queue = self._queue[len(todo) :]
        for mutation_id, kind, items in todo:
            self._apply(kind, items)
            self._processed = mutation_id
        return len(todo)

    @property
    def pending(self) -> int:
        return len(self._queue)

    # --- the binding --------------------------------------------------------------------------------

    async def insert(self, vectors: Any) -> JsObject:
        return self._mutate("insert", self._vectors_in(vectors, "INSERT"))

    async def upsert(self, vectors: Any) -> JsObject:
        return self._mutate("upsert", self._vectors_in(vectors, "UPSERT"))

    async def deleteByIds(self, ids: Any) -> JsObject:  # noqa: N802  the binding's name
        ids = list(ids)
        self.calls.append(("deleteByIds", len(ids)))
        if not all(isinstance(i, str) for i in ids):
            raise _error("DELETE", "ids must be strings")
        return self._mutate("delete", ids)

    async def getByIds(self, ids: Any) -> JsArray:  # noqa: N802
        ids = list(ids)
        self.calls.append(("getByIds", len(ids)))
        found = [self._vectors[i] for i in dict.fromkeys(ids) if i in self._vectors]
        return JsArray(self._shape(v, score=None, values=True, metadata="all") for v in found)

    async def describe(self) -> JsObject:
        return JsObject(
            {
                "dimensions": self.dimensions,
                "vectorCount": len(self._vectors),
                "processedUpToMutation": self._processed,
                "processedUpToDatetime": None,
            }
        )

    async def query(self, vector: Any, options: Mapping[str, Any] | None = None, **kwargs: Any) -> JsObject:
        opts = _options(options, kwargs)
        unknown = set(opts) - {"topK", "namespace", "returnValues", "returnMetadata", "filter"}
        if unknown:
            raise _error("QUERY", f"unknown options {sorted(unknown)}")
        values = self._values(vector, "QUERY")
        top_k = opts.get("topK", 5)
        return_values = bool(opts.get("returnValues", False))
        return_metadata = opts.get("returnMetadata", "none")
        if return_metadata is True:
            return_metadata = "all"
        elif return_metadata is False:
            return_metadata = "none"
        if return_metadata not in ("none", "indexed", "all"):
            raise _error("QUERY", "returnMetadata must be 'none', 'indexed' or 'all'")
        limit = MAX_TOP_K_WITH_DATA if return_values or return_metadata == "all" else MAX_TOP_K
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 < top_k <= limit:
            raise _error("QUERY", f"topK must be between 1 and {limit} with these options")
        namespace = opts.get("namespace")
        if namespace is not None:
            self._namespace(namespace, "QUERY")
        matcher = self._filter(opts.get("filter"))
        self.calls.append(("query", top_k))
        scored = []
        for stored in self._vectors.values():
            if namespace is not None and stored.namespace != namespace:
                continue
            if matcher is not None and not matcher(stored):
                continue
            score = self._score(values, stored.values)
            scored.append((score, stored))
        descending = self.metric != "euclidean"
        scored.sort(key=lambda item: -item[0] if descending else item[0])
        matches = [
            self._shape(stored, score=score, values=return_values, metadata=return_metadata)
            for score, stored in scored[:top_k]
        ]
        return JsObject({"count": len(matches), "matches": JsArray(matches)})

    # --- the rules ----------------------------------------------------------------------------------

    def _values(self, raw: Any, kind: str) -> list[float]:
        try:
            values = [float(v) for v in raw]
        except (TypeError, ValueError):
            raise _error(kind, "values must be an array of numbers") from None
        if len(values) != self.dimensions:
            raise _error(kind, f"expected {self.dimensions} dimensions, and got {len(values)} dimensions")
        if not all(math.isfinite(v) for v in values):
            raise _error(kind, "values must be finite numbers")
        return list(array("f", values))  # stored and compared as float32

    def _namespace(self, namespace: Any, kind: str) -> str:
        if not isinstance(namespace, str) or not 0 < _size(namespace) <= MAX_NAMESPACE_BYTES:
            raise _error(kind, f"a namespace is 1 to {MAX_NAMESPACE_BYTES} bytes")
        return namespace

    def _vectors_in(self, raw: Any, kind: str) -> list[_Vector]:
        items = list(raw)
        self.calls.append((kind.lower(), len(items)))
        if not items:
            raise _error(kind, "no vectors given")
        if len(items) > MAX_BATCH:
            raise _error(kind, f"at most {MAX_BATCH} vectors per request from a Worker, got {len(items)}")
        vectors = []
        for item in items:
            fields = item.to_py() if hasattr(item, "to_py") else dict(item)
            unknown = set(fields) - {"id", "values", "namespace", "metadata"}
            if unknown:
                raise _error(kind, f"unknown vector fields {sorted(unknown)}")
            vector_id = fields.get("id")
            if not isinstance(vector_id, str) or not 0 < _size(vector_id) <= MAX_ID_BYTES:
                raise _error(kind, f"a vector id is 1 to {MAX_ID_BYTES} bytes")
            namespace = fields.get("namespace")
            if namespace is not None:
                self._namespace(namespace, kind)
            metadata = fields.get("metadata") or {}
            self._check_metadata(metadata, kind)
            indexed = {
                key: (_truncate(metadata[key], MAX_INDEXED_BYTES) if isinstance(metadata[key], str) else metadata[key])
                for key, kind_ in self.metadata_indexes.items()
                if key in metadata and _matches_type(metadata[key], kind_)
            }  # fmt: skip
            vectors.append(
                _Vector(vector_id, self._values(fields.get("values"), kind), namespace, metadata, indexed)
            )
        return vectors

    def _check_metadata(self, metadata: Any, kind: str) -> None:
        if not isinstance(metadata, dict):
            raise _error(kind, "metadata must be an object")
        for key, value in metadata.items():
            if not key or "." in key or '"' in key or key.startswith("$"):
                raise _error(kind, f"metadata key {key!r} is empty, holds '.' or '\"', or starts with '$'")
            if value is None:
                raise _error(kind, f"metadata {key!r} is undefined")
        if len(json.dumps(metadata, separators=(",", ":")).encode()) > MAX_METADATA_BYTES:
            raise _error(kind, f"metadata over {MAX_METADATA_BYTES} bytes")

    def _filter(self, raw: Any) -> Any:
        if raw is None:
            return None
        if not isinstance(raw, dict) or not raw:
            raise _error("QUERY", "filter must be a non-empty object")
        if len(json.dumps(raw, separators=(",", ":")).encode()) >= MAX_FILTER_BYTES:
            raise _error("QUERY", f"filter's compact JSON must be less than {MAX_FILTER_BYTES} bytes")
        conditions = []
        for key, condition in raw.items():
            if not key or '"' in key or key.startswith("$") or len(key) > 512:
                raise _error("QUERY", f"filter key {key!r} is not valid")
            if not isinstance(condition, dict):
                condition = {"$eq": condition}
            if not condition or set(condition) - _OPERATORS:
                raise _error("QUERY", f"unsupported filter operators {sorted(set(condition) - _OPERATORS)}")
            for operator, operand in condition.items():
                if operator in ("$in", "$nin") and (not isinstance(operand, list) or not operand):
                    raise _error("QUERY", f"{operator} takes a non-empty array")
                conditions.append((key, operator, operand))

        def matches(stored: _Vector) -> bool:
            for key, operator, operand in conditions:
                if key not in self.metadata_indexes or key not in stored.indexed:
                    return False
                if not _compare(stored.indexed[key], operator, operand):
                    return False
            return True

        return matches

    def _score(self, query: list[float], stored: list[float]) -> float:
        if self.metric == "euclidean":
            return math.sqrt(math.fsum((a - b) ** 2 for a, b in zip(query, stored, strict=True)))
        dot = math.fsum(a * b for a, b in zip(query, stored, strict=True))
        if self.metric == "dot-product":
            return dot
        norms = math.sqrt(math.fsum(a * a for a in query)) * math.sqrt(math.fsum(b * b for b in stored))
        return dot / norms if norms else 0.0

    def _shape(self, stored: _Vector, *, score: float | None, values: bool, metadata: str) -> JsObject:
        fields: dict[str, Any] = {"id": stored.id}
        if score is not None:
            fields["score"] = score
        if values:
            fields["values"] = JsArray(stored.values)
        if metadata == "all":
            fields["metadata"] = JsObject(dict(stored.metadata))
        elif metadata == "indexed":
            fields["metadata"] = JsObject(dict(stored.indexed))
        if stored.namespace is not None:
            fields["namespace"] = stored.namespace
        return JsObject(fields)

    def _mutate(self, kind: str, items: list[Any]) -> JsObject:
        mutation_id = f"mutation-{next(self._mutations):06d}"
        if self.deferred:
            self._queue.append((mutation_id, kind, items))
        else:
            self._apply(kind, items)
            self._processed = mutation_id
        return JsObject({"mutationId": mutation_id})

    def _apply(self, kind: str, items: list[Any]) -> None:
        if kind == "delete":
            for vector_id in items:
                self._vectors.pop(vector_id, None)
            return
        for vector in items:
            if kind == "insert" and vector.id in self._vectors:
                continue
            self._vectors[vector.id] = vector


def _matches_type(value: Any, kind: str) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return value == operand
    if operator == "$ne":
        return value != operand
    if operator == "$in":
        return value in operand
    if operator == "$nin":
        return value not in operand
    try:
        if operator == "$lt":
            return value < operand
        if operator == "$lte":
            return value <= operand
        if operator == "$gt":
            return value > operand
        return value >= operand
    except TypeError:
        return False
