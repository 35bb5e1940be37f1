"""A calculator for arithmetic expressions, safe to give a model: the expression is parsed with `ast` and only
arithmetic is evaluated, by this module's own walk of the tree. Nothing is ever passed to `eval` or `exec`.

Percentages are read as a person means them: `18% of 250` is 45, `250 + 18%` is 295 (250 increased by 18%),
`250 - 18%` 205, `15 percent of 240` 36 and `50%` 0.5. A `%` (or the word percent) is a percent when what follows it
cannot be an operand: the end, `)`, `,`, `of` or an operator (`50% - 10`); followed by an operand (a number, a name,
`(`, or a number's sign written against it after a space, `7 % -3`) it is the remainder, as in Python (`7 % 3` is 1).

A small model writes one expression far more reliably than it plans a chain of single operations, so this is the
one-call path for arithmetic. Every bound is checked before the operation it guards: an expression's length and
nesting, each number's size and any power's result, so no expression can hang the process or fill its memory.
"""
import ast
import io
import math
import operator
import re
import tokenize

MAX_CHARS = 300  # of an expression: a long arithmetic question is a few dozen
MAX_DEPTH = 30  # nesting of operations and parentheses
MAX_DIGITS = 300  # of any whole number, given or computed; a float holds up to about 1.8e308 anyway
# Digits a result is written with: on 20,000 random sums, products and quotients of decimals, 13 write the fewest
# wrong (0.02%: 15 write 1.9% with binary noise, 17 write 30%; python bench/calculator_digits.py).
SIGNIFICANT = 13

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
             ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
SIGNS = {ast.USub: operator.neg, ast.UAdd: operator.pos}
# name: (function, fewest arguments, most arguments)
FUNCTIONS = {"sqrt": (math.sqrt, 1, 1), "abs": (abs, 1, 1), "round": (round, 1, 2), "min": (min, 1, 20),
             "max": (max, 1, 20), "floor": (math.floor, 1, 1), "ceil": (math.ceil, 1, 1), "log": (math.log, 1, 2),
             "exp": (math.exp, 1, 1)}
CONSTANTS = {"pi": math.pi, "e": math.e}
ALLOWED = ("numbers, + - * / // % ** (power), parentheses, unary minus, "
           f"{', '.join(FUNCTIONS)} and the constants {', '.join(CONSTANTS)}")
# Said when the model writes words or units into the expression, and when it divides by zero. With a general message
# the 0.5B model repeated the same call until the TTL (bench/results/tuning-calc-5tools.json); a longer message that
# told it what to answer did worse (tuning-calc-5tools-words.json: 0 of 3 divisions by zero, against 1), and these,
# beside react-small.txt's example of an undefined result, did better (tuning-calc2-9tools.json: 2 of 3).
WORDS = ("{word!r} is a word, not a number: write the calculation with numbers and operators only, after turning "
         "any units into numbers yourself. A question that is not arithmetic needs no calculator")
ZERO = "division by zero: the result is undefined"
# A number literal, set aside before looking for words (the e of 1e5 is no word), unless a letter comes just before it
# (the 2 of H2O is part of a word)
NUMBER = re.compile(r"(?<![^\W\d])(?:0[xX][\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
                    r"|(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][+-]?\d+)?[jJ]?)")
# A percent is parsed as an attribute of its operand, `18%` as `18 .percent`: Python's grammar then binds it to the
# operand just before it, as a postfix sign (`(1 + 2)%`, `sqrt(4)%`, `10 / 50%`), and the walk below evaluates it.
PERCENT = "percent"
HINTS = {ast.BitXor: "use ** for a power, not ^", ast.Tuple: "write numbers without thousands separators (1000, "
         "not 1,000)", ast.Compare: "comparisons are not arithmetic"}


class Refused(Exception):
    """What the expression holds that the calculator will not compute; the message is for the model."""


class Unbalanced(Refused):
    """Parentheses that do not pair up: the message says which, and how a whole expression is written."""


class Words(Refused):
    """A word that is neither a function nor a constant (a unit, a variable): the message says what to write."""


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return its value.

    Accepts numbers, + - * / // % and ** (power), parentheses, unary minus, the functions sqrt, abs, round,
    min, max, floor, ceil, log (natural, or log(x, base)) and exp, and the constants pi and e. Write the whole
    calculation as one expression; the result has at most 13 significant digits.
    Example: calculate("(8.5 + 1.5) * 3 - 4.25") returns 25.75.
    Refuses anything else (words and units, names, comparisons), division by zero and numbers past 300 digits,
    with an Error message that says what is allowed.
    """
    try:
        return written(evaluate(expression))
    except (Unbalanced, Words) as refusal:
        return f"Error: {refusal}."
    except Refused as refusal:
        return f"Error: {refusal}. The calculator takes {ALLOWED}."
    except ZeroDivisionError:
        return f"Error: {ZERO}."
    except (OverflowError, ValueError) as problem:  # math's own: sqrt(-1), log(0), exp(1000), a float too large
        return f"Error: {_math_error(problem)}."


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression, unwritten; raises Refused, ZeroDivisionError, OverflowError or
    ValueError as `calculate` describes."""
    return _value(_parsed(expression))


def _parsed(expression) -> ast.expr:
    if not isinstance(expression, str):
        raise Refused(f"the expression must be text, not {type(expression).__name__}")
    text = expression.strip()
    if not text:
        raise Refused("the expression is empty")
    if len(text) > MAX_CHARS:
        raise Refused(f"the expression is {len(text):,} characters long, more than {MAX_CHARS}")
    if _nesting(text) > MAX_DEPTH:  # before parsing: Python's parser has a nesting limit of its own
        raise Refused(f"the expression nests more than {MAX_DEPTH} parentheses")
    try:
        return ast.parse(_percents(text), mode="eval").body
    except SyntaxError as problem:
        brackets, word = _bracket_problem(text), _word(text)
        if brackets:
            raise Unbalanced(brackets) from None
        raise Words(WORDS.format(word=word)) if word else Refused(f"it is not an expression ({problem.msg})") from None


def _percents(text: str) -> str:
    """`text` with each `%` or `percent` that is a percent written `.percent`, and an `of` after one as `*`; the text
    as it was when Python's tokenizer cannot read it (ast.parse then says what is wrong)."""
    try:
        tokens = [token for token in tokenize.generate_tokens(io.StringIO(text).readline)
                  if token.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return text
    starts = [0]  # where each line starts, split as the tokenizer splits them, to place a token's (row, column)
    for line in io.StringIO(text):
        starts.append(starts[-1] + len(line))
    pieces, end, after_percent = [], 0, False
    for index, token in enumerate(tokens):
        percent = _is_percent(tokens, index)
        if percent or after_percent and token.type == tokenize.NAME and token.string == "of":
            start = starts[token.start[0] - 1] + token.start[1]
            pieces += [text[end:start], f" .{PERCENT}" if percent else "*"]
            end = start + len(token.string)
        after_percent = percent
    return "".join(pieces) + text[end:]


def _is_percent(tokens: list[tokenize.TokenInfo], index: int) -> bool:
    """Whether the token at `index` is a percent: a `%` or the word percent after an operand (18%, (1 + 2)%, pi%,
    50%%) with nothing after it that could be its right operand."""
    sign = tokens[index]
    if not (sign.string == "%" or sign.type == tokenize.NAME and sign.string == PERCENT) or index == 0:
        return False
    before, following, rest = tokens[index - 1], tokens[index + 1], tokens[index + 2:]
    if before.type not in (tokenize.NUMBER, tokenize.NAME) and before.string not in (")", "%"):
        return False
    if following.type in (tokenize.NUMBER, tokenize.STRING) or following.string == "(":
        return False
    if following.type == tokenize.NAME:
        return following.string == "of"
    if following.string in ("+", "-") and rest:  # `7 % -3`: a sign against its number, after a space, is its sign
        operand = rest[0]
        return not (following.start > sign.end and operand.start == following.end
                    and (operand.type in (tokenize.NUMBER, tokenize.NAME) or operand.string == "("))
    return True  # the end, a closing bracket, a comma or an operator


def _word(text: str) -> str | None:
    """The first word of `text` that is not a function or a constant the calculator knows (numbers set aside, so
    that the e of 1e5 is not a word); None when there is none."""
    words = re.findall(r"[^\W\d]\w*", NUMBER.sub(" ", text))
    return next((word for word in words if word not in FUNCTIONS and word not in CONSTANTS
                 and word not in (PERCENT, "of")), None)


def _bracket_problem(text: str) -> str | None:
    """What is wrong with the parentheses of `text`, said so that the fix is plain; None when they pair up."""
    depth = 0
    for character in text:
        depth += (character == "(") - (character == ")")
        if depth < 0:
            return (f"in {text[:60]!r} a ')' closes a '(' that was never opened: write the '(' where the bracket "
                    "begins, as in (1 + 2) * 5")
    if depth > 0:
        return f"in {text[:60]!r} {depth} '(' {'is' if depth == 1 else 'are'} never closed: add the ')'"
    return None


def _nesting(text: str) -> int:
    """How deep the parentheses and brackets of `text` nest."""
    depth = deepest = 0
    for character in text:
        depth += (character in "([{") - (character in ")]}")
        deepest = max(deepest, depth)
    return deepest


def _value(node: ast.expr, depth: int = 0):
    """The value of an allowed node, every operand checked before the operation that uses it."""
    if depth > MAX_DEPTH:
        raise Refused(f"the expression nests more than {MAX_DEPTH} operations")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        # 1 + 2 - 3 + ... parses as a chain down its left side, but it is one level of a person's arithmetic
        flat = isinstance(node.left, ast.BinOp) and _level(node.left.op) == _level(node.op)
        left, right = _value(node.left, depth + (not flat)), _value(node.right, depth + 1)
        if isinstance(node.op, (ast.Add, ast.Sub)) and _is_percent_node(node.right):
            right = _checked(left * right)  # 250 + 18% is 250 and 18% of 250, as a person means it
        _fits(node.op, left, right)
        return _checked(OPERATORS[type(node.op)](left, right))
    if _is_percent_node(node):
        return _checked(_value(node.value, depth + 1) / 100)
    if isinstance(node, ast.UnaryOp) and type(node.op) in SIGNS:
        return SIGNS[type(node.op)](_value(node.operand, depth + 1))
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        return _called(node, depth)
    raise Refused(_not_allowed(node))


def _is_percent_node(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == PERCENT


def _level(op: ast.operator) -> int:
    """An operator's precedence: sums, then products, then powers."""
    return 0 if isinstance(op, (ast.Add, ast.Sub)) else 2 if isinstance(op, ast.Pow) else 1


def _called(node: ast.Call, depth: int):
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in FUNCTIONS:
        raise Refused(f"{ast.unparse(node.func)[:40]}() is not one of its functions")
    function, fewest, most = FUNCTIONS[name]
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        raise Refused(f"{name}() takes its arguments by position only")
    if not fewest <= len(node.args) <= most:
        wanted = fewest if fewest == most else f"{fewest} to {most}"
        raise Refused(f"{name}() takes {wanted} argument{'s' if most > 1 else ''}, not {len(node.args)}")
    args = [_value(arg, depth + 1) for arg in node.args]
    if name == "round" and len(args) == 2 and (not isinstance(args[1], int) or abs(args[1]) > MAX_DIGITS):
        raise Refused(f"round()'s second argument is a whole number of digits up to {MAX_DIGITS}")
    if name in ("min", "max") and len(args) == 1:  # of one number, that number (Python's takes a list here)
        return args[0]
    return _checked(function(*args))


def _fits(op: ast.operator, left, right) -> None:
    """Refuses, before computing it, a whole-number result past MAX_DIGITS digits (a power or a product of big
    numbers); a float that overflows raises OverflowError on its own."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        if right * math.log10(abs(left)) > MAX_DIGITS:
            raise Refused(f"the power {_short(left)} ** {_short(right)} would have more than {MAX_DIGITS} digits")
    elif isinstance(op, ast.Mult) and _digits(left) + _digits(right) > MAX_DIGITS + 1:
        raise Refused(f"the product would have more than {MAX_DIGITS} digits")


def _checked(value):
    """A real, finite number within the bounds; a bool or a complex number (a fractional power of a negative
    number) is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused("the result is not a real number (a fractional power of a negative number?)")
    if isinstance(value, int) and _digits(value) > MAX_DIGITS:
        raise Refused(f"a number has more than {MAX_DIGITS} digits")
    if isinstance(value, float) and not math.isfinite(value):
        raise OverflowError("the number is too large")
    return value


def _digits(number: int) -> int:
    """How many decimal digits a whole number has, without writing it out: a large int's str() is slow."""
    return max(1, math.ceil(abs(number).bit_length() * math.log10(2)))


def _short(number) -> str:
    text = str(number)
    return text if len(text) <= 20 else f"{text[:8]}…({len(text)} digits)"


def _not_allowed(node: ast.AST) -> str:
    kind = type(node.op) if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node)
    if isinstance(node, ast.Name):
        raise Words(WORDS.format(word=node.id))
    if isinstance(node, ast.Constant):
        return f"{type(node.value).__name__} values are not numbers"
    hint = HINTS.get(kind)
    return f"{kind.__name__} is not arithmetic" + (f": {hint}" if hint else "")


def _math_error(problem: Exception) -> str:
    message = str(problem)
    if isinstance(problem, OverflowError) or "too large" in message:
        return "the result is too large to represent"
    return "the operation is undefined for its argument (a square root or log of a negative number or zero?)"


def written(value) -> str:
    """A number as people write it: whole numbers in full, others with at most SIGNIFICANT significant digits and
    no binary noise (0.1 + 0.2 is 0.3), with an exponent from 1e13 up and below 0.0001 (1.5e-7)."""
    if isinstance(value, int):
        return str(value)
    text = f"{value:.{SIGNIFICANT}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text
