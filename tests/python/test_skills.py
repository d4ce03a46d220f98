"""Skills through Python: the config key, the list in the system prompt,
the model's load_skill, and activate_skill / deactivate_skill."""

import json
import pathlib

import pytest

from zoo_keeper import Agent, InvalidArgumentError, InvalidConfigError


def write_skill(root: pathlib.Path, name: str, text: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(text)


def test_skills_load_restrict_and_restore(tmp_path: pathlib.Path) -> None:
    write_skill(tmp_path, "notes", "---\nname: notes\ndescription: Takes notes\nallowed-tools: echo\n---\nWrite short notes.\n")
    call = "<tool_call>" + json.dumps({"name": "load_skill", "arguments": {"name": "notes"}}) + "</tool_call>"
    with Agent(provider={"type": "mock", "replies": [call, "Loaded."]}, skills=[str(tmp_path)]) as agent:
        for name in ("echo", "other"):
            agent.register_tool(name, "test", {"type": "object", "properties": {}}, lambda: "ok")
        assert [s["name"] for s in agent.skills] == ["notes"]
        assert agent.skills[0]["allowed_tools"] == ["echo"]
        assert "<name>notes</name>" in agent.history[0]["content"]
        response = agent.chat("take a note")
        assert response.tool_calls[0].result == {"text": "Write short notes.", "details": {"skill": "notes"}}
        assert [t["name"] for t in agent.tools] == ["load_skill", "echo"]
        agent.deactivate_skill()
        assert [t["name"] for t in agent.tools] == ["load_skill", "echo", "other"]
        assert agent.activate_skill("notes") == "Write short notes."
        with pytest.raises(InvalidArgumentError, match="no skill `nope`"):
            agent.activate_skill("nope")


def test_a_broken_skill_is_invalid_config(tmp_path: pathlib.Path) -> None:
    write_skill(tmp_path, "bad", "no frontmatter")
    with pytest.raises(InvalidConfigError, match="SKILL.md"):
        Agent(provider={"type": "mock"}, skills=[str(tmp_path)])
