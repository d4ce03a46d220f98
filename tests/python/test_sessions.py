"""Sessions from Python: an agent with `session_store` and `session` keeps
its conversation in SQLite, a new agent continues it, and `SessionStore`
lists, loads, renames, exports, imports and deletes."""

import json
import pathlib

import pytest

from zoo_keeper import Agent, InvalidArgumentError, InvalidConfigError, InvalidJsonError, SessionStore, ZooIOError

MOCK = {"type": "mock"}


def test_a_new_agent_continues_the_session(tmp_path: pathlib.Path) -> None:
    db = str(tmp_path / "chats.db")
    with Agent(provider=MOCK, session_store=db, session="kitchen", system_prompt="Be brief.") as first:
        assert first.chat("hello").text == "echo: hello"
        assert first.session_id == "kitchen"
        before = first.history
    with Agent(provider=MOCK, session_store=db, session="kitchen") as second:
        assert second.history == before
        second.chat("again")
    store = SessionStore(tmp_path / "chats.db")
    [info] = store.sessions()
    assert info["id"] == "kitchen"
    assert info["title"] == "hello"
    assert info["message_count"] == 4
    session = store.load("kitchen")
    assert session["system_prompt"] == "Be brief."
    assert [m["content"] for m in session["messages"]] == ["hello", "echo: hello", "again", "echo: again"]


def test_without_an_id_a_fresh_session_and_without_a_store_none(tmp_path: pathlib.Path) -> None:
    with Agent(provider=MOCK, session_store=str(tmp_path / "s.db")) as agent:
        assert agent.session_id is not None and len(agent.session_id) == 32
    with Agent(provider=MOCK) as agent:
        assert agent.session_id is None


def test_store_functions(tmp_path: pathlib.Path) -> None:
    db = str(tmp_path / "chats.db")
    with Agent(provider=MOCK, session_store=db, session="a", system_prompt="sys") as agent:
        agent.chat("hi")
    store = SessionStore(db)
    assert store.path == db
    store.rename("a", "Greeting")
    store.set_metadata("a", {"user": 7})
    exported = store.export_json("a")
    lines = [json.loads(line) for line in store.transcript_jsonl("a").splitlines()]
    assert lines[0] == {"role": "system", "content": "sys"}
    assert len(lines) == 3
    with pytest.raises(InvalidArgumentError, match="already in the store"):
        store.import_json(exported)
    assert store.delete("a") is True
    assert store.delete("a") is False
    with pytest.raises(InvalidArgumentError, match="no session `a`"):
        store.load("a")
    assert store.import_json(exported) == "a"
    back = store.load("a")
    assert back["title"] == "Greeting"
    assert back["metadata"] == {"user": 7}
    with pytest.raises(InvalidJsonError):
        store.import_json("{")
    with pytest.raises(InvalidArgumentError, match="no session `missing`"):
        store.rename("missing", "x")


def test_errors_are_typed(tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidConfigError, match="`session`: needs a `session_store`"):
        Agent(provider=MOCK, session="x")
    with pytest.raises(ZooIOError, match="/nonexistent-dir/zoo/s.db"):
        SessionStore("/nonexistent-dir/zoo/s.db")
    db = str(tmp_path / "chats.db")
    with Agent(provider=MOCK, session_store=db, session="busy"):
        with pytest.raises(InvalidArgumentError, match="open in another agent"):
            Agent(provider=MOCK, session_store=db, session="busy")
