"""Sessions: conversations kept in an SQLite file (config keys
`session_store` and `session`), listed, loaded, renamed, deleted, exported
and imported here. The shapes are the core's: a session is a dict with
`id`, `title`, `created_at`, `updated_at`, `model`, `metadata` and
`message_count`, and `load` adds `system_prompt` and `messages`."""

import json
import os
from typing import Any, Dict, List, Union

from . import _native


class SessionStore:
    """An open session store; the file is created if missing.

        store = SessionStore("chats.db")
        for session in store.sessions():
            print(session["id"], session["title"])
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self._native = _native.NativeSessionStore(os.fspath(path))

    @property
    def path(self) -> str:
        """The store's file."""
        return self._native.path

    def sessions(self) -> List[Dict[str, Any]]:
        """Every session, the most recently updated first."""
        result: List[Dict[str, Any]] = json.loads(self._native.sessions_json())
        return result

    def load(self, id: str) -> Dict[str, Any]:
        """One session with its `system_prompt` and `messages`; raises
        InvalidArgumentError when there is no such session."""
        result: Dict[str, Any] = json.loads(self._native.load_json(id))
        return result

    def delete(self, id: str) -> bool:
        """Deletes a session; False when there was none."""
        return self._native.delete(id)

    def rename(self, id: str, title: str) -> None:
        """Sets the session's title; InvalidArgumentError when there is no
        such session."""
        self._native.rename(id, title)

    def set_metadata(self, id: str, metadata: Any) -> None:
        """Sets the session's metadata: any JSON-serializable value."""
        self._native.set_metadata_json(id, json.dumps(metadata))

    def export_json(self, id: str) -> str:
        """The session as JSON text, for backups (what `import_json` reads)."""
        return self._native.export_json(id)

    def import_json(self, text: str) -> str:
        """Reads an exported session into the store and returns its id."""
        return self._native.import_json(text)

    def transcript_jsonl(self, id: str) -> str:
        """The session as JSON Lines, one message per line, system prompt first."""
        return self._native.transcript_jsonl(id)
