"""Arithmetic tools: exact, instant, and a good first test of whether a model can follow the format."""
import math
import operator
import sys

TOO_LARGE = "Error: the result is too large to represent."


def add_numbers(x: float, y: float) -> float:
    """Add two numbers and return x + y.

    Example: add_numbers(2.5, 4) returns 6.5.
    """
    return _calculate(operator.add, x, y)


def subtract_numbers(x: float, y: float) -> float:
    """Subtract y from x and return x - y.

    Example: subtract_numbers(9, 3.5) returns 5.5.
    """
    return _calculate(operator.sub, x, y)


def multiply_numbers(x: float, y: float) -> float:
    """Multiply two numbers and return x * y.

    Example: multiply_numbers(3, 4) returns 12.
    """
    return _calculate(operator.mul, x, y)


def divide_numbers(x: float, y: float) -> float:
    """Divide x by y and return x / y. Dividing by zero returns an error message.

    Example: divide_numbers(9, 2) returns 4.5.
    """
    if y == 0:
        return "Error: cannot divide by zero."
    return _calculate(operator.truediv, x, y)


def _calculate(operation, x: float, y: float) -> float | int | str:
    """operation(x, y) as a readable number, or an error message when the result is too large to represent.

    Integers stay exact while a float could hold them; infinities and larger results become the message.
    """
    try:
        value = operation(x, y)
    except OverflowError:  # a huge integer mixed with a float, or divided: Python cannot make a float of it
        return TOO_LARGE
    if isinstance(value, int):
        return value if abs(value) <= sys.float_info.max else TOO_LARGE
    if not math.isfinite(value):
        return TOO_LARGE
    value = float(f"{value:.12g}")  # drop binary noise: 27.9, not 27.900000000000002
    return int(value) if value.is_integer() and abs(value) < 2**53 else value
