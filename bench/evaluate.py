"""How often does a model answer right through the real loop? An evaluation on a fixed set of questions.

    python bench/evaluate.py [--set tuning|test] [--models qwen,gemma] [--prompt FILE] [--out results.json]
    python bench/evaluate.py --set tuning --llama-python /path/to/python-with-llama-cpp   # the same, through llama.cpp
    python bench/evaluate.py --protocol native --llama-server /path/to/llama-server --models none  # its own server
    python bench/evaluate.py --compare a.json b.json [...]                                 # side by side
    python bench/evaluate.py --layout chat-system        # Qwen's chat template around the transcript (measured worse)
    python bench/evaluate.py --models qwen-1.5b          # the opt-in Qwen2.5-Coder 1.5B (requirements-1.5b.txt)
    python bench/evaluate.py --only 31,37                # those questions of the set alone (numbered from 1)
    python bench/evaluate.py --models openai:gpt-5.6-luna --via batch  # first calls in one batch, at half price

Each question of the set (bench/questions/tuning.json or test.json) is run through the real loop: TinyReAct's
prompt (or the template in --prompt), its tools, the full policy, greedy decoding. The network tools point at a
closed local port, so nothing depends on the internet: a model that calls them gets an Error observation, as it
would offline, and the `declines` questions are right only when the answer says it could not find out. An answer
is right when it holds one of the expected values as whole words (experiments.facts.matches); ERROR stands for an
honest refusal to divide by zero, DECLINE for an honest "could not look it up".

Every answer is printed and kept, with the actions taken and the stop reason; the totals are per kind, with Wilson
95% intervals. --out saves it all as JSON, with the names of the tools offered and a digest of the instructions
(a run saved before runs named their tools offered FIRST_TOOLS), and --compare prints several saved runs side by
side, one column each, so that two prompts are compared on the same questions (scored again from their kept
answers, with today's rule).
With --llama-python (or LLAMA_PYTHON) the embedded Qwen file is also served by llama.cpp's OpenAI-compatible server
(llama-cpp-python) and asked the same questions through the `llamacpp:` backend, at temperature 0. The choice of a
prompt is made on the tuning set; the test set is for reporting the chosen one, once. A benchmark, not a test: a
full run takes minutes. --only N,M asks those questions alone (numbered from 1 in the set's order), for a change
that can alter only some runs (greedy decoding asks the others exactly as before); the saved run names them under
`only`, its totals count them alone, and --compare puts it beside whole runs as it is, so say so where it is quoted.
Exit codes as agent.py's: 2 for what it was given (an option, a file for --compare, a model without its key or
server), 1 when a batch fails or --out cannot be written, 130 interrupted; each error is one line.
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

from repository import ROOT  # importing it puts ROOT on the import path
from tools import FIRST_DEFAULTS  # names only: importing the tools needs nothing installed
MODELS = {"qwen": "local:qwen2.5-coder-0.5b", "gemma": "local:gemma-270m", "qwen-1.5b": "local:qwen2.5-coder-1.5b"}
# How the embedded Qwen is given the conversation: the plain transcript it continues (models/embedded/local.py), or that
# transcript inside Qwen's chat template, the instructions as the system turn and the question as the user turn
# (chat-system), or both in the user turn after Qwen's default system turn (chat-user); the replies and
# observations so far go on in the assistant turn, which the model continues.
LAYOUTS = ("transcript", "chat-system", "chat-user")
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
SETS = {name: os.path.join(ROOT, "bench", "questions", f"{name}.json") for name in ("tuning", "test")}
# The tools of a saved run that names none: every run saved before runs named their tools was made with these,
# the default tools from the first release until then.
FIRST_TOOLS = FIRST_DEFAULTS
# What stands for a right answer where no number is: a refusal to divide by zero, or saying a lookup failed.
MEANS = {"ERROR": "zero|undefined|not defined|error|impossible|cannot|can't|not possible",
         "DECLINE": "cannot|can't|could not|couldn't|unable|not able|unavailable|not available|no access|"
                    "don't know|do not know|error|failed|offline|no network|no internet"}


def expected_values(expected: str) -> list[str]:
    return [value for choice in expected.split("|") for value in MEANS.get(choice, choice).split("|")]


def scored(answer: str | None, expected: str) -> bool:
    """Whether an answer holds one of the expected values as whole words (experiments.facts.matches)."""
    from experiments.facts import matches
    return any(matches(answer, value) for value in expected_values(expected))


def rescored(run: dict) -> dict:
    """A saved run scored again from its kept answers with today's matcher, so that runs saved before a change to
    it are compared on the same rule."""
    answers = [{**answer, "right": scored(answer["answer"], answer["expected"])} for answer in run["answers"]]
    return {**run, "answers": answers, "kinds": per_kind(answers)}


def run_tools(run: dict) -> list[str]:
    """The names of the tools a saved run offered the model, in the order its instructions list them."""
    return run.get("tools", FIRST_TOOLS)


def wilson(k: int, n: int) -> tuple[float, float]:
    from experiments.probe import wilson as interval
    return interval(k, n)


def chat_layout(model, layout: str) -> None:
    """Make the embedded Qwen `model` see its transcript inside its chat template (see LAYOUTS). The template's
    markers are its control tokens; every text between them is encoded as text, so none can forge one."""
    from models.embedded.local import transcript

    def marker(text: str) -> list[int]:
        return model.tokenizer.encode(text, special=True)

    def turn(role: str, text: str) -> list[int]:
        return marker("<|im_start|>") + model.tokenizer.encode(f"{role}\n{text}") + marker("<|im_end|>") + \
            model.tokenizer.encode("\n")

    def prompt_ids(messages) -> tuple[list[int], str]:
        texts = [part.text for message in messages for part in message.parts]
        instructions, question, after = texts[0], texts[1], texts[2:]
        _, opening = transcript(messages)
        if layout == "chat-system":
            ids = turn("system", instructions) + turn("user", question)
        else:
            ids = turn("system", QWEN_SYSTEM) + turn("user", f"{instructions}\n{question}")
        ids += marker("<|im_start|>") + model.tokenizer.encode("assistant\n" + "".join(t + "\n" for t in after)
                                                               + opening)
        return ids, opening

    model.prompt_ids = prompt_ids  # the rest of generate (window, saved starts, stop rule, reply) is the model's own


def evaluate(spec: str, questions: list, prompt: str | None, label: str, layout: str = "transcript",
             offered: list | None = None, protocol: str = "text", via=None) -> dict:
    """Every question through the loop with the model `spec`, the tools `offered` (by default DEFAULT_TOOLS) and the
    protocol: each answer, and the totals per kind. With `via` (the options, when --via batch is given), every
    question's first call goes in one batch first (first_calls_in_a_batch)."""
    import prompts
    from agent import TinyReAct
    from cli.output import fail
    from models import ModelConfigError, load_model
    from protocols import NativeProtocol, TextProtocol
    from replies import ActionError
    from tools import DEFAULT_TOOLS

    offered = offered or DEFAULT_TOOLS
    speaking = NativeProtocol(prompt) if protocol == "native" and prompt else \
        NativeProtocol() if protocol == "native" else TextProtocol()
    tools = {tool.__name__: tool for tool in offered}
    try:
        model = load_model(spec)
    except (ModelConfigError, ValueError) as problem:  # a network model without its key, a bad spec: one line
        raise SystemExit(fail(str(problem))) from None
    if layout != "transcript":
        chat_layout(model, layout)
    if prompt and protocol == "text":
        prompts.PROFILES[model.name] = os.path.abspath(prompt)
    if via is not None:
        model = first_calls_in_a_batch(via, model, questions, offered, speaking)
    started, answers = time.perf_counter(), []
    for kind, question, expected in questions:
        began = time.perf_counter()
        result = TinyReAct(model, tools=offered, protocol=speaking).query(question)
        if isinstance(result.error, ModelConfigError) and not answers:  # no server at the URL, a key refused, at
            raise SystemExit(fail(f"{spec}: {result.error}"))  # the first question: none will do; later, it is scored
        actions = [e["text"] for e in result.trace if e["type"] == "action"]
        calls = [action for e in result.trace if e["type"] == "reply"  # each reply read again, as the loop read it
                 for action in speaking.read(e).actions]
        unrunnable = 0
        for action in calls:  # the loop could not run it as written
            try:
                speaking.call(action, tools)
            except (ActionError, TypeError, ValueError):
                unrunnable += 1
        right = scored(result.answer, expected)
        answers.append({"kind": kind, "question": question, "expected": expected, "answer": result.answer,
                        "right": right, "stop_reason": result.stop_reason.value, "actions": actions,
                        "unrunnable": unrunnable, "model_calls": result.model_calls,
                        "seconds": round(time.perf_counter() - began, 2)})
        print(f"  {'right' if right else 'wrong'}  {question} expected {expected}: {result.answer!r} "
              f"({result.stop_reason.value}) {actions}", flush=True)
    from tokens import count_tokens
    instructions = offered_text(speaking.offer(offered, model.name))
    default_prompt = prompts.template_for(model.name) if protocol == "text" else "native.txt"
    return {"label": label, "model": model.name, "spec": spec, "prompt": prompt or default_prompt, "protocol": protocol,
            "layout": layout,
            "instruction_tokens": count_tokens(instructions),
            "instructions_sha256": text_sha256(instructions),  # the text, tools included
            "tools": [tool.__name__ for tool in offered],
            "seconds": round(time.perf_counter() - started, 1),
            "answers": answers, "kinds": per_kind(answers)}


def via_problem(args) -> str | None:
    """What does not go with --via, said before any work."""
    if (args.ledger or args.max_cost is not None or args.yes) and not args.via:
        return "--ledger, --max-cost and --yes only work with --via batch"
    if args.via and args.protocol != "text":
        return "--via batch asks the text protocol's first calls: it does not go with --protocol native"
    return None


def first_calls_in_a_batch(args, model, questions: list, offered: list, speaking):
    """--via batch: every question's first call, as the loop would make it (learned by running the loop until that
    call), sent in one batch, its price shown first and its ledger beside --out (or evaluate.batch-RUN.jsonl here);
    the model then answers each first call from the batch and any later call (after a tool ran) itself. A question
    the model answers in one call is answered at batch rates alone."""
    from agent import TinyReAct
    from cli.output import UsageError, fail
    from cli.sending import check_via, open_run, price_before_sending, resume_line, say
    from experiments.batch import FirstCall, Prefetched
    from models import ModelError
    from tokens import local_counter

    recorder = FirstCall(model)
    for _, question, _ in questions:
        TinyReAct(recorder, tools=offered, protocol=speaking).query(question)
    try:
        check_via(args, model)
        asked = [messages for messages, _ in recorder.asked]
        batch = open_run(args, args.out or "evaluate.json", model, asked)
        price_before_sending(args, model, asked, local_counter(), batch)
    except UsageError as problem:
        raise SystemExit(fail(str(problem))) from None
    try:
        replies = batch.replies(lambda text: print(text, flush=True), say)
    except KeyboardInterrupt:
        print(resume_line(args, "bench/evaluate.py"), file=sys.stderr)
        raise SystemExit(130) from None
    except ModelError as problem:  # a batch that failed or expired, a call that failed twice: one line
        raise SystemExit(f"error: {problem}") from None
    return Prefetched(model, batch.service, recorder.asked, replies)


def offered_text(offer) -> str:
    """What a run's instructions digest and token count are of: the instructions, then the tools' schemas as the
    protocol's first form sent them, as JSON ("" for the text protocol, which sends none). Runs saved before the
    schemas were added (0f57a8d) digested the instructions alone."""
    return offer.instructions + json.dumps({"tools": offer.schemas} if offer.schemas is not None else "")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def per_kind(answers: list[dict]) -> dict:
    right, asked = Counter(), Counter()
    for answer in answers:
        asked[answer["kind"]] += 1
        right[answer["kind"]] += answer["right"]
    rows = {kind: {"k": right[kind], "n": asked[kind]} for kind in asked}
    rows["all"] = {"k": sum(right.values()), "n": sum(asked.values())}
    for row in rows.values():
        row["low"], row["high"] = (round(x, 3) for x in wilson(row["k"], row["n"]))
    return rows


def cell(row: dict | None) -> str:
    if not row:
        return ""
    return f"{row['k']}/{row['n']} ({row['low'] * 100:.0f}–{row['high'] * 100:.0f}%)"


def table(results: list[dict]) -> str:
    """Several runs side by side: a row per kind, a column per run, k/n with the Wilson 95% interval."""
    kinds = list(dict.fromkeys(kind for result in results for kind in result["kinds"] if kind != "all")) + ["all"]
    head = ["kind"] + [f"{r['label']} ({r['model']})" for r in results]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(results)]
    for kind in kinds:
        lines.append("| " + " | ".join([kind] + [cell(r["kinds"].get(kind)) for r in results]) + " |")
    lines.append("| instruction tokens | " + " | ".join(str(r["instruction_tokens"]) for r in results) + " |")
    lines.append("| seconds | " + " | ".join(str(r["seconds"]) for r in results) + " |")
    return "\n".join(lines)


def wrong_answers(result: dict) -> str:
    return "\n".join(f"- {a['kind']}: {a['question']} expected {a['expected']}, answered {a['answer']!r} "
                     f"({a['stop_reason']}; {len(a['actions'])} actions)" for a in result["answers"] if not a["right"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def llama_server(python: str | None, folder: str, path: str, alias: str, context: int = 8192,
                 binary: str | None = None):
    """llama.cpp's OpenAI-compatible server on the GGUF file at `path`, answering to the model name `alias`:
    llama-cpp-python's, started in `python`, or llama.cpp's own `binary` (llama-server, with --jinja, so that it
    renders the model's chat template with the tools and reads the model's calls back as tool_calls: its
    tools/server/README.md); (process, base URL)."""
    port = free_port()
    log = open(os.path.join(folder, "server.log"), "w+")  # the server writes much: a pipe would fill and stop it
    command = ([binary, "--model", str(path), "--port", str(port), "--ctx-size", str(context), "--threads", "2",
                "--alias", alias, "--jinja"] if binary else
               [python, "-m", "llama_cpp.server", "--model", str(path), "--port", str(port), "--n_ctx", str(context),
                "--n_threads", "2", "--model_alias", alias])
    process = subprocess.Popen(command, stdout=log, stderr=log, text=True)
    import requests
    for _ in range(600):
        try:
            if requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).ok:
                return process, f"http://127.0.0.1:{port}/v1"
        except requests.RequestException:
            pass
        if process.poll() is not None:
            log.seek(0)
            raise SystemExit(f"llama.cpp's server did not start: {log.read()[-500:]}")
        time.sleep(0.5)
    process.kill()
    raise SystemExit("llama.cpp's server did not answer within 5 minutes")


def gguf_name(path: str) -> str:
    """The name a GGUF file gives its model (general.name), or its file name when it gives none."""
    from models.embedded.gguf_file import read_metadata

    with open(path, "rb") as stream:
        metadata, _ = read_metadata(stream, lambda key: key == "general.name")
    return str(metadata.get("general.name") or os.path.basename(path))


def numbers(text: str) -> list[int]:
    """Question numbers from 1, comma-separated, for argparse: anything else is its one-line usage error."""
    return [positive(number) for number in text.split(",")]


def positive(text: str) -> int:
    """A count from 1, for argparse: anything else is its one-line usage error."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1, not {text!r}")
    return number


def prompt_problem(path: str) -> str | None:
    """Why --prompt's file is no instruction template, in a few words; None when it renders."""
    import prompts

    if not os.path.isfile(path):
        said = "a folder" if os.path.isdir(path) else "no such file" if not os.path.exists(path) else "not a file"
        return f"{said} (an instruction template, as prompts/*.txt)"
    return prompts.template_problem(path)


def main() -> None:
    from cli.arguments import dollars_given
    from cli.output import fail

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="tuning", help="which questions (default: tuning)")
    parser.add_argument("--models", default="qwen",
                        help="embedded models, comma-separated: qwen, gemma, qwen-1.5b (opt-in), or none")
    parser.add_argument("--layout", choices=LAYOUTS, default="transcript",
                        help="how the embedded Qwen sees the conversation (default: transcript)")
    parser.add_argument("--prompt", help="an instruction template to use instead of the model's own (prompts/*.txt)")
    parser.add_argument("--protocol", choices=["text", "native"], default="text",
                        help="how tools are offered and calls read (default: text; native: the models' own tool "
                             "calling, its prompt prompts/native.txt unless --prompt)")
    parser.add_argument("--label", help="the name of this run in tables (default: the prompt's file name)")
    parser.add_argument("--limit", type=positive, help="only the first N questions (N from 1)")
    parser.add_argument("--only", type=numbers, help="only these questions, comma-separated numbers from 1 in the "
                                                     "set's order (for a change that alters only some runs)")
    parser.add_argument("--llama-python", default=os.environ.get("LLAMA_PYTHON"),
                        help="a Python with llama-cpp-python[server]: also ask llama.cpp, serving the Qwen file "
                             "(the 1.5B one when --models names qwen-1.5b)")
    parser.add_argument("--llama-server", help="llama.cpp's own llama-server binary: ask it instead of "
                                               "llama-cpp-python's server (it reads native tool calls, with --jinja)")
    parser.add_argument("--gguf", help="with --llama-python: serve this GGUF file instead of the embedded Qwen's, "
                                       "under the Qwen model's name, so with its prompt unless --prompt says "
                                       "otherwise (add --models none to ask llama.cpp alone)")
    parser.add_argument("--tools", help="the tools offered, comma-separated names (default: DEFAULT_TOOLS); any "
                                        "tool the project ships (tools.SHIPPED)")
    parser.add_argument("--out", help="save every answer and the totals as JSON")
    parser.add_argument("--compare", nargs="+", metavar="RESULTS.json", help="print saved runs side by side and exit")
    parser.add_argument("--via", choices=["batch"],
                        help="with a network model in --models (openai:NAME, gemini:NAME): every question's first "
                             "call sent in one batch at about half price, the later calls (after a tool ran) one by "
                             "one; the price is shown before sending (see agent.py --via)")
    parser.add_argument("--ledger", metavar="FILE.jsonl", help="with --via batch: the ledger (default: beside --out)")
    parser.add_argument("--max-cost", type=dollars_given, metavar="USD", dest="max_cost",
                        help="with --via: send nothing above USD at batch rates")
    parser.add_argument("--yes", action="store_true", help="with --via: send without asking")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    if args.gguf and not (args.llama_python or args.llama_server):
        parser.error("--gguf is served by llama.cpp: give --llama-python (or LLAMA_PYTHON) too")
    if args.compare:
        print(table([rescored(run) for path in args.compare for run in saved_runs(path)]))
        return
    offered = offered_tools(args.tools)
    unknown = [name for name in args.models.split(",") if name and name != "none" and name not in MODELS
               and ":" not in name]
    if unknown:
        parser.error(f"--models: no embedded model {unknown[0]!r}: choose from {', '.join(MODELS)}, or none, or "
                     "name a model spec (openai:NAME)")
    if via_problem(args):
        parser.error(via_problem(args))
    problem = prompt_problem(args.prompt) if args.prompt else None
    if problem:
        parser.error(f"--prompt {args.prompt}: {problem}")
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise SystemExit(fail(f"--out {args.out}: its folder does not exist"))  # said now, not after the run
    with open(SETS[args.set], encoding="utf-8") as file:
        questions = json.load(file)["questions"][:args.limit]
    if args.only:
        if max(args.only) > len(questions):
            parser.error(f"--only: the {args.set} set has {len(questions)} questions, not {max(args.only)}")
        questions = [questions[number - 1] for number in args.only]
    # The network tools fail at once, as offline: nothing here may depend on the internet.
    os.environ.update(WIKIPEDIA_API_URL="http://127.0.0.1:9/w/api.php", OPEN_METEO_URL="http://127.0.0.1:9/v1/forecast")
    label = args.label or (os.path.basename(args.prompt) if args.prompt else
                           "native" if args.protocol == "native" else "default")
    names = [n for n in args.models.split(",") if n and n != "none"]
    runs = []
    for name in names:
        print(f"{name}, {args.set} set, prompt {label}, layout {args.layout}:", flush=True)
        runs.append(evaluate(MODELS.get(name, name), questions, args.prompt, label,
                             args.layout if name != "gemma" else "transcript", offered, args.protocol,
                             args if args.via else None))
    if args.llama_python or args.llama_server:
        from models.embedded.cache import ModelCache
        from models.embedded.qwen import LARGER, SMALL

        qwen = LARGER if "qwen-1.5b" in names else SMALL  # llama.cpp serves the Qwen file asked of numpy, or --gguf
        with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as folder:
            path = args.gguf or str(ModelCache(folder).join(qwen.weights))
            served = f" · {os.path.basename(args.gguf)}" if args.gguf else ""
            # The server answers to the name it is given, which also chooses the prompt profile; the run is named
            # by what the file holds.
            server, url = llama_server(args.llama_python, folder, path, alias=qwen.name, binary=args.llama_server)
            try:
                os.environ["LLAMACPP_BASE_URL"] = url
                print(f"llamacpp:{qwen.name} (llama.cpp's server{served}), {args.set} set, prompt {label}:",
                      flush=True)
                runs.append(evaluate(f"llamacpp:{qwen.name}", questions, args.prompt, label + " · llama.cpp" + served,
                                     offered=offered, protocol=args.protocol))
                runs[-1]["model"] = gguf_name(args.gguf) if args.gguf else qwen.name
            finally:
                server.terminate()
                server.wait(timeout=30)
    for run in runs:
        print(f"\n{run['label']} ({run['model']}), wrong answers:\n{wrong_answers(run) or '- none'}")
    print("\n" + table(runs))
    if args.out:
        from files import write_whole

        saved = {"set": args.set, "created": time.strftime("%Y-%m-%d %H:%M"), "runs": runs}
        if args.only:
            saved["only"] = args.only  # the question numbers asked: the totals are theirs alone
        try:
            write_whole(args.out, json.dumps(saved, ensure_ascii=False, indent=1).encode("utf-8"))
        except OSError as problem:
            raise SystemExit(f"error: cannot write {args.out}: {problem.strerror or problem} (the table above "
                             "holds the results)") from None


def offered_tools(names: str | None) -> list | None:
    """The tools --tools names, or None for the defaults; SystemExit, one line, for a name no shipped tool has."""
    from cli.output import fail
    from tools import tools_named

    if not names:
        return None
    try:
        return tools_named(name.strip() for name in names.split(",") if name.strip())
    except KeyError as missing:
        raise SystemExit(fail(f"--tools: {missing.args[0]}")) from None


def saved_runs(path: str) -> list[dict]:
    """The runs of a results file --out wrote; SystemExit, one line, for a file that is missing or not one (read
    within bounds: a FIFO would block), or one whose runs the table cannot be made from."""
    from cli.output import fail
    from files import read_json

    try:
        runs = read_json(path, "a results file")["runs"]
        if not isinstance(runs, list) or not all(isinstance(run, dict) and "answers" in run for run in runs):
            raise ValueError("its runs are not runs")
        table([rescored(run) for run in runs])  # every field the comparison reads, of the types it reads
        return runs
    except OSError as problem:
        raise SystemExit(fail(f"cannot read {path}: {problem.strerror or problem}")) from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as problem:
        why = ("not JSON" if isinstance(problem, json.JSONDecodeError)
               else f"no {problem.args[0]!r} field where the comparison reads one" if isinstance(problem, KeyError)
               else str(problem).removeprefix(f"{path} is not a results file: ") or type(problem).__name__)
        raise SystemExit(fail(f"{path} is not a results file of bench/evaluate.py --out: {why[:80]}")) from None


if __name__ == "__main__":
    main()
