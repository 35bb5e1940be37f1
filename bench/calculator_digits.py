"""How many significant digits tools/calculator.py writes a result with: the most that never show binary noise.

Random expressions of the kind arithmetic questions hold (two to five numbers with up to two decimals, joined by
+ - * /) are computed in floats, as the calculator does, and exactly, with fractions. For each number of
significant digits, a result is wrong when the float, written with that many digits, differs from the exact value
rounded to as many digits. Too many digits show the noise (0.30000000000000004); too few lose real digits.

    python bench/calculator_digits.py [--cases 20000] [--seed 1]
"""
import argparse
import random
import sys
from decimal import Decimal, localcontext
from fractions import Fraction

import repository  # noqa: F401  (importing it puts the repository's root on the import path)
from tools.calculator import calculate, evaluate


def expression(rng: random.Random) -> str:
    numbers = [f"{rng.randint(0, 9999) / 10 ** rng.choice((0, 1, 2)):g}" for _ in range(rng.randint(2, 5))]
    text = numbers[0]
    for number in numbers[1:]:
        text += f" {rng.choice('+-*/')} {number}"
    return text


def exact(text: str) -> Fraction | None:
    """The exact value of `text` (numbers and + - * / only), by the same precedence, in fractions."""
    tokens = text.split()
    terms, operators = [Fraction(tokens[0])], []
    for op, number in zip(tokens[1::2], tokens[2::2]):
        if op in "*/":
            if op == "/" and Fraction(number) == 0:
                return None
            terms[-1] = terms[-1] * Fraction(number) if op == "*" else terms[-1] / Fraction(number)
        else:
            operators.append(op)
            terms.append(Fraction(number))
    value = terms[0]
    for op, term in zip(operators, terms[1:]):
        value = value + term if op == "+" else value - term
    return value


def rounded(value: Fraction, digits: int) -> str:
    with localcontext() as context:
        context.prec = 60
        decimal = Decimal(value.numerator) / Decimal(value.denominator)
    return f"{float(Decimal(f'{decimal:.{digits}g}')):.{digits}g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cases = [(text, exact(text)) for text in (expression(rng) for _ in range(args.cases))]
    cases = [(text, value) for text, value in cases if value is not None and value != 0]
    floats = [(text, value, float(evaluate(text))) for text, value in cases]
    print(f"{len(floats):,} expressions (seed {args.seed})")
    print("| significant digits | results written wrong |")
    print("| ---: | ---: |")
    for digits in range(10, 18):
        wrong = sum(f"{result:.{digits}g}" != rounded(value, digits) for _, value, result in floats)
        print(f"| {digits} | {wrong:,} ({wrong / len(floats):.2%}) |")
    print(f"\ncalculate() writes {calculate('0.1 + 0.2')} for 0.1 + 0.2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
