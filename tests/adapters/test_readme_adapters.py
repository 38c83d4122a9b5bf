"""The README's adapter examples (its ``py`` blocks) run as written: the MCP one against a
real `registre mcp serve` subprocess, the LangGraph one as it is, the Agents SDK, LangChain
and Pydantic AI ones with the model line swapped for a scripted model (the example's model
would call OpenAI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
ROOT = README.parent
MODEL_LINE = 'model = OpenAIResponsesModel("gpt-5", AsyncOpenAI())  # or any agents Model\n'
SCRIPTED = (
    "from tests.adapters.scripted_model import ScriptedModel, say\n"
    'model = ScriptedModel([say("Order 7 ships today.")])\n'
)


def adapter_examples() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```py\n(.*?)```", text, re.S)
    names = {
        "from mcp import": "mcp",
        "from agents import": "agents",
        "claude_agent_sdk": "claude",
        "from langgraph.graph import": "langgraph",
        "from langchain.agents import": "langchain",
        "from pydantic_ai import": "pydantic_ai",
    }
    return {next(n for k, n in names.items() if k in block): block for block in blocks}


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_readme_has_one_example_per_adapter() -> None:
    assert set(adapter_examples()) == {
        "mcp",
        "agents",
        "claude",
        "langgraph",
        "langchain",
        "pydantic_ai",
    }


def test_the_mcp_example_runs_as_written(tmp_path: Path) -> None:
    done = _run(adapter_examples()["mcp"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'Reconcile Q3.'}]}]"
        in done.stdout
    )


def test_the_agents_example_runs_with_a_scripted_model(tmp_path: Path) -> None:
    example = adapter_examples()["agents"]
    assert MODEL_LINE in example
    done = _run(example.replace(MODEL_LINE, SCRIPTED), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Order 7 ships today. ['turn', 'turn', 'model.call', 'turn']"


def test_the_claude_example_runs_as_written(tmp_path: Path) -> None:
    example = adapter_examples()["claude"]
    check = (
        "\nassert options.session_store is not None and work.id == 'my-task'"
        "\nprint(type(options.session_store).__name__)\n"
    )
    done = _run(example + check, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "RegistreSessionStore"


def test_the_langgraph_example_runs_as_written(tmp_path: Path) -> None:
    done = _run(adapter_examples()["langgraph"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Order 7 ships today. 5"  # 3 checkpoints, 2 tasks' writes


LANGCHAIN_MODEL = 'model = init_chat_model("openai:gpt-5")  # or any chat model\n'
LANGCHAIN_SCRIPTED = (
    "from langchain_core.messages import AIMessage\n"
    "from tests.adapters.scripted_chat import ScriptedChat\n"
    'model = ScriptedChat(responses=[AIMessage(content="Order 7 ships today.")], received=[])\n'
)


def test_the_langchain_example_runs_with_a_scripted_model(tmp_path: Path) -> None:
    example = adapter_examples()["langchain"]
    assert LANGCHAIN_MODEL in example
    done = _run(example.replace(LANGCHAIN_MODEL, LANGCHAIN_SCRIPTED), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("Order 7 ships today. ['turn', 'turn', 'model.call', 'turn']")


PYDANTIC_MODEL = 'model = "openai:gpt-5"  # or any Pydantic AI model\n'
PYDANTIC_SCRIPTED = (
    "from pydantic_ai.models.test import TestModel\n"
    'model = TestModel(custom_output_text="Order 7 ships today.")\n'
)


def test_the_pydantic_ai_example_runs_with_a_test_model(tmp_path: Path) -> None:
    example = adapter_examples()["pydantic_ai"]
    assert PYDANTIC_MODEL in example
    done = _run(example.replace(PYDANTIC_MODEL, PYDANTIC_SCRIPTED), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("Order 7 ships today. ['turn', 'turn', 'model.call', 'turn']")
