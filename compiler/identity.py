"""Values derived once per immutable object (an AST or IR node), kept by the object's identity.

Contract
- `ByIdentity(limit)`: `get(obj)` is the value `put(obj, value)` stored for that very object, or
  None; `put` returns the value. The object is held with its value, so its id is never reused
  for another while the entry lives. Past `limit` entries the memo is emptied (objects of plans
  compiled before in this process: the language server, a test session), so memory stays bounded.
- Only for objects that never change and values that are a function of the object alone.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

V = TypeVar("V")


class ByIdentity(Generic[V]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: dict[int, tuple[Any, V]] = {}

    def get(self, obj: Any) -> V | None:
        seen = self._entries.get(id(obj))
        return seen[1] if seen is not None and seen[0] is obj else None

    def put(self, obj: Any, value: V) -> V:
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value
