"""A keyed window: CCL's `PRIMARY KEY (cols) KEEP ...` (apama-ccl.md §2.8).

Sources, quoted:

* OPC (ESP 5.1 SP09, Operation Codes): `update` "If no such record exists, it
  is a runtime error"; `delete` the same; `upsert` "If a record with a
  matching key exists, update it ... does not exist, insert"; `safedelete` "If
  a record with a matching key does not exist, do nothing". SPLASH: "insert
  ... It's a run-time error if there is already a record present with those
  keys."
* PRIMARY KEY clause (ESP 5.1 CCL Reference, infocenter dc01621.0510
  swa1286480630414): "The primary key is normally treated as "strict." Any
  records that violate consistency rules, such as an insert of an existing
  record, or update or delete for a nonexistent record, are discarded and
  reported in the log. The primary key is treated as "lax" when a keep policy
  is placed on a window. The expiration of records caused by the KEEP clause
  creates inconsistencies with incoming records. An insert on an existing
  record is treated as an update, and an update on a nonexistent record is
  treated as an insert. A delete on a nonexistent record is silently ignored
  (as safedelete)." CMP: "Windows with a retention policy treat update as
  upsert."
* ccl-retention.txt and JUMP: "the inserted rows are placed before the deleted
  rows, since the inserts trigger the deletes"; "Insert tuples affect
  retention, yet the arrival of update and/or delete tuples does not trigger
  the retention mechanism."

The rules. A row's key is the tuple of its key columns' values
(`oracle.windows.keys.key_of`). The window holds at most one row per key.

* **insert** of a new key: the row is stored and handed to the retention
  policy as an insert; one post, new = [the row], old = the rows the policy
  pushed out (oldest first). Of a key held: strict, an error; lax, an update.
* **update** of a key held: the stored row is replaced; one post, `update` =
  [the new row]. Of a missing key: strict, an error; lax, an insert.
* **upsert: an update of a key held, an insert of a new key (both modes).
* **delete** of a key held: the stored row leaves; one post, old = [the stored
  row]. Of a missing key: strict, an error; lax, nothing at all.
* **safedelete**: a delete of a key held; nothing at all for a missing key.
* An error is one update with `error` naming the operation and the key; the
  window is unchanged and the trace goes on (`Spec.REJECTS_BAD_ITEMS`).
* The retention policy's own deletions (a count policy's purge, a time
  policy's expiry) post the row stored under that key now, as old.
* `contents()`: the stored rows, in the policy's order.

Decided (apama-ccl.md §3 point 8): a row posted with CCL's `update` code is
listed in the update's `update` field (CORPUS.md), never as an insert and a
remove. Case `ccl/keyed-keep-all-update-of-a-missing-key-error`.
Decided (apama-ccl.md §3 point 13): **strict or lax**. `KEEP ALL` (and no KEEP
clause, its default) places no keep policy: nothing ever expires, so none of
the inconsistencies the lax mode exists for can arise; the window is strict.
Every count or time policy makes it lax. Cases `ccl/keyed-keep-all-*-error`
and `ccl/keyed-rows-lax-*`, `ccl/keyed-time-lax-after-expiry`.
Decided (§3 point 13): an update, and a lax insert treated as one, replaces
the row **in place**: it keeps the row's age (a time policy deletes it at its
insert time + t) and its place in the count (a count policy pushes it out when
its insert's turn comes), and in the group its insert put it in under PER,
even if the update changes the PER column ("update ... tuples do not trigger
the retention mechanism"; "retains each record received for ten minutes").
ESP's aging policy, a separate feature, is what restarts on an update. Cases
`ccl/keyed-update-keeps-the-rows-age`, `ccl/keyed-rows-lax-insert-of-a-held-key-updates`,
`ccl/keyed-update-keeps-the-rows-group`.
Decided (§3 point 13): a lax update of a missing key is an insert in every
way: posted as new and counted by the policy (it may push a row out). Case
`ccl/keyed-rows-lax-update-of-a-missing-key-inserts`.
Decided (§3 point 14): a delete frees the row's place in the count; a count
policy counts the rows held now. Case `ccl/keyed-delete-frees-a-place`.
Decided (§3 point 15): old rows are posted by the stored row's id (the row's
latest version: after an update, the update's event), never the deleting
event's id; an update posts the new row's id in `update`, and the row it
replaced is not posted. Case `ccl/keyed-delete-posts-the-stored-row`.
Decided (§3 point 16): an error posts no row and changes nothing: no
insert, no delete, no timer (the strict errors' "discarded and reported in the
log"). Case `ccl/keyed-keep-all-duplicate-insert-error`.
Decided: a missing key column is the null key, a key like any other, as for
every key in this project (`oracle.windows.keys`). Case
`ccl/keyed-null-key-is-a-key`.

The operation codes at a glance (a trace item `{"event": {...}, "op":
"update"}`; no `op` is `insert`):

| code | key held | key missing, `KEEP ALL` (strict) | key missing, a policy (lax) |
|---|---|---|---|
| insert | strict: error; lax: update | insert | insert |
| update | update | error | insert |
| upsert | update | insert | insert |
| delete | delete | error | nothing |
| safedelete | delete | nothing | nothing |
"""

from __future__ import annotations

from typing import Any

from oracle.model import Event, KeepAll, Keyed
from oracle.windows.base import Post, Window, WindowBase
from oracle.windows.keys import key_of
from oracle.windows.reasons import Reasons, row_reasons


class KeyedWindow(WindowBase):
    """A keyed window (module docstring): a store of rows by key, the operation
    codes applied to it, and a retention policy window over the rows.

    The policy window is handed each row's first version (its *token*) at the
    row's insert and never sees updates; a token it pushes out stands for the
    row stored under the token's key now. A delete takes the token out of the
    policy quietly (`discard`). The reasons (module docstring's rules) name
    the operation; a row the policy posts keeps the policy's reason."""

    REASONS = Reasons(
        insert="handed to the retention policy as an insert",
        lax_insert="of a missing key: strict, an error; lax, an insert",
        upsert_insert="upsert: an update of a key held, an insert of a new key",
        update="the stored row is replaced",
        lax_update="of a key held: strict, an error; lax, an update",
        upsert_update="upsert: an update of a key held",
        delete="delete of a key held: the stored row leaves",
        safedelete="safedelete: a delete of a key held",
        error="an error is one update with `error` naming the operation and the key",
    )

    def __init__(self, spec: Keyed, now: int):
        from oracle.windows import make_window  # the table of window classes holds this module's class

        self.keys = spec.keys
        self.lax = not isinstance(spec.retention, KeepAll)
        self.policy: Window = make_window(spec.retention, now, {})  # a policy reads no variables
        self.rows: dict[tuple[Any, ...], Event] = {}  # key -> the row stored now
        self.tokens: dict[tuple[Any, ...], Event] = {}  # key -> the row's first version, held by the policy
        self.key_of_token: dict[str, tuple[Any, ...]] = {}  # token id -> key

    # ------------------------------------------------------------------ operations

    def on_event(self, event: Event, now: int) -> list[Post]:
        return self.on_operation("insert", event, now)

    def on_operation(self, op: str, event: Event, now: int) -> list[Post]:
        key = key_of(event, self.keys)
        held = key in self.rows
        why = self.REASONS
        if op == "upsert" or (self.lax and op in ("insert", "update")):
            if held:
                return self._update(key, event, why.upsert_update if op == "upsert" else
                                    why.lax_update if op == "insert" else why.update)
            return self._insert(key, event, now, why.upsert_insert if op == "upsert" else
                                why.lax_insert if op == "update" else why.insert)
        if op == "insert":
            return self._error(f"duplicate insert: the window holds key {self._shown(key)} already "
                               f"(row {self.rows[key].id!r})") if held else self._insert(key, event, now, why.insert)
        if op == "update":
            return self._update(key, event, why.update) if held else \
                self._error(f"update of a missing key {self._shown(key)}")
        if op == "safedelete" or (self.lax and op == "delete"):
            return self._delete(key, why.safedelete if op == "safedelete" else why.delete) if held else []
        if op == "delete":
            return self._delete(key, why.delete) if held else self._error(f"delete of a missing key {self._shown(key)}")
        raise AssertionError(f"unknown operation code {op!r}")  # the trace's items are checked before

    def _insert(self, key, event: Event, now: int, why) -> list[Post]:
        self.rows[key] = self.tokens[key] = event
        self.key_of_token[event.id] = key
        return self._translate(self.policy.on_event(event, now), why)

    def _update(self, key, event: Event, why) -> list[Post]:
        self.rows[key] = event
        return [Post(update=(event,), why=why)]

    def _delete(self, key, why) -> list[Post]:
        row, token = self.rows.pop(key), self.tokens.pop(key)
        del self.key_of_token[token.id]
        self.policy.discard((token,))
        return [Post(remove=(row,), why=why)]

    def _error(self, message: str) -> list[Post]:
        return [Post(error=message, why=self.REASONS.error)]

    def _shown(self, key) -> str:
        return "(" + ", ".join(f"{name}={value!r}" for name, value in zip(self.keys, key)) + ")"

    # ------------------------------------------------------------------ the policy's posts

    def _translate(self, posts: list[Post], operation=None) -> list[Post]:
        """The policy's posts of tokens as posts of the rows stored now; the
        rows it pushed out leave the store. Their reasons are the policy's,
        an inserted row's after the `operation` that inserted it."""
        out = []
        for post in posts:
            inserted = tuple(self.rows[self.key_of_token[t.id]] for t in post.insert)
            removed = []
            for token in post.remove:
                key = self.key_of_token.pop(token.id)
                del self.tokens[key]
                removed.append(self.rows.pop(key))
            inserts = row_reasons(post, "insert")
            if operation is not None:
                inserts = [operation.via(reason) for reason in inserts]
            out.append(Post(inserted, tuple(removed), why={"insert": inserts, "remove": row_reasons(post, "remove")}))
        return out

    def on_timer(self, now: int) -> list[Post]:
        return self._translate(self.policy.on_timer(now))

    def next_timer(self) -> int | None:
        return self.policy.next_timer()

    def contents(self) -> list[Event]:
        return [self.rows[self.key_of_token[token.id]] for token in self.policy.contents()]
