"""Turning a conversation you have (a transcript, a chat log) into a trace that `--replay` can measure.

    python agent.py --record conversations/example.script.json [--trace out.jsonl] [--policy pinned]

A script is JSON: a title and a list of turns, each with the user's message, the steps the model took (a thought
and an action, and the tool's result), and the final answer (see conversations/README.md). It is played through
the real loop: a scripted model writes the replies, and each tool answers with the result the script gives for
that step, so the trace holds exactly the events a live run would have written (instructions, contexts, usage
as the scripted model estimates it). A step without a result runs the real tool; tools the project does not
have are stood in for under their own names. The policy's own tools (pin_note, forget) always run for real, so
a script can record a session under pinned or forget. With "protocol": "native" the same steps are played as the
native protocol's structured calls (each action's arguments named by the tool's signature; a stand-in's positional
arguments arg1, arg2, ...) and the answer as plain text. The tools offered are the ones the script's "tools" names,
or without it today's DEFAULT_TOOLS, then a stand-in for each other tool a step calls: a shipped script names its
tools, so a tool added to DEFAULT_TOOLS does not change what it records.
"""
import functools
import json
from pathlib import Path

from agent import TinyReAct
from models import ModelReply, ToolCall
from models.scripted import ScriptedModel
from policies import Policy
from protocols import NativeProtocol, TextProtocol
from replies import ActionError, cut_at_observation, parse_action, parse_reply
from tools import DEFAULT_TOOLS, shipped_by_name, signature
from files import read_json, replacing
from traces import Trace, as_text, header_problem


def record_script(script_path: str, trace_path: str, policy: Policy, on_event=None) -> int:
    """Play the script into a trace file under `policy` (each event handed to `on_event` too, as it is written);
    returns the number of model calls. Raises ValueError naming what is wrong with the script, or what went
    differently from it."""
    if policy.needs_summaries:
        raise ValueError(f"--record plays the script's replies, and {policy.name} would ask the model for summaries "
                         "the script does not hold: record under another policy, then replay it under this one")
    script = read_json(script_path, "a conversation script")
    problem = _script_problem(script)
    if not problem:  # and nothing in the header that replay would refuse
        name = as_text(Path(script_path).name)  # a file name that is not UTF-8 is no text a header holds
        meta = {"title": script.get("title", ""), "recorded": f"from {name} with --record: replies played by the "
                "scripted model, tool results from the script; usage numbers are the scripted model's estimates"}
        problem = header_problem(meta)
    if problem:
        raise ValueError(f"{script_path} is not a conversation script: {problem} (see conversations/README.md)")
    turns, native = script["turns"], script.get("protocol", "text") == "native"
    replies, results = _replies(turns)
    if native:
        replies = [_as_native(reply) for reply in replies]
    model = ScriptedModel(replies)
    used = set()
    tools = _taped_tools(script.get("tools"), results, model, used, policy)
    with replacing(trace_path) as temporary:  # a good trace already there stays until this one is whole
        calls = _play(turns, model, tools, policy, Trace(temporary, meta=meta, on_event=on_event), native)
        unused = sorted(set(results) - used)
        if unused:
            raise ValueError(f"the results scripted for model calls {', '.join(map(str, unused))} were never used: "
                             "their actions were refused by the loop (see the trace's observations)")
    return calls


def _play(turns: list, model: ScriptedModel, tools: list, policy: Policy, trace: Trace, native: bool = False) -> int:
    """Each turn through the loop, into `trace`; raises ValueError when one goes differently from the script."""
    try:
        agent = TinyReAct(model, tools=tools, policy=policy, trace=trace,
                          protocol=NativeProtocol() if native else TextProtocol())
        scripted = 0  # the replies the script gives up to the end of this turn
        for number, turn in enumerate(turns, 1):
            calls = len(turn.get("steps", [])) + 1
            scripted += calls
            agent.ttl = calls
            result = agent.query(turn["user"])
            if result.stop_reason.value != "answer":
                raise ValueError(f"turn {number} ended with {result.stop_reason.value}, not the scripted answer")
            if len(model.calls) != scripted:  # a step's reply held an Answer: later replies would go to later turns
                raise ValueError(f"turn {number} went differently from the script: it ended with the answer "
                                 f"{result.answer!r} at model call {calls - scripted + len(model.calls)} of its "
                                 f"{calls}, not with {turn['answer']!r} at the last")
    finally:
        trace.close()
    if trace.write_error:  # a recording that did not reach its file is no recording
        raise OSError(trace.write_error)
    return len(model.calls)


def _script_problem(script) -> str | None:
    """What is wrong with the shape of a conversation script, in a few words; None when nothing is."""
    if not isinstance(script, dict) or not isinstance(script.get("turns"), list) or not script["turns"]:
        return "it needs a \"turns\" list"
    if script.get("protocol", "text") not in ("text", "native"):
        return "\"protocol\" must be text or native"
    named = script.get("tools", [])
    if not isinstance(named, list) or not all(isinstance(name, str) and name.isidentifier() for name in named):
        return "\"tools\" must be a list of tool names"
    for number, turn in enumerate(script["turns"], 1):
        if (not isinstance(turn, dict) or not isinstance(turn.get("user"), str)
                or not isinstance(turn.get("answer"), str)):
            return f"turn {number} needs \"user\" and \"answer\" as text"
        if not isinstance(turn.get("thought", ""), str) or not isinstance(turn.get("steps", []), list):
            return f"turn {number}: \"thought\" must be text and \"steps\" a list"
        for step in turn.get("steps", []):
            whole = isinstance(step, dict) and isinstance(step.get("reply"), str)
            parts = (isinstance(step, dict) and isinstance(step.get("thought"), str)
                     and isinstance(step.get("action"), str))
            if not (whole or parts):
                return f"turn {number}: each step needs a \"reply\", or a \"thought\" and an \"action\", as text"
    return None


def _replies(turns: list[dict]) -> tuple[list[str], dict[int, tuple[str, str]]]:
    """The model's replies in order, and the scripted tool result of each reply that has one: {call: (tool, text)}."""
    replies, results = [], {}
    for turn in turns:
        steps = turn.get("steps", [])
        for number, step in enumerate(steps, 1):
            if isinstance(step.get("reply"), str):
                reply = step["reply"]
            else:
                reply = f"Thought{number}: {step['thought']}\nAction{number}: {step['action']}"
            replies.append(reply)
            if "result" in step:
                results[len(replies)] = (_tool_name(reply), str(step["result"]))
        replies.append(f"Thought{len(steps) + 1}: {turn.get('thought', 'I can answer now.')}\nAnswer: {turn['answer']}")
    return replies, results


def _as_native(reply: str) -> ModelReply:
    """A scripted reply as the native protocol carries it: its Action as a structured call whose arguments are named
    (by the tool's signature, when the project has the tool; else arg1, arg2, ...), its Thought as the text beside
    it; an answer as its text alone."""
    parsed = parse_reply(cut_at_observation(reply))
    if parsed.action is None:
        return ModelReply(parsed.answer if parsed.answer is not None else reply)
    try:
        call = parse_action(parsed.action)
    except ActionError:  # the loop refuses it as it would refuse the text: its text as the arguments
        return ModelReply(parsed.thought or "", calls=(ToolCall("call_1", _tool_name(reply), parsed.action),))
    tool = shipped_by_name().get(call.name)
    names = [name for name, parameter in signature(tool).parameters.items()
             if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)] if tool else []
    named = {(names[n] if n < len(names) else f"arg{n + 1}"): value for n, value in enumerate(call.args)}
    return ModelReply(parsed.thought or "", calls=(ToolCall("call_1", call.name,
                                                            json.dumps(named | call.kwargs, ensure_ascii=False)),))


def _tool_name(reply: str) -> str:
    """The tool the reply's Action calls, read as the loop reads it; "" when it calls none."""
    try:
        return parse_action(parse_reply(cut_at_observation(reply)).action or "").name
    except ActionError:
        return ""


def _taped_tools(named: list[str] | None, results: dict, model: ScriptedModel, used: set, policy: Policy) -> list:
    """The tools `named` (None: the default tools) and a stand-in for every other tool the script calls, each
    answering with the result scripted for the model call that asked for it (or running for real when the script
    gives none)."""
    registered = shipped_by_name()  # a tool the script names may have left the defaults
    wanted = [tool.__name__ for tool in DEFAULT_TOOLS] if named is None else named
    known = {name: registered.get(name) or _stand_in(name) for name in wanted}
    policy_tools = {tool.__name__ for tool in policy.tools(Trace())}
    for call, (name, _) in results.items():
        if name in policy_tools:  # they run for real, to write their events: their scripted result is not needed
            used.add(call)
        elif name and name not in known:
            known[name] = _stand_in(name)

    def taped(tool):
        @functools.wraps(tool)  # keeps the signature and docstring, so the instructions are the real tool's
        def answer(*args, **kwargs):
            call = len(model.calls)
            if call in results and results[call][0] == tool.__name__:
                used.add(call)
                return results[call][1]
            return tool(*args, **kwargs)
        return answer
    return [taped(tool) for tool in known.values()]


def _stand_in(name: str):
    def tool(*args, **kwargs) -> str:
        """A tool of the recorded conversation; its results come from the script."""
        raise LookupError(f"{name} has no scripted result for this call")
    tool.__name__ = tool.__qualname__ = name
    return tool
