"""The peers' side of bench/run.py; runs inside bench/.venv-peers (see bench/requirements-peers.txt).

For smolagents' ToolCallingAgent and LangChain's classic ReAct agent (create_react_agent + AgentExecutor),
each driven by a fake model that answers instantly from canned replies, it times the same 20-step task
(one arithmetic action per step, then the answer) and records the first call's prompt for the seed's eight
tools, whose descriptions are this project's docstrings. Prints one JSON object.
"""
import inspect
import json
import os
import statistics
import time

import repository  # noqa: F401  (importing it puts the repository's root on the import path)
from tools import FIRST_DEFAULTS, tools_named  # plain functions: importing them needs nothing installed

STEPS = 20
SEED_TOOLS = tools_named(FIRST_DEFAULTS)  # the seed's eight tools, as every framework here is given them
RUNS = int(os.environ.get("BENCH_RUNS", "7"))
NUMBER = {"number", "integer"}


def timed(run_once) -> dict:
    run_once()  # warm up
    seconds = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run_once()
        seconds.append(time.perf_counter() - started)
    return {"per_step_ms": statistics.median(seconds) / STEPS * 1000, "runs": RUNS}


# ---------------------------------------------------------------- smolagents

def smolagents_side() -> dict:
    import smolagents
    from smolagents import ToolCallingAgent
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
    from smolagents.monitoring import LogLevel
    from smolagents.tools import Tool

    def as_tool(function) -> Tool:
        parameters = inspect.signature(function).parameters
        types = {float: "number", int: "integer", str: "string"}

        class Wrapped(Tool):
            name = function.__name__
            description = inspect.getdoc(function)
            inputs = {p: {"type": types[parameters[p].annotation], "description": f"the {p} argument",
                          **({"nullable": True} if parameters[p].default is not inspect.Parameter.empty else {})}
                      for p in parameters}
            output_type = "number" if function.__name__.endswith("_numbers") else "string"

            def forward(self, **arguments):
                return function(**arguments)
        Wrapped.forward.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters.values()])
        return Wrapped()

    class Canned(Model):
        def __init__(self):
            super().__init__(model_id="canned")
            self.calls, self.first = 0, None

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
            if self.first is None:
                self.first = {"messages": [m.dict() if hasattr(m, "dict") else m for m in messages],
                              "tools": [tool_schema(t) for t in tools_to_call_from or []]}
            self.calls += 1
            name, arguments = ("add_numbers", {"x": self.calls, "y": 1}) if self.calls <= STEPS else \
                ("final_answer", {"answer": "done"})
            call = ChatMessageToolCall(id=f"call_{self.calls}", type="function",
                                       function=ChatMessageToolCallFunction(name=name, arguments=arguments))
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    def tool_schema(tool) -> dict:
        from smolagents.models import get_tool_json_schema
        return get_tool_json_schema(tool)

    tools = [as_tool(function) for function in SEED_TOOLS]
    model = Canned()

    def run_once():
        model.calls = 0
        agent = ToolCallingAgent(tools=tools, model=model, max_steps=STEPS + 5, verbosity_level=LogLevel.OFF)
        assert str(agent.run("Add one twenty times, starting from 1.")) == "done"

    result = timed(run_once)
    first = model.first
    system = "\n\n".join(str(m["content"] if isinstance(m["content"], str) else
                             " ".join(c.get("text", "") for c in m["content"])) for m in first["messages"]
                         if str(m["role"]).lower().endswith("system"))
    return {**result, "version": smolagents.__version__, "agent": "ToolCallingAgent",
            "instructions": system, "tool_schemas": json.dumps(first["tools"]),
            "first_call_messages": json.dumps(first["messages"], default=str)}


# ---------------------------------------------------------------- LangChain

def langchain_side() -> dict:
    from importlib.metadata import version

    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_classic.agents.mrkl.prompt import FORMAT_INSTRUCTIONS, PREFIX, SUFFIX
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import Tool

    def as_tool(function) -> Tool:
        def run(tool_input: str) -> str:
            if function.__name__.endswith("_numbers"):
                return str(function(*(float(part) for part in tool_input.split(","))))
            return "not used in this benchmark"
        return Tool(name=function.__name__, func=run, description=inspect.getdoc(function))

    # The classic zero-shot ReAct prompt, as LangChain ships it in langchain_classic.agents.mrkl.prompt.
    prompt = PromptTemplate.from_template("\n\n".join([PREFIX, "{tools}", FORMAT_INSTRUCTIONS, SUFFIX]))
    tools = [as_tool(function) for function in SEED_TOOLS]
    replies = [f"Thought: add one more\nAction: add_numbers\nAction Input: {n}, 1" for n in range(1, STEPS + 1)]
    replies.append("Thought: I now know the final answer\nFinal Answer: done")
    seen = {}

    class Recording(FakeListLLM):
        def _call(self, prompt, stop=None, run_manager=None, **kwargs):
            seen.setdefault("first", prompt)
            return super()._call(prompt, stop, run_manager, **kwargs)

    def run_once():
        llm = Recording(responses=replies)
        executor = AgentExecutor(agent=create_react_agent(llm, tools, prompt), tools=tools,
                                 max_iterations=STEPS + 5, verbose=False)
        assert executor.invoke({"input": "Add one twenty times, starting from 1."})["output"] == "done"

    result = timed(run_once)
    question = "Add one twenty times, starting from 1."
    return {**result, "version": f"langchain-classic {version('langchain-classic')}, "
                                 f"langchain-core {version('langchain-core')}",
            "agent": "classic ReAct (create_react_agent + AgentExecutor)",
            "instructions": seen["first"].split(f"Question: {question}")[0], "first_call": seen["first"]}


if __name__ == "__main__":
    print(json.dumps({"smolagents": smolagents_side(), "langchain": langchain_side()}))
