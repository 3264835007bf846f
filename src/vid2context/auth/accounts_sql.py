"""``AccountStore`` on the tables of ``migrations/0008_accounts.sql``, and in memory.

The same statements run on SQLite locally and on D1 on the edge, through the OAuth store's ``Sql``
(``auth.store_sql``: two methods, given by each platform's storage module, ``storage.sqlite.SQLiteSql``
and ``storage.cloudflare.D1Sql``),
so this module imports neither ``sqlite3`` nor the Worker's bindings. Accounts, sessions and keys
are records that must not be lost or served stale after a delete, so they are rows in D1, not KV
values (KV is eventually consistent: a deleted key could keep working for a minute elsewhere).
The memory store serves a runtime built on memory storage (tests, a throwaway server).
"""

from __future__ import annotations

import secrets
from typing import Any

from .accounts import Account, AccountKey
from .store_sql import Sql

__all__ = ["MemoryAccounts", "SqlAccounts", "new_account_id"]


def new_account_id() -> str:
    return "acct_" + secrets.token_urlsafe(9)


_ACCOUNT = "SELECT id, github_id, login, plan, created_at FROM accounts"
_KEY = "SELECT id, name, prefix, created_at FROM account_keys"


def _account(row: dict[str, Any]) -> Account:
    return Account(
        id=row["id"],
        github_id=int(row["github_id"]),
        login=row["login"],
        plan=row["plan"],
        created_at=row["created_at"],
    )


def _key(row: dict[str, Any]) -> AccountKey:
    return AccountKey(id=row["id"], name=row["name"], prefix=row["prefix"], created_at=row["created_at"])


class SqlAccounts:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    async def sign_in(self, github_id: int, login: str, *, now: str) -> Account:
        await self.sql.run(
            "INSERT INTO accounts (id, github_id, login, plan, created_at) VALUES (?, ?, ?, 'free', ?) "
            "ON CONFLICT (github_id) DO UPDATE SET login = excluded.login",
            (new_account_id(), github_id, login, now),
        )
        rows = await self.sql.rows(_ACCOUNT + " WHERE github_id = ?", (github_id,))
        return _account(rows[0])

    async def get_account(self, account_id: str) -> Account | None:
        rows = await self.sql.rows(_ACCOUNT + " WHERE id = ?", (account_id,))
        return _account(rows[0]) if rows else None

    async def open_session(self, account_id: str, session_digest: str, *, expires_at: int, now: int) -> None:
        # The account's expired sign-ins go as a new one comes, so the table keeps live ones only.
        await self.sql.run(
            "DELETE FROM account_sessions WHERE account_id = ? AND expires_at <= ?", (account_id, now)
        )
        await self.sql.run(
            "INSERT INTO account_sessions (digest, account_id, expires_at) VALUES (?, ?, ?)",
            (session_digest, account_id, expires_at),
        )

    async def session_account(self, session_digest: str, *, now: int) -> Account | None:
        rows = await self.sql.rows(
            "SELECT a.id, a.github_id, a.login, a.plan, a.created_at FROM account_sessions s "
            "JOIN accounts a ON a.id = s.account_id WHERE s.digest = ? AND s.expires_at > ?",
            (session_digest, now),
        )
        return _account(rows[0]) if rows else None

    async def close_session(self, session_digest: str) -> None:
        await self.sql.run("DELETE FROM account_sessions WHERE digest = ?", (session_digest,))

    async def add_key(
        self, account_id: str, key_id: str, name: str, key_digest: str, prefix: str, *, now: str
    ) -> AccountKey:
        await self.sql.run(
            "INSERT INTO account_keys (id, account_id, name, digest, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key_id, account_id, name, key_digest, prefix, now),
        )
        return AccountKey(id=key_id, name=name, prefix=prefix, created_at=now)

    async def list_keys(self, account_id: str) -> list[AccountKey]:
        rows = await self.sql.rows(_KEY + " WHERE account_id = ? ORDER BY created_at, id", (account_id,))
        return [_key(row) for row in rows]

    async def delete_key(self, account_id: str, key_id: str) -> bool:
        changed = await self.sql.run(
            "DELETE FROM account_keys WHERE account_id = ? AND id = ?", (account_id, key_id)
        )
        return changed > 0

    async def key_account(self, key_digest: str) -> tuple[Account, AccountKey] | None:
        rows = await self.sql.rows(
            "SELECT k.id AS key_id, k.name, k.prefix, k.created_at AS key_created_at, a.id, a.github_id, "
            "a.login, a.plan, a.created_at FROM account_keys k JOIN accounts a ON a.id = k.account_id "
            "WHERE k.digest = ?",
            (key_digest,),
        )
        if not rows:
            return None
        row = rows[0]
        key = AccountKey(
            id=row["key_id"], name=row["name"], prefix=row["prefix"], created_at=row["key_created_at"]
        )
        return _account(row), key


class MemoryAccounts:
    """The same behaviour in dicts (lost with the process)."""

    def __init__(self) -> None:
        self._accounts: dict[str, Account] = {}
        self._sessions: dict[str, tuple[str, int]] = {}
        self._keys: dict[str, tuple[str, str, AccountKey]] = {}
        """key id -> (account id, digest, key)"""

    async def sign_in(self, github_id: int, login: str, *, now: str) -> Account:
        for account in self._accounts.values():
            if account.github_id == github_id:
                updated = Account(
                    id=account.id,
                    github_id=github_id,
                    login=login,
                    plan=account.plan,
                    created_at=account.created_at,
                )
                self._accounts[account.id] = updated
                return updated
        account = Account(id=new_account_id(), github_id=github_id, login=login, created_at=now)
        self._accounts[account.id] = account
        return account

    async def get_account(self, account_id: str) -> Account | None:
        return self._accounts.get(account_id)

    async def open_session(self, account_id: str, session_digest: str, *, expires_at: int, now: int) -> None:
        for digest, (owner, ends) in list(self._sessions.items()):
            if owner == account_id and ends <= now:
                del self._sessions[digest]
        self._sessions[session_digest] = (account_id, expires_at)

    async def session_account(self, session_digest: str, *, now: int) -> Account | None:
        found = self._sessions.get(session_digest)
        if found is None or found[1] <= now:
            return None
        return self._accounts.get(found[0])

    async def close_session(self, session_digest: str) -> None:
        self._sessions.pop(session_digest, None)

    async def add_key(
        self, account_id: str, key_id: str, name: str, key_digest: str, prefix: str, *, now: str
    ) -> AccountKey:
        key = AccountKey(id=key_id, name=name, prefix=prefix, created_at=now)
        self._keys[key_id] = (account_id, key_digest, key)
        return key

    async def list_keys(self, account_id: str) -> list[AccountKey]:
        return [key for owner, _, key in self._keys.values() if owner == account_id]

    async def delete_key(self, account_id: str, key_id: str) -> bool:
        found = self._keys.get(key_id)
        if found is None or found[0] != account_id:
            return False
        del self._keys[key_id]
        return True

    async def key_account(self, key_digest: str) -> tuple[Account, AccountKey] | None:
        for owner, stored, key in self._keys.values():
            if stored == key_digest and (account := self._accounts.get(owner)) is not None:
                return account, key
        return None
