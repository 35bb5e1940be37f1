"""LoCoMo, replayed: for each of the benchmark's questions, whether the dialogue turns that answer it (its evidence)
are still in the context each policy would send when the question is asked, by LoCoMo's five categories with Wilson
intervals, and what each policy costs with and without prompt caching under three providers' rules.

    python bench/locomo.py PATH/locomo10.zip [--policies LIST] [--conversations N|A-B] [--json] [--plot FILE.svg]
                           [--corrections AUDIT.json] [--cache-ttl SECONDS|none] [--summarizer SPEC|none]
    python bench/locomo.py PATH/locomo10.zip --probe --model SPEC [--sample N] [--policies LIST] [--answers FILE]
    python bench/locomo.py PATH/locomo10.zip --probe --reader likelihood --model local:qwen2.5-coder-0.5b [...]
    python bench/locomo.py PATH/locomo10.zip --probe --model openai:gpt-5.6-luna --via batch|flex [--yes] [...]

The data is not shipped: LoCoMo's repository (github.com/snap-research/locomo) has no license file, so it is read
from the path given, as released: its data/locomo10.json (a list of ten samples, each a `conversation` and its `qa`),
or a zip holding that file or one JSON file a conversation (the `locomo10_v2` layout: each file a conversation's
fields and its `qa` at the top level). The tests use a small synthetic file of the same shape
(tests/fixtures/locomo_synthetic.json), written for this project.

How a conversation becomes a trace. A trace knows a user and a model, LoCoMo two people talking: the first speaker
(`speaker_a`) is the user and the second the model, so each of the first speaker's lines is a question and the
second speaker's reply its answer, one model call a pair, recorded through the real loop with no tools
(experiments/recording.py). So the policies that keep the user's words (user-only, the key-facts rule) keep the
first speaker's lines and not the second's, as they would keep a user's and not an assistant's. Each line is
"Name: text" (whitespace made single spaces; a shared photo's caption after it as "[shares a photo: caption]"), the
evidence looked for is that line. Each session's first question begins with its date, "[Session 3, 7:55 pm on 9
June, 2023]", so the dates temporal questions need are in the trace as LoCoMo gives them. A session that begins
with the second speaker gets a question holding only that date line; one that ends with the first speaker gets
the answer "[the session ends]".

What is measured. The questions are asked after the last session, as LoCoMo asks them: for each question and policy,
the context the policy would render with the question as the current turn, and in it each evidence line, whole or as
the key-facts block keeps it (every sentence of four words or more): all there (kept), some (partly) or none (gone);
a temporal question's lines count as kept only with their session's date line beside them. The headline share leaves
out the adversarial category (it asks what the conversation never says of that person, the right answer being that
it was not mentioned: its cited lines are not what an answer needs) and has two intervals, Wilson's and a bootstrap
over the conversations, as one conversation's questions are not independent. Every call is priced at its time (see
TURN_SECONDS below), the questions' calls too, so a session days after the one before reads nothing from a cache. A
question that lists no evidence is not scored; one naming a line the conversation lacks ("D10:19" in a session of 18
lines) is scored on the lines it has; the output names each. The categories are numbered in the data and named
nowhere in it; the names here follow LoCoMo's own scoring code (task_eval/evaluation.py scores category 1 as several
answers, 5 as adversarial) and the answers' shape (category 2's are dates): 1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial.

A summarising policy (compact:T, the vendors' compaction) is replayed with the summaries it asks for, written by
--summarizer (the embedded 0.5B by default, loaded only when a summary is not cached) and cached in --summaries
(locomo.summaries.json here) by a digest of what each summarises, so a second run calls no model. The questions are
asked after the summaries the sessions made, and after the one the policy asks for once the sessions are over, if it
does: made before the questions, it is the same for each of them, and priced once. --probe asks under such a policy
after the same summaries.

--probe asks a seeded sample of the questions of the model given, under each policy, and scores each answer
judge-free with LoCoMo's token F1 (task_eval/evaluation.py: lower case, punctuation, articles and "and" removed,
Porter stems; category 1's answer split at commas, each part scored against the best part of the reply, averaged;
category 3's gold cut at its first ";"; category 5 scores 1 when the reply says "no information available" or "not
mentioned"). The stemmer is nltk's (pip install nltk). With --via batch the calls go as one batch (experiments/batch.py,
its ledger resuming a run killed midway) and with --via flex through OpenAI's flex tier, their price shown before
anything is sent, as agent.py's --probe --via does (cli/sending.py).
"""
import argparse
import copy
import hashlib
import itertools
import json
import os
import random
import re
import sys
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field

import repository  # noqa: F401  (importing it puts the repository's root on the import path)
from files import kind_of  # noqa: E402  (after the path is set)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
POLICIES = "full,window:8,user-only:4,elide:2,facts,window:8+facts,retrieve:8,budget:4000,stable,cold"
RULES = ["gemini-3.8-flash", "gpt-5.6-sol", "claude-haiku-4-5"]  # three providers' caching rules (models/prices.json)
MAX_FILE = 200_000_000  # bytes: the data is 2.6 MB unpacked; anything this large is not it
# "D1:3", and the data's slips: "D:11:26", "D30:05" (the spaces bounded, so that no text makes it backtrack long)
EVIDENCE = re.compile(r"D\s{0,3}:?\s{0,3}(\d{1,6})\s{0,3}:\s{0,3}(\d{1,6})")
ASK = ("{question} Answer in a short phrase, with the conversation's own words where you can. If the conversation "
       "does not say, answer: Not mentioned in the conversation.")
ENDS = "[the session ends]"
OFF_CHART = 3  # a policy dearer than this many times full history is left off the chart (and named)
# Time. LoCoMo dates each session ("1:56 pm on 8 May, 2023") and gives no time within one: each session's first call
# is made at its date, each later call TURN_SECONDS after the one before (a person's reply in a chat), and the
# questions are asked after the last session, one after another, the first TURN_SECONDS after its last call.
SESSION_DATE = "%I:%M %p on %d %B, %Y"
TURN_SECONDS = 30
HEADLINE = (1, 2, 3, 4)  # the headline's categories: an adversarial question's right answer is that it was not said
BOOTSTRAP = 2000  # resamples of the conversations for the clustered interval
OFFLINE_SUMMARIZER = "local:qwen2.5-coder-0.5b"  # as agent.py's --replay writes summaries with no --model
AUDIT_ID = re.compile(r"locomo_(\d{1,3})_qa(\d{1,5})")
MAX_CORRECTIONS = 5_000_000  # bytes: the audit is about 150 KB


@dataclass
class Question:
    number: int  # 1-based, in the conversation's qa list
    text: str
    answer: str  # the gold answer (category 5's adversarial answer is a wrong one, kept apart)
    category: int
    evidence: list[str]  # dialogue ids, "D1:3"
    unread: int = 0  # evidence entries that name no dialogue id ("D")
    corrected: list[str] | None = None  # the audit's evidence, where --corrections gives other evidence
    corrected_answer: str | None = None  # the audit's answer, where --corrections gives another


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: list[tuple[int, str, list[dict]]]  # (number, date, [{"dia_id", "speaker", "text", ...}])
    questions: list[Question]
    lines: dict[str, str] = field(default_factory=dict)  # dialogue id: the line looked for as its evidence


def rules() -> list[tuple[str, object]]:
    """(model, its list price) for each rule the costs are given under; a price file that drops one is an error."""
    from models.prices import price_of

    priced = [(name, price_of(name)) for name in RULES]
    if any(price is None for _, price in priced):
        raise DataError("a price file (TINYREACT_PRICES) replaced the table without " + ", ".join(RULES))
    return priced


class DataError(ValueError):
    """The file is not LoCoMo's data: one line says why."""


def read(path: str) -> list[Conversation]:
    """Every conversation in the file (data/locomo10.json, or a zip of it or of one file a conversation)."""
    if os.path.isdir(path):
        raise DataError(f"{path} is a folder: name LoCoMo's data/locomo10.json, or a zip of it")
    if not os.path.isfile(path):
        raise DataError(f"{path}: " + (f"it is {kind_of(os.stat(path).st_mode)}, not a regular file"
                                       if os.path.exists(path) else "no such file"))
    if os.path.getsize(path) > MAX_FILE:
        raise DataError(f"{path}: {os.path.getsize(path):,} bytes, more than LoCoMo's data could be")
    if zipfile.is_zipfile(path):
        return _conversations(path, _unzipped(path))
    with open(path, "rb") as file:
        return _conversations(path, [(os.path.basename(path), _json(file.read(), path))])


def _unzipped(path: str) -> list[tuple[str, object]]:
    """Each JSON file of a zip, read; a damaged, encrypted or oversized archive is a DataError."""
    import zlib

    try:
        with zipfile.ZipFile(path) as archive:
            members = sorted((info for info in archive.infolist()
                              if info.filename.endswith(".json") and not info.is_dir()), key=lambda i: i.filename)
            if sum(info.file_size for info in members) > MAX_FILE:
                raise DataError(f"{path}: its JSON files unpack to more than {MAX_FILE:,} bytes")
            return [(info.filename, _json(archive.read(info), f"{path}:{info.filename}")) for info in members]
    except (zipfile.BadZipFile, zlib.error, RuntimeError, OSError, EOFError, NotImplementedError) as problem:
        raise DataError(f"{path}: a zip that cannot be read ({str(problem)[:80]})") from None


def _conversations(path: str, loaded: list[tuple[str, object]]) -> list[Conversation]:
    samples = [(f"{name}#{n}" if isinstance(data, list) else name, sample) for name, data in loaded
               for n, sample in enumerate(data if isinstance(data, list) else [data], 1)]
    conversations = [conversation(name, sample) for name, sample in samples]
    if not conversations:
        raise DataError(f"{path}: no conversation in it (LoCoMo's data/locomo10.json, or a zip of it)")
    return conversations


def _json(data: bytes, where: str):
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as problem:
        raise DataError(f"{where}: not JSON ({str(problem)[:80]})") from None


def conversation(name: str, sample) -> Conversation:
    """One sample, checked: its sessions in order, its questions with their evidence ids read."""
    if not isinstance(sample, dict):
        raise DataError(f"{name}: a sample must be an object with a conversation and its qa")
    fields = sample.get("conversation", sample)  # data/locomo10.json nests them; the v2 files do not
    qa = sample.get("qa")
    if not isinstance(fields, dict) or not isinstance(qa, list):
        raise DataError(f"{name}: a sample needs a conversation's fields and a qa list")
    speakers = fields.get("speaker_a"), fields.get("speaker_b")
    if not all(isinstance(speaker, str) and speaker for speaker in speakers):
        raise DataError(f"{name}: speaker_a and speaker_b must be names")
    sessions = []
    for key in fields:
        found = re.fullmatch(r"session_(\d+)", key)
        if found and len(found[1]) > 6:
            raise DataError(f"{name}: {key[:40]} is numbered past any conversation's sessions")
        if found and fields[key]:
            turns = fields[key]
            if not isinstance(turns, list) or not all(isinstance(turn, dict) and isinstance(turn.get("text"), str)
                                                      and isinstance(turn.get("dia_id"), str) for turn in turns):
                raise DataError(f"{name}: {key} must be a list of turns, each with a dia_id and a text")
            sessions.append((int(found[1]), fields.get(f"{key}_date_time"), turns))
    numbers = Counter(number for number, _, _ in sessions)
    if any(count > 1 for count in numbers.values()):
        raise DataError(f"{name}: two sessions numbered {next(n for n, c in numbers.items() if c > 1)}")
    if not sessions:
        raise DataError(f"{name}: no session_N holds a turn")
    questions = []
    for number, item in enumerate(qa, 1):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) \
                or item.get("category") not in CATEGORIES:
            raise DataError(f"{name}: question {number} needs a question and a category from 1 to 5")
        evidence = item.get("evidence") if isinstance(item.get("evidence"), list) else []
        ids = [f"D{int(session)}:{int(line)}" for text in evidence if isinstance(text, str)
               for session, line in EVIDENCE.findall(text)]
        unread = sum(not (isinstance(text, str) and EVIDENCE.search(text)) for text in evidence)  # "D", a number
        questions.append(Question(number, item["question"], str(item.get("answer", "")), item["category"],
                                  list(dict.fromkeys(ids)), unread))
    for number, date, _ in sessions:  # the calls are paced by them (call_times)
        if not isinstance(date, str) or session_time(date) is None:
            shown = json.dumps(date)[:40]
            raise DataError(f"{name}: session_{number}_date_time {shown} is not written as LoCoMo writes them "
                            "(1:56 pm on 8 May, 2023)")
    return Conversation(name, speakers, sorted(sessions, key=lambda session: session[0]), questions)


def line_of(turn: dict) -> str:
    """A dialogue turn as the trace holds it, and as its evidence is looked for."""
    text = " ".join(f"{turn.get('speaker', '?')}: {turn['text']}".split())
    caption = turn.get("blip_caption")
    return text + (f" [shares a photo: {' '.join(caption.split())}]" if isinstance(caption, str) and caption else "")


def script(conv: Conversation) -> dict:
    """The conversation as a script for --record: the first speaker's lines the questions, the second's the
    answers; conv.lines filled with each dialogue id's line."""
    first = conv.speakers[0]
    turns = []
    for number, date, session in conv.sessions:
        waiting = [f"[Session {number}, {date}]" if date else f"[Session {number}]"]  # the next question's text
        asked = False  # whether it holds a line of the first speaker's
        for turn in session:
            line = line_of(turn)
            conv.lines[_id(turn["dia_id"])] = line
            if turn.get("speaker") == first:
                if asked:  # the first speaker twice in a row (not in LoCoMo): the earlier line goes unanswered
                    turns.append({"user": " ".join(waiting), "answer": ENDS})
                    waiting = []
                waiting.append(line)
                asked = True
            else:
                turns.append({"user": " ".join(waiting) or "[...]", "answer": line})
                waiting, asked = [], False
        if asked:
            turns.append({"user": " ".join(waiting), "answer": ENDS})
    return {"title": f"LoCoMo {conv.name}: {conv.speakers[0]} (as the user) and {conv.speakers[1]} (as the model)",
            "tools": [], "turns": turns}


def _id(text: str) -> str:
    found = EVIDENCE.search(text)
    return f"D{int(found[1])}:{int(found[2])}" if found else text


def record(conv: Conversation, folder: str) -> list[dict]:
    """The conversation played through the loop into a trace (under full history: no model call is made)."""
    from experiments.recording import record_script
    from policies.full import FullHistory
    from traces import read_trace_file

    # a file name of its own, however long or odd the conversation's name (a zip's member may be 60,000 characters)
    named = hashlib.sha256(conv.name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = os.path.join(folder, re.sub(r"[^\w.-]", "_", conv.name)[:60] + "-" + named)
    with open(stem + ".script.json", "w", encoding="utf-8") as file:
        json.dump(script(conv), file, ensure_ascii=False)
    record_script(stem + ".script.json", stem + ".jsonl", FullHistory())
    return read_trace_file(stem + ".jsonl")


def evidence_state(text: str, lines: list[str]) -> str:
    found = [present(line, text) for line in lines]
    return "kept" if all(found) else "partly" if any(found) else "gone"


def present(line: str, text: str) -> bool:
    """A line is in a context whole, or as the key-facts rule keeps it: every sentence of four words or more of it
    (policies/facts.py splits a statement into sentences and drops the shorter ones, "Wow!" and the like)."""
    from policies.facts import SENTENCE

    if line in text:
        return True
    sentences = [sentence for sentence in SENTENCE.split(line) if len(sentence.split()) >= 4]
    return bool(sentences) and all(sentence in text for sentence in sentences)


@dataclass
class Measured:
    """One policy over every conversation."""
    policy: str
    states: dict = field(default_factory=lambda: {category: Counter() for category in CATEGORIES})
    input_tokens: int = 0
    peak: int = 0  # the largest context of any call, in tokens
    cost: dict = field(default_factory=lambda: {"no_cache": {}, "with_cache": {}})  # by rule: dollars, all calls
    # the same for the session calls alone: the question calls left out, as these costs were counted before
    sessions_cost: dict = field(default_factory=lambda: {"no_cache": {}, "with_cache": {}})
    caveat: str = ""
    corrected: dict = field(default_factory=lambda: {category: Counter() for category in CATEGORIES})
    by_conversation: dict = field(default_factory=dict)  # conversation: Counter of the headline's states
    summary_calls: int = 0  # calls that wrote a summary: the sessions', and one before the questions


def measure(conversations: list[Conversation], specs: list[str], rules: list[tuple[str, object]],
            folder: str, progress=lambda text: None, summaries=None) -> tuple[list[Measured], dict]:
    """Each policy over every conversation: the evidence's state for every question (under LoCoMo's evidence and,
    where --corrections gave it, the audit's), the input tokens and the cost of every call, the sessions' and the
    questions', each priced at its time (call_times). A summarising policy's summaries come from `summaries`
    (experiments.replay.Summaries); without them it is not measured."""
    from experiments.replay import replay, timed

    results = {spec: Measured(make_policy_name(spec)) for spec in specs}
    unscored = {"no evidence": [], "an entry naming no line": [], "a line the conversation lacks": []}  # by why
    for number, conv in enumerate(conversations, 1):
        progress(f"conversation {number} of {len(conversations)}: recording")
        header, recorded = record(conv, folder)  # conv.lines filled, by dialogue id
        times = call_times(conv, recorded)
        events = timed(recorded, times)
        for question in conv.questions:
            if not question.evidence:
                unscored["no evidence"].append(f"{conv.name} q{question.number}")
            if question.evidence and question.unread:
                unscored["an entry naming no line"].append(f"{conv.name} q{question.number}")
            if any(i not in conv.lines for i in question.evidence):
                unscored["a line the conversation lacks"].append(f"{conv.name} q{question.number}")
        progress(f"conversation {number} of {len(conversations)}: replaying {len(specs)} policies")
        reports = replay(header, events, specs, facts=[], points=[], summaries=summaries)
        for spec, report in zip(specs, reports):
            if not report.measured:
                results[spec].caveat = report.note
                continue
            _measured(results[spec], spec, report, conv, events, times[-1] if times else 0.0, rules, summaries)
    for spec, result in results.items():  # not measured on one conversation: its numbers are no policy's whole
        if result.caveat.startswith("not measured"):
            results[spec] = Measured(result.policy, caveat=result.caveat)
    return list(results.values()), unscored


def make_policy_name(spec: str) -> str:
    from policies import make_policy

    return make_policy(spec).name


def _measured(result: Measured, spec: str, report, conv: Conversation, events: list[dict], last: float,
              rules: list[tuple[str, object]], summaries=None) -> None:
    """One policy's replay of one conversation added to its result: the session calls priced, then each question
    asked as a call of its own after the last session, its evidence's state in that call's context. A summarising
    policy asks them after the summaries it made in the sessions, and after the one it asks for once the sessions
    are over, if it does: made before the questions, it is the same for each of them, and priced once."""
    from experiments.facts import call_points, question_event
    from experiments.replay import repeated_prefix, summary_before
    from policies import make_policy
    from tokens import local_counter

    count = local_counter().count
    result.caveat = result.caveat or report.caveat
    _priced(result.sessions_cost, report, rules)
    policy = make_policy(spec)
    if policy.needs_summaries:  # measured by the replay: its session holds every summary the sessions asked for
        events = report.summarised
        try:
            closing = summary_before(policy, events, count, summaries)
        except LookupError:  # the sessions' summaries were cached, this one is not
            result.caveat = (f"not measured: the summary {policy.name} asks for before the questions is not "
                             "cached; give a summarizer (--summarizer) to write it")
            return
        if closing:
            events = [*events, closing[0]]
            report.summary_calls += 1
            report.summary_input += closing[1][0]
            report.summary_output += closing[1][1]
    calls = call_points(events)
    previous = policy.render(events[:calls[-1]]) if calls else []  # the last session call's context
    kept = result.by_conversation.setdefault(conv.name, Counter())
    for number, question in enumerate(conv.questions, 1):
        at = last + TURN_SECONDS * number
        messages = policy.render([*events, {**question_event(question.text), "t": at}])
        report.sizes.append(sum(count(part.text) for message in messages for part in message.parts))
        report.repeated.append(repeated_prefix(previous, messages, count))
        report.times.append(at)
        previous = messages
        text = "\n".join(m.text for m in messages)
        for evidence, states in ((question.evidence, result.states), (question.corrected, result.corrected)):
            required = needed(conv, question, evidence)
            if required:  # nothing to look for: said at the end, not scored
                states[question.category][evidence_state(text, required)] += 1
        required = needed(conv, question, question.evidence)
        if required and question.category in HEADLINE:
            kept[evidence_state(text, required)] += 1
    result.input_tokens += report.total
    result.summary_calls += report.summary_calls
    result.peak = max(result.peak, report.peak)
    _priced(result.cost, report, rules)


def _priced(cost: dict, report, rules: list[tuple[str, object]]) -> None:
    for name, price in rules:
        for cached, key in ((False, "no_cache"), (True, "with_cache")):
            cost[key][name] = cost[key].get(name, 0) + report.input_cost(price, cached)


def needed(conv: Conversation, question: Question, evidence: list[str] | None) -> list[str]:
    """What must be in a context for a question's evidence to count as kept: its lines (those the conversation
    has), and for a temporal question the date of each session they come from, as the trace gives it ("[Session 3,
    7:55 pm on 9 June, 2023]"): a line without its date does not tell when."""
    lines = [conv.lines[i] for i in evidence or [] if i in conv.lines]
    if question.category != 2 or not lines:
        return lines
    dates = {number: date for number, date, _ in conv.sessions}
    sessions = dict.fromkeys(int(EVIDENCE.search(i)[1]) for i in evidence if i in conv.lines)
    return lines + [f"[Session {n}, {dates[n]}]" if dates.get(n) else f"[Session {n}]" for n in sessions]


def session_time(date: str) -> float | None:
    """A session's date as LoCoMo writes it (1:56 pm on 8 May, 2023), in seconds since the epoch; None if not."""
    from datetime import datetime, timezone

    try:
        return datetime.strptime(date, SESSION_DATE).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:  # not a date, or no such day (31 February)
        return None


def call_times(conv: Conversation, events: list[dict]) -> list[float]:
    """When each call of a conversation's trace is taken to be made, in seconds since the epoch: a session's first
    call at its date, each later one TURN_SECONDS after the one before (never before it, if a date goes back)."""

    from experiments.facts import call_points

    dates = {number: session_time(date) for number, date, _ in conv.sessions}  # each read when it was loaded
    times, previous = [], 0
    for index in call_points(events):
        started = next((int(found[1]) for e in events[previous:index] if e["type"] == "question"
                        for found in [re.match(r"\[Session (\d+)", e["text"])] if found), None)
        later = times[-1] + TURN_SECONDS if times else 0.0
        times.append(max(later, dates[started]) if started in dates else later)
        previous = index + 1
    return times


def share(counts: Counter) -> dict:
    from experiments.probe import wilson

    n = sum(counts.values())
    low, high = wilson(counts["kept"], n)
    return {"kept": counts["kept"], "partly": counts["partly"], "gone": counts["gone"], "n": n,
            "share": counts["kept"] / n if n else None, "low": low, "high": high}


def headline(states: dict) -> Counter:
    """The states of the questions the headline counts (HEADLINE: not the adversarial ones)."""
    return sum((states[category] for category in HEADLINE), Counter())


def clustered(by_conversation: dict, seed: int = 1) -> tuple[float, float] | None:
    """A 95% interval of the headline share by a bootstrap over conversations: the questions of one conversation are
    not independent draws (one trace, one policy's choices), so the conversations are resampled, not the questions."""
    counts = [(c["kept"], sum(c.values())) for c in by_conversation.values() if sum(c.values())]
    if not counts:
        return None
    pick, shares = random.Random(seed), []
    for _ in range(BOOTSTRAP):
        drawn = [counts[pick.randrange(len(counts))] for _ in counts]
        shares.append(sum(k for k, _ in drawn) / sum(n for _, n in drawn))
    shares.sort()
    return shares[int(0.025 * BOOTSTRAP)], shares[int(0.975 * BOOTSTRAP) - 1]


def as_json(conversations: list[Conversation], results: list[Measured], unscored: dict, rules,
            setup: dict | None = None) -> dict:
    corrected = (setup or {}).get("corrections")
    return {
        "conversations": len(conversations),
        "questions": sum(len(conv.questions) for conv in conversations),
        "unresolved_evidence": unscored,
        "rules": {name: price.rule() for name, price in rules},
        "setup": setup,
        "policies": {result.policy: {
            "evidence_kept": share(headline(result.states))["share"],
            "evidence": {**share(headline(result.states)), "clustered": clustered(result.by_conversation),
                         "categories": [CATEGORIES[c] for c in HEADLINE]},
            "by_category": {CATEGORIES[c]: share(counts) for c, counts in result.states.items()},
            "corrected": ({"evidence": share(headline(result.corrected)),
                           "by_category": {CATEGORIES[c]: share(counts) for c, counts in result.corrected.items()}}
                          if corrected else None),
            "input_tokens": result.input_tokens, "peak_context": result.peak,
            "cost": {key: {name: round(value, 6) for name, value in costs.items()}
                     for key, costs in result.cost.items()},
            "sessions_cost": {key: {name: round(value, 6) for name, value in costs.items()}
                              for key, costs in result.sessions_cost.items()},
            "summary_calls": result.summary_calls, "caveat": result.caveat or None}
            for result in results},
    }


def table(summary: dict) -> str:
    """The Markdown tables: evidence kept (the headline without the adversarial category, with Wilson's interval
    and the interval of a bootstrap over conversations; under the audit's evidence too, where given) and by
    category, then the cost of every call with caching against full history's."""
    names = list(CATEGORIES.values())
    audited = summary.get("setup", {}) and summary["setup"].get("corrections")
    rows = ["| policy | evidence kept (categories 1–4; Wilson; by conversation) | "
            + ("under the audit's evidence | " if audited else "") + " | ".join(names) + " | input tokens | "
            + " | ".join(f"with caching, {rule}" for rule in summary["rules"]) + " |",
            "| --- | ---: |" + (" ---: |" if audited else "") + " ---: |" * len(names) + " ---: |"
            + " ---: |" * len(summary["rules"])]
    full = summary["policies"].get("full")
    for policy, measured in summary["policies"].items():
        if not measured["input_tokens"]:
            said = measured["caveat"]  # the replay's note, which may say "not measured" itself
            rows.append(f"| {policy} | {said if said.startswith('not measured') else f'not measured: {said}'} |")
            continue
        evidence = measured["evidence"]
        by_conversation = evidence["clustered"]
        cells = [_share(evidence) + (f"; {by_conversation[0]:.0%}–{by_conversation[1]:.0%}" if by_conversation
                                     else "")]
        cells += [_share(measured["corrected"]["evidence"])] if audited else []
        cells += [_share(measured["by_category"][name]) for name in names]
        costs = [f"${measured['cost']['with_cache'][rule]:.3f}"
                 + (f" ({measured['cost']['with_cache'][rule] / full['cost']['with_cache'][rule]:.0%})" if full
                    else "") for rule in summary["rules"]]
        rows.append(f"| {policy} | " + " | ".join(cells) + f" | {measured['input_tokens']:,} | "
                    + " | ".join(costs) + " |")
    return "\n".join(rows)


def _share(cell: dict) -> str:
    return "–" if cell["share"] is None else f"{cell['share']:.1%} ({cell['low']:.0%}–{cell['high']:.0%})"


def plot(summary: dict, title: str) -> str:
    """One panel a rule: each policy's cost with caching against its evidence kept, the frontier drawn; a policy
    costing more than OFF_CHART times full history's is left off (the title names it) so that the rest can be read."""
    from views.reports import tradeoff_chart

    panels, left_out = [], set()
    for rule in summary["rules"]:
        full = summary["policies"].get("full", {}).get("cost", {}).get("with_cache", {}).get(rule)
        points = []
        for policy, measured in summary["policies"].items():
            if measured["evidence_kept"] is None or not measured["input_tokens"]:
                continue
            cost = measured["cost"]["with_cache"][rule]
            if full and cost > OFF_CHART * full:
                left_out.add(policy)
                continue
            points.append((policy, cost, measured["evidence_kept"]))
        panels.append((f"input cost with caching, {rule}", "evidence kept", points, lambda value: f"${value:.3g}"))
    if left_out:
        title += f" (left off a panel where over {OFF_CHART}x full history's cost: {', '.join(sorted(left_out))})"
    return tradeoff_chart(panels, title) + "\n"


def summaries_for(args, specs: list[str]):
    """Where a summarising policy's summaries come from: the cache file --summaries names, and the --summarizer
    model, loaded at the first summary the cache lacks; None when no policy asks for one."""
    from cli.loading import ModelWhenAsked
    from cli.output import UsageError
    from experiments.replay import Summaries
    from policies import make_policy

    if not any(make_policy(spec).needs_summaries for spec in specs):
        return None
    if (os.path.exists(args.summaries) and not os.path.isfile(args.summaries)
            or not os.path.isdir(os.path.dirname(os.path.abspath(args.summaries)))):  # a folder, a FIFO, a device
        raise UsageError(f"--summaries {args.summaries}: not a regular file in a folder that exists")
    wanted = args.summarizer or OFFLINE_SUMMARIZER
    return Summaries(None if wanted == "none" else ModelWhenAsked(wanted), args.summaries)


def summary_problem(problem: Exception) -> str:
    """What stopped a replay, in one line: the summarizer's failure, or a file's (the summaries' cache, most likely)."""
    if isinstance(problem, OSError):
        return f"{problem.strerror or problem}: {problem.filename}" if problem.filename else str(problem)
    return f"--summarizer: {problem}"


def _cache_ttl(text: str) -> float:
    from models.prices import MAX_CACHE_SECONDS, NEVER

    if text.strip().lower() == "none":
        return NEVER
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_CACHE_SECONDS:
        raise argparse.ArgumentTypeError(f"takes seconds from 0 to {MAX_CACHE_SECONDS:,} (a week), or none, "
                                         f"got {text!r}")
    return seconds


def locomo_setup(args, priced: list, corrections: dict | None, conversations: list[Conversation]) -> dict:
    """What made the numbers, beside them: the lifetimes the costs assume, the times, the audit read."""
    from experiments.provenance import digest

    return {"times": f"each session's first call at its date, later calls {TURN_SECONDS} s apart; the questions "
                     f"after the last session, {TURN_SECONDS} s apart",
            "caches": {name: price.kept() for name, price in priced},
            "corrections": ({"path": args.corrections, "sha256": digest(args.corrections),
                             "entries": corrections["entries"], "questions_changed": sum(
                                 question.corrected != question.evidence for conv in conversations
                                 for question in conv.questions)}
                            if corrections else None)}


def read_corrections(path: str, conversations: list[Conversation]) -> dict:
    """The audit's corrected evidence (dial481/locomo-audit's errors.json) set on the questions it names: each entry
    `locomo_<i>_qa<n>` (i the conversation's place in the file, n the question's in its qa list, both from 0), its
    question's text checked against the data's. A file not of that shape, or naming a question the data does not
    have, is a DataError; entries whose evidence is LoCoMo's own (in another order, zero-padded, or two ids in one
    string) change nothing. {"entries": how many, "changed": the questions whose evidence changed, in the file}."""
    from files import read_input

    try:
        entries = json.loads(read_input(path, MAX_CORRECTIONS, "the corrections file").decode("utf-8"))
    except OSError as problem:
        raise DataError(f"--corrections {path}: {problem.strerror or problem}") from None
    except (ValueError, RecursionError) as problem:
        raise DataError(f"--corrections {path}: not JSON in UTF-8 ({str(problem)[:80]})") from None
    if not isinstance(entries, list) or not all(_correction(entry) for entry in entries):
        raise DataError(f"--corrections {path} is not the audit's errors.json: it must be a list of entries, each "
                        "with a question_id (locomo_<i>_qa<n>), the question and its correct_evidence (a list of "
                        "dialogue ids)")
    changed = 0
    for entry in entries:
        found = AUDIT_ID.fullmatch(entry["question_id"])
        place, index = int(found[1]), int(found[2])
        if place >= len(conversations) or index >= len(conversations[place].questions):
            raise DataError(f"--corrections {path}: {entry['question_id']} names a question the data does not "
                            f"have ({len(conversations)} conversations)")
        question = conversations[place].questions[index]
        if " ".join(question.text.split()) != " ".join(entry["question"].split()):
            raise DataError(f"--corrections {path}: {entry['question_id']} is {entry['question'][:60]!r}, but "
                            f"the data's question is {question.text[:60]!r}: another version of LoCoMo")
        evidence = [f"D{int(s)}:{int(n)}" for text in entry["correct_evidence"] for s, n in EVIDENCE.findall(text)]
        if sorted(set(evidence)) != sorted(set(question.evidence)):
            question.corrected, changed = list(dict.fromkeys(evidence)), changed + 1
        answer = entry.get("correct_answer")
        if isinstance(answer, str) and answer.strip() and normalise(answer) != normalise(question.answer):
            question.corrected_answer = answer.strip()  # what the likelihood reader scores beside LoCoMo's
    for conv in conversations:
        for question in conv.questions:
            if question.corrected is None:
                question.corrected = question.evidence
    return {"entries": len(entries), "changed": changed}


def _correction(entry) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("question_id"), str)
            and bool(AUDIT_ID.fullmatch(entry["question_id"])) and isinstance(entry.get("question"), str)
            and isinstance(entry.get("correct_evidence"), list)
            and all(isinstance(item, str) for item in entry["correct_evidence"]))


def _count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"takes a whole number from 1, got {text!r}")
    return int(text)


def _span(text: str) -> tuple[int, int]:
    """--conversations: "N" (the first N) or "A-B" (the A-th to the B-th), as a slice's start and stop."""
    found = re.fullmatch(r"(?:(\d+)-)?(\d+)", text.strip())
    if not found or int(found[2]) < max(1, int(found[1] or 1)):
        raise argparse.ArgumentTypeError(f"takes N or A-B, whole numbers from 1 with A <= B, got {text!r}")
    return int(found[1] or 1) - 1, int(found[2])


def main(argv: list[str] | None = None) -> int:
    from cli.arguments import dollars_given
    from cli.output import UsageError
    from models import ModelConfigError, ModelError

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="LoCoMo's data/locomo10.json, or a zip of it (not shipped: see the docstring)")
    parser.add_argument("--policies", default=POLICIES, help=f"policies to replay (default: {POLICIES})")
    parser.add_argument("--conversations", type=_span, metavar="N|A-B",
                        help="only the first N conversations, or the A-th to the B-th (in the file's order, from 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument("--plot", metavar="FILE.svg", help="also write the cost-against-evidence chart")
    parser.add_argument("--probe", action="store_true", help="ask a sample of the questions of --model")
    parser.add_argument("--model", metavar="SPEC", help="with --probe: the model that answers")
    parser.add_argument("--sample", type=_count, default=20, metavar="N",
                        help="with --probe: the number of questions asked (20)")
    parser.add_argument("--seed", type=int, default=1, help="with --probe: the sample's seed (1)")
    parser.add_argument("--answers", metavar="FILE.jsonl", help="with --probe: keep every answer and its score")
    parser.add_argument("--reader", choices=["answer", "likelihood"], default="answer",
                        help="with --probe: answer (the model writes an answer, scored with LoCoMo's token F1) or "
                             "likelihood (an embedded model scores LoCoMo's answer, and the audit's corrected one "
                             "with --corrections, against closed book: bench/locomo_likelihood.py)")
    parser.add_argument("--via", choices=["batch", "flex"],
                        help="with --probe: ask through the provider's own engine at about half price, as agent.py's "
                             "--via: batch (OpenAI's Batch API, Gemini's batch mode) or flex (OpenAI's flex tier); "
                             "the price is shown before sending")
    parser.add_argument("--ledger", metavar="FILE.jsonl",
                        help="with --via: the ledger (default: ANSWERS.batch-RUN.jsonl or ANSWERS.flex-RUN.jsonl "
                             "beside --answers, or locomo.batch-RUN.jsonl or locomo.flex-RUN.jsonl here)")
    parser.add_argument("--max-cost", type=dollars_given, metavar="USD", dest="max_cost",
                        help="with --via: send nothing above USD at the engine's rates")
    parser.add_argument("--yes", action="store_true", help="with --via: send without asking")
    parser.add_argument("--cache-ttl", type=_cache_ttl, metavar="SECONDS|none", dest="cache_ttl",
                        help="every prompt cache keeps a prefix SECONDS after its last use, whatever its price row "
                             "says (none: caches never expire, the costs as counted before they did)")
    parser.add_argument("--summarizer", metavar="SPEC|none",
                        help="the model that writes the summaries a summarising policy asks for (compact:T, the "
                             "vendors' compaction), loaded only if one is not cached (default: the embedded "
                             f"{OFFLINE_SUMMARIZER}); none: the cache alone")
    parser.add_argument("--summaries", metavar="FILE.json", default="locomo.summaries.json",
                        help="the summaries' cache, read and written when a summarising policy is replayed (default: "
                             "locomo.summaries.json in the current folder)")
    parser.add_argument("--corrections", metavar="FILE",
                        help="the independent audit of LoCoMo's answer key (dial481/locomo-audit's errors.json): "
                             "evidence kept is also given under its corrected evidence")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # a batch left running says the command again
    if args.probe and not args.model:
        parser.error("--probe needs --model SPEC")
    problem = outputs_problem(args) or via_problem(args)
    if problem:
        parser.error(problem)
    try:
        priced = [(name, price.expiring(args.cache_ttl)) for name, price in rules()]
        everything = read(args.data)
        corrections = read_corrections(args.corrections, everything) if args.corrections else None
        conversations = everything[slice(*args.conversations) if args.conversations else slice(None)]
        specs = [spec.strip() for spec in args.policies.split(",") if spec.strip()]
        from policies import make_policy
        named = {}
        for spec in specs:  # once each: `stable` and `stable:10000` are one policy
            named.setdefault(make_policy(spec).name, spec)
        specs = list(named.values())
        summarising = [spec for spec in specs if make_policy(spec).needs_summaries]
        if summarising and args.probe and args.reader == "likelihood":
            raise UsageError(f"--reader likelihood cannot score under {', '.join(summarising)}: a summarising "
                             "policy needs summaries, which it does not write")
        summaries = summaries_for(args, specs)  # a bad --summarizer: said before work
    except (DataError, ValueError, UsageError) as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        if args.probe:
            return probe_main(args, conversations, specs, folder, summaries)
        say = (lambda text: print(text, file=sys.stderr)) if sys.stderr.isatty() else (lambda text: None)
        try:
            results, unscored = measure(conversations, specs, priced, folder, say, summaries)
        except (ModelError, OSError) as problem:  # the summarizer's key, its server, the summaries' file
            print(f"error: {summary_problem(problem)}", file=sys.stderr)
            return 2 if isinstance(problem, ModelConfigError) else 1
    summary = as_json(conversations, results, unscored, priced, locomo_setup(args, priced, corrections, conversations))
    code = 0
    if args.plot:
        from files import write_whole

        chart = plot(summary, f"LoCoMo, {summary['questions']:,} questions: cost with caching against evidence kept, "
                              "one point a policy")
        try:
            write_whole(args.plot, chart.encode("utf-8"))
        except OSError as problem:  # a full disk: said, and the tables are still printed
            print(f"error: cannot write --plot {args.plot}: {problem.strerror or problem}", file=sys.stderr)
            code = 1
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{summary['conversations']} conversations, {summary['questions']:,} questions; evidence kept when "
              "asked after the last session (a temporal question's with its session's date), 95% intervals")
        print(table(summary))
        print("setup: " + " · ".join(f"{key}: {value}" for key, value in summary["setup"].items()))
        for kind, said in (("no evidence", "list no evidence line (not scored)"),
                           ("an entry naming no line", "list an entry naming no line, such as \"D\" (scored on the "
                                                       "lines they name)"),
                           ("a line the conversation lacks", "name a line the conversation does not have (scored "
                                                             "on the lines it has, if any)")):
            if unscored[kind]:
                print(f"{len(unscored[kind])} questions {said}: {', '.join(unscored[kind])}")
    return code


# --- the probe: answers scored with LoCoMo's token F1 ---

def normalise(text: str) -> str:
    text = text.lower().replace(",", "")
    text = "".join(ch for ch in text if ch not in '!"#$%&\'()*+-./:;<=>?@[\\]^_`{|}~')
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", text).split())


def token_f1(prediction: str, gold: str, stem) -> float:
    said = [stem(word) for word in normalise(prediction).split()]
    wanted = [stem(word) for word in normalise(gold).split()]
    common = sum((Counter(said) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def score(prediction: str | None, question: Question, stem) -> float:
    """LoCoMo's score of one answer (task_eval/evaluation.py's eval_question_answering); no answer scores 0."""
    if prediction is None:
        return 0.0
    if question.category == 5:
        said = prediction.lower()
        return 1.0 if "no information available" in said or "not mentioned" in said else 0.0
    gold = question.answer.split(";")[0].strip() if question.category == 3 else question.answer
    if question.category == 1:
        parts = [part.strip() for part in prediction.split(",")]
        wanted = [part.strip() for part in gold.split(",")]
        return sum(max(token_f1(part, want, stem) for part in parts) for want in wanted) / len(wanted)
    return token_f1(prediction, gold, stem)


def stemmer():
    try:
        from nltk.stem import PorterStemmer
    except ImportError:
        raise DataError("--probe scores with LoCoMo's token F1, which stems with nltk: pip install nltk") from None
    return PorterStemmer().stem


def asked(pairs: list[tuple[Conversation, Question]], specs: list[str], folder: str, summaries=None):
    """(policy name, conversation, question, the messages asking it) for each question under each policy, in the order
    asked: policy by policy and conversation by conversation, so that calls sharing a context up to the question come
    one after another (the embedded models reuse it). Each conversation is recorded once. A summarising policy asks
    after the summaries it asked for in the sessions and the one it asks for once they are over, as the replay
    measures it (summarised_session), from `summaries` (experiments.replay.Summaries)."""
    from experiments.facts import question_event
    from policies import make_policy

    traces, sessions, policies = {}, {}, [make_policy(spec) for spec in specs]
    for conv, _ in pairs:
        if conv.name not in traces:
            traces[conv.name] = record(conv, folder)[1]
    for policy in policies:  # every summary first: one that cannot be had is said before any question is asked
        for name in dict.fromkeys(conv.name for conv, _ in pairs) if policy.needs_summaries else ():
            sessions[policy.name, name] = summarised_session(policy, traces[name], summaries)
    for policy in policies:
        for conv, question in pairs:
            events = sessions.get((policy.name, conv.name), traces[conv.name])
            yield policy.name, conv, question, policy.render([*events,
                                                              question_event(ASK.format(question=question.text))])


def summarised_session(policy, events: list[dict], summaries) -> list[dict]:
    """A conversation's events as a summarising policy leaves them before the questions: the summaries it asked for
    during the sessions, and the one it asks for once they are over; DataError, in one line, for a summary neither
    the cache nor the summarizer can give."""
    from experiments.replay import summarised, summary_before
    from tokens import local_counter

    count = local_counter().count
    made = summarised(policy, events, count, summaries)
    try:
        if made.events is None:
            raise LookupError
        closing = summary_before(policy, made.events, count, summaries)
    except LookupError:
        raise DataError(f"--probe under {policy.name} needs summaries that are not cached: give a summarizer "
                        "(--summarizer SPEC) or the cache that holds them (--summaries FILE)") from None
    return made.events + [closing[0]] if closing else made.events


def probe(pairs: list[tuple[Conversation, Question]], specs: list[str], model, stem, folder: str,
          on_answer=lambda answer: None, calls: list | None = None, replies: list | None = None) -> dict:
    """Ask each (conversation, question) of the model under each policy, the question as the current turn of the
    conversation's trace; {policy: every answer's score}. `calls` and `replies`: the calls (as `asked` makes them)
    and their replies, in the same order, when they were asked otherwise (--via batch), or planned with a summarising
    policy's summaries (planned_calls)."""
    from replies import STOP_SEQUENCES, cut_at_observation, parse_reply

    scores = {}
    for number, (name, conv, question, messages) in enumerate(calls or asked(pairs, specs, folder)):
        reply = replies[number] if replies is not None else model.generate(messages, STOP_SEQUENCES)
        text = cut_at_observation(reply.text)
        said = parse_reply(text).answer
        # LoCoMo scores what the model wrote: a reply with no Answer line is scored as written, its Thought
        # and Action lines aside, and marked so
        scored = said if said is not None else "\n".join(
            line for line in text.splitlines() if not re.match(r"\s*(Thought|Action)\d*\s*:", line))
        scores.setdefault(name, []).append(score(scored, question, stem))
        lines = [conv.lines[i] for i in question.evidence if i in conv.lines]
        on_answer({"policy": name, "conversation": conv.name, "question": question.number,
                   "category": CATEGORIES[question.category], "asked": question.text, "gold": question.answer,
                   "answer": said, "answered": said is not None, "reply": reply.text,
                   "f1": round(scores[name][-1], 4),
                   "evidence": evidence_state("\n".join(m.text for m in messages), lines) if lines else None,
                   "input_tokens": reply.input_tokens})
    return scores


def planned_calls(args, chosen: list, specs: list[str], folder: str, summaries):
    """The calls the probe will make (as `asked` makes them: all of them with --via, to price them; else made one by
    one as they are asked), each summary a summarising policy asks for written first; or, said in one line, the exit
    code: 2 for a summary neither cached nor to be written, or a summarizer that cannot be used, 1 for one that failed
    or a cache that cannot be written (as the replay says them), 130 interrupted. With --via, a summarizer that bills
    is not called for a summary the cache lacks: it would be paid before the price is shown."""
    from models import ModelConfigError, ModelError

    cache_only = bool(args.via and summaries and summaries.model and _billed(summaries.model.spec))
    if cache_only:
        summaries = copy.copy(summaries)  # its cache, this summarizer's entries alone, and nothing written
        summaries.model = Unwritten(summaries.model.name)
    try:
        calls = asked(chosen, specs, folder, summaries)
        if args.via:
            return list(calls)
        first = next(calls, None)  # every summary is written before the first call is made
        return [] if first is None else itertools.chain([first], calls)
    except DataError as problem:
        said = str(problem) if not cache_only else (
            f"--via: some summaries are not cached, and --summarizer {args.summarizer} would be paid for them before "
            "the price is shown: write them first by replaying without --probe (the same data, --policies, "
            "--summarizer and --summaries), or use a summarizer that does not bill")
        print(f"error: {said}", file=sys.stderr)
        return 2
    except (ModelError, OSError) as problem:  # the summarizer's, or the summaries' cache
        print(f"error: {summary_problem(problem)}", file=sys.stderr)
        return 2 if isinstance(problem, ModelConfigError) else 1
    except KeyboardInterrupt:
        where = f" in {summaries.path}" if getattr(summaries, "path", None) else ""
        print(f"interrupted: the summaries written so far are cached{where}", file=sys.stderr)
        return 130


class Unwritten:
    """A summarizer by name alone, for the summaries it wrote before: asked to write one, it refuses."""

    def __init__(self, name: str):
        self.name = name

    def generate(self, messages, stop, **options):
        raise LookupError(f"{self.name} is not asked to write a summary here")


def _billed(spec: str) -> bool:
    from models import backend_record, resolved_spec

    return backend_record(resolved_spec(spec)[0]).free is None


def via(args, model, calls: list):
    """With --via, the run through the engine with its ledger, a batch's or flex's, the calls' price shown before any
    is sent (and a yes asked for), as the replay's probe does (cli/sending.py); None without --via; False, said in
    one line, when sending may not go on."""
    from cli.output import UsageError
    from cli.sending import check_via, open_run, price_before_sending
    from tokens import local_counter

    if not args.via:
        return None
    try:
        check_via(args, model)
        messages = [call[3] for call in calls]
        sending = open_run(args, args.answers or "locomo.jsonl", model, messages)
        price_before_sending(args, model, messages, local_counter(), sending)
    except UsageError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return False
    return sending


def via_problem(args) -> str | None:
    """What does not go with --via, said before any work."""
    if (args.via or args.ledger or args.max_cost is not None or args.yes) and not args.probe:
        return "--via, --ledger, --max-cost and --yes only work with --probe"
    if args.via and args.reader == "likelihood":
        return "--via does not go with --reader likelihood: the likelihood reader runs on an embedded model"
    if args.ledger and not args.via:
        return "--ledger only works with --via"
    if args.max_cost is not None and not args.via:
        return "--max-cost only works with --via"
    return None


def resumed(args, sending) -> str:
    """With a batch left running or flex calls not all asked, the line that says how to pick them up."""
    from cli.sending import resume_line

    return "\n" + resume_line(args, "bench/locomo.py") if sending else ""


def outputs_problem(args) -> str | None:
    """What is wrong with where --plot and --answers would write, said before any work: the data file itself (it
    would be overwritten), a folder, or a folder that does not exist."""
    for flag, path in (("--plot", args.plot), ("--answers", args.answers)):
        if not path:
            continue
        if os.path.exists(path) and os.path.exists(args.data) and os.path.samefile(path, args.data):
            return f"{flag} {path} is the data file: it would be written over"
        if os.path.isdir(path):
            return f"{flag} {path} is a folder: name a file"
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            return f"{flag} {path}: its folder does not exist"
    return None


class AnswersLost(Exception):
    """--answers could not be written: the probe stops, saying so."""


def probe_main(args, conversations: list[Conversation], specs: list[str], folder: str, summaries=None) -> int:
    from cli.sending import say  # a note on one line, what the service sent in it made safe to print
    from models import ModelError, load_model

    if args.reader == "likelihood":
        from locomo_likelihood import run

        return run(args, conversations, specs, folder)
    pool = [(conv, question) for conv in conversations for question in conv.questions if question.evidence]
    size = min(args.sample, len(pool))
    chosen = [pool[n] for n in sorted(random.Random(args.seed).sample(range(len(pool)), size))]
    calls = planned_calls(args, chosen, specs, folder, summaries)  # before anything is loaded, asked or written
    if isinstance(calls, int):
        return calls
    try:
        stem = stemmer()
        model = load_model(args.model)
    except Exception as problem:  # a model that cannot be loaded, nltk missing: one line
        print(f"error: {problem}", file=sys.stderr)
        return 2
    sending = via(args, model, calls)
    if sending is False:
        return 2
    flex = args.via == "flex"  # asked one at a time through the run, which keeps each reply in its ledger
    try:
        answers = open(args.answers, "w", encoding="utf-8") if args.answers else None
    except OSError as problem:
        print(f"error: cannot write --answers {args.answers}: {problem.strerror or problem}", file=sys.stderr)
        return 2

    def kept(answer: dict) -> None:
        if answers:
            try:
                answers.write(json.dumps(answer, ensure_ascii=False) + "\n")
                answers.flush()
            except OSError as problem:  # a full disk: the answers so far are kept, and the probe stops
                raise AnswersLost(f"cannot write --answers {args.answers}: {problem.strerror or problem}; the "
                                  "answers before this one are in it") from None
        print(f"{answer['policy']} · {answer['conversation']} q{answer['question']} ({answer['category']}): "
              f"F1 {answer['f1']:.2f} · {answer['answer']!r}", file=sys.stderr)

    scores: dict[str, list[float]] = {}
    try:
        replies = sending.replies(lambda text: print(text, file=sys.stderr), say) if sending and not flex else None
        scores = probe(chosen, specs, sending if flex else model, stem, folder, kept, calls, replies)
    except KeyboardInterrupt:
        print("interrupted: the answers so far are in --answers" + resumed(args, sending), file=sys.stderr)
        return 130
    except (ModelError, AnswersLost) as problem:  # a rejected key, a server gone, a full disk: one line
        print(f"error: {problem}" + (resumed(args, sending) if flex else ""), file=sys.stderr)
        return 1
    finally:
        if sending:
            sending.close()  # a batch's is closed already; closing again does nothing
        if answers:
            try:
                answers.close()
            except OSError:
                pass  # what could not be written was said
    print(f"{len(chosen)} questions (seed {args.seed}) asked of {args.model}; mean token F1 (LoCoMo's), with a "
          "normal 95% interval")
    for name, values in scores.items():
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1)) ** 0.5 * 1.96 / len(values) ** 0.5
        print(f"  {name}: {mean:.3f} ({max(0.0, mean - spread):.3f}–{min(1.0, mean + spread):.3f}), "
              f"n={len(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
