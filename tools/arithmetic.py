"""Arithmetic tools: exact, instant, and a good first test of whether a model can follow the format."""
import math


def add_numbers(x: float, y: float) -> float:
    """Add two numbers and return x + y.

    Example: add_numbers(2.5, 4) returns 6.5.
    """
    return _finite(x + y)


def subtract_numbers(x: float, y: float) -> float:
    """Subtract y from x and return x - y.

    Example: subtract_numbers(9, 3.5) returns 5.5.
    """
    return _finite(x - y)


def multiply_numbers(x: float, y: float) -> float:
    """Multiply two numbers and return x * y.

    Example: multiply_numbers(3, 4) returns 12.
    """
    return _finite(x * y)


def divide_numbers(x: float, y: float) -> float:
    """Divide x by y and return x / y. Dividing by zero returns an error message.

    Example: divide_numbers(9, 2) returns 4.5.
    """
    if y == 0:
        return "Error: cannot divide by zero."
    return _finite(x / y)


def _finite(value: float) -> float | int | str:
    """Refuse infinities, drop binary noise (27.9, not 27.900000000000002) and show whole results as integers."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return "Error: the result is too large to represent."
        value = float(f"{value:.12g}")
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
    return value
