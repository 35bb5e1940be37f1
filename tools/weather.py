"""The current temperature at a point on Earth, from the Open-Meteo forecast API (no key needed)."""
import os

from tools import web

OPEN_METEO_URL = "https://api.open-meteo.com/v1/forecast"
# Air temperatures measured at the surface have ranged from -89.2 °C (Vostok Station, 1983) to 56.7 °C (Death
# Valley, 1913), the extremes in the WMO's archive (https://wmo.asu.edu/). A reading outside -100..100 °C is a
# broken answer (a missing-data marker such as -999, an overflow), not weather. The tool asks for °C, Open-Meteo's
# default unit.
COLDEST, HOTTEST = -100, 100
LONGEST_UNIT = 10  # "°C"; a unit is a symbol, not a sentence
LONGEST_TIME = 25  # "2026-11-29T23:45", ISO 8601 with room for seconds and an offset


@web.call_deadline
def get_temperature(latitude: float, longitude: float) -> str:
    """Get the current air temperature (2 m above ground) at a latitude and longitude, in degrees Celsius.

    latitude: -90 to 90, north positive. longitude: -180 to 180, east positive.
    Returns the temperature with its unit and the local time of the reading.
    Example: get_temperature(48.8566, 2.3522) returns "11.4 °C at 2026-03-01T14:00 (latitude 48.86, longitude 2.35)".
    Use wikipedia_coordinates first if you only know a place's name.
    """
    if not -90 <= latitude <= 90 or not -180 <= longitude <= 180:
        return f"Error: latitude must be within -90..90 and longitude within -180..180, got {latitude}, {longitude}."
    import requests  # imported here so that `agent.py --help` stays fast

    url = os.environ.get("OPEN_METEO_URL") or OPEN_METEO_URL
    params = {"latitude": latitude, "longitude": longitude, "current": "temperature_2m", "timezone": "auto"}
    try:
        response = web.get(url, params=params)
    except requests.Timeout:
        return f"Error: Open-Meteo did not answer within {web.DEADLINE_SECONDS:g} seconds."
    except web.TooLarge as error:
        return f"Error: Open-Meteo's {error}."
    except requests.RequestException as error:
        return f"Error: could not reach Open-Meteo ({type(error).__name__})."
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status != 200:
        reason = body.get("reason") if isinstance(body, dict) else None
        return f"Error: Open-Meteo answered HTTP {response.status}" + (f": {web.cut(str(reason))}" if reason else ".")
    return _reading(body, latitude, longitude)


def _reading(body, latitude: float, longitude: float) -> str:
    """The temperature an answer holds, as the tool returns it; an `Error:` when the answer holds none, or holds
    one that cannot be true (not a number, NaN, 1e308 °C, a unit that is not a short text), saying what it was."""
    try:
        current, units = body["current"], body.get("current_units", {})
        temperature = current["temperature_2m"]
        unit = units.get("temperature_2m", "°C")
        when = current.get("time", "now")
    except (KeyError, TypeError, AttributeError):
        return "Error: Open-Meteo's answer had no current temperature."
    for what, value, problem in [("temperature", temperature, web.number_problem(temperature, COLDEST, HOTTEST)),
                                 ("temperature unit", unit, web.text_problem(unit, LONGEST_UNIT)),
                                 ("time", when, web.text_problem(when, LONGEST_TIME))]:
        if problem:
            return f"Error: Open-Meteo sent a {what} that {problem}: {web.shown(value)}."
    return f"{temperature:g} {unit} at {when} (latitude {latitude:.2f}, longitude {longitude:.2f})"
